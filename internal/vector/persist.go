package vector

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// The saved form, little-endian:
//
//	magic "SVVECIDX", version u32, dim u32, M u32, efConstruction u32,
//	nodes u32, entry u32, top u32,
//	per node: id i64, dead u8, level u8, dim × f32,
//	          per layer 0..level: count u16, count × u32 neighbours,
//	CRC-32C u32 of everything before it.
const (
	magic         = "SVVECIDX"
	formatVersion = 1
	maxM          = 1 << 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes the index, graph included, to w, so that Load can restore it
// without rebuilding. Searches may run meanwhile; Add and Delete wait. It
// returns w's error, if any.
func (x *Index) Save(w io.Writer) error {
	x.mu.RLock()
	defer x.mu.RUnlock()

	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	var buf []byte
	le := binary.LittleEndian
	buf = append(buf, magic...)
	for _, v := range []int{formatVersion, x.dim, x.m, x.efConstruction, len(x.ids), int(x.entry), x.top} {
		buf = le.AppendUint32(buf, uint32(v))
	}
	for n := range x.ids {
		if len(buf) > 1<<15 {
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		buf = le.AppendUint64(buf, uint64(x.ids[n]))
		dead := byte(0)
		if x.dead[n] {
			dead = 1
		}
		level := x.level(uint32(n))
		buf = append(buf, dead, byte(level))
		for _, f := range x.vector(uint32(n)) {
			buf = le.AppendUint32(buf, math.Float32bits(f))
		}
		for l := 0; l <= level; l++ {
			ls := x.links(uint32(n), l)
			buf = le.AppendUint16(buf, uint16(len(ls)))
			for _, nb := range ls {
				buf = le.AppendUint32(buf, nb)
			}
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(le.AppendUint32(nil, crc.Sum32()))
	return err
}

// Load replaces the contents of the index with an index written by Save. The
// graph's shape (M, EfConstruction) comes from the saved data; EfSearch and
// ExactBelow stay the receiver's. It returns an error wrapping ErrDimension
// if the saved vectors have another dimension, ErrFormat if the data is not
// a saved index or is corrupt, or r's error; the index is unchanged then.
func (x *Index) Load(r io.Reader) error {
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(r, 1<<16)
	tr := io.TeeReader(br, crc)
	le := binary.LittleEndian

	var head [8 + 7*4]byte
	if _, err := io.ReadFull(tr, head[:]); err != nil {
		return readErr(err)
	}
	if string(head[:8]) != magic {
		return fmt.Errorf("%w: not a saved vector index", ErrFormat)
	}
	u := func(i int) int { return int(le.Uint32(head[8+4*i:])) }
	version, dim, m, efc, nodes, entry, top := u(0), u(1), u(2), u(3), u(4), u(5), u(6)
	switch {
	case version != formatVersion:
		return fmt.Errorf("%w: unsupported version %d", ErrFormat, version)
	case dim != x.dim:
		return fmt.Errorf("%w: saved index has %d dimensions, this one %d", ErrDimension, dim, x.dim)
	case m < 2 || m > maxM || efc < 1 || top > maxLevel || nodes > math.MaxInt32:
		return fmt.Errorf("%w: bad header", ErrFormat)
	case nodes > 0 && entry >= nodes:
		return fmt.Errorf("%w: entry node out of range", ErrFormat)
	}

	g := newGraph(m, efc)
	// Grow as nodes arrive rather than trusting the header's count.
	rec := make([]byte, 8+2+4*dim)
	lb := make([]byte, 4*g.m0)
	var cnt [2]byte
	for n := 0; n < nodes; n++ {
		if _, err := io.ReadFull(tr, rec); err != nil {
			return readErr(err)
		}
		id := int64(le.Uint64(rec))
		dead, level := rec[8], int(rec[9])
		if dead > 1 || level > top {
			return fmt.Errorf("%w: node %d: bad flags", ErrFormat, n)
		}
		for i := 0; i < dim; i++ {
			f := math.Float32frombits(le.Uint32(rec[10+4*i:]))
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("%w: node %d: non-finite vector", ErrFormat, n)
			}
			g.vecs = append(g.vecs, f)
		}
		g.ids = append(g.ids, id)
		g.dead = append(g.dead, dead == 1)
		if dead == 1 {
			g.ndead++
		} else {
			if _, dup := g.byID[id]; dup {
				return fmt.Errorf("%w: id %d saved twice", ErrFormat, id)
			}
			g.byID[id] = uint32(n)
		}
		var up []uint32
		if level > 0 {
			up = make([]uint32, level*(m+1))
		}
		g.upper = append(g.upper, up)
		g.links0 = append(g.links0, make([]uint32, g.m0+1)...)
		for l := 0; l <= level; l++ {
			if _, err := io.ReadFull(tr, cnt[:]); err != nil {
				return readErr(err)
			}
			c := int(le.Uint16(cnt[:]))
			var sl []uint32
			if l == 0 {
				if c > g.m0 {
					return fmt.Errorf("%w: node %d: too many links", ErrFormat, n)
				}
				sl = g.links0[n*(g.m0+1):]
			} else {
				if c > m {
					return fmt.Errorf("%w: node %d: too many links", ErrFormat, n)
				}
				sl = up[(l-1)*(m+1):]
			}
			sl[0] = uint32(c)
			if _, err := io.ReadFull(tr, lb[:4*c]); err != nil {
				return readErr(err)
			}
			for i := range c {
				nb := le.Uint32(lb[4*i:])
				if int(nb) >= nodes || int(nb) == n {
					return fmt.Errorf("%w: node %d: bad link", ErrFormat, n)
				}
				sl[1+i] = nb
			}
		}
	}
	// Links may point forward, so their targets' levels are checked now.
	for n := range g.ids {
		for l := 1; l <= len(g.upper[n])/(m+1); l++ {
			s := g.upper[n][(l-1)*(m+1):]
			for _, nb := range s[1 : 1+s[0]] {
				if len(g.upper[nb])/(m+1) < l {
					return fmt.Errorf("%w: node %d: link above its target's level", ErrFormat, n)
				}
			}
		}
	}
	if nodes > 0 {
		if len(g.upper[entry])/(m+1) != top {
			return fmt.Errorf("%w: entry node is not on the top layer", ErrFormat)
		}
		g.entry, g.top = uint32(entry), top
	}
	sum := crc.Sum32()
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil {
		return readErr(err)
	}
	if le.Uint32(tail[:]) != sum {
		return fmt.Errorf("%w: checksum mismatch", ErrFormat)
	}

	x.mu.Lock()
	defer x.mu.Unlock()
	x.graph = g
	return nil
}

// readErr turns a premature end of data into ErrFormat.
func readErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: truncated", ErrFormat)
	}
	return err
}
