package records

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The spool keeps the records the store could not take, on local disk,
// until it can: an outage of the database must not leave a silent hole in
// the request log. It is a directory of append-only segment files, each a
// header and a run of frames:
//
//	segment := magic (8 bytes: "SOVSPL" 0x00 0x01) frame*
//	frame   := length (uint32 LE) crc (uint32 LE) payload (length bytes)
//
// crc is CRC-32C (Castagnoli) over the length's four bytes and the
// payload, so a frame whose length was torn or flipped fails as surely as
// one whose payload was; payload is the record in JSON (Seq, PrevHash and
// Hash empty: the chain is made when the store takes it). A crash mid-
// write leaves a frame that is short or fails its CRC: opening the spool
// cuts the segment there, so a torn write is never read as a record.
//
// Appends are fsynced once per call (one writer batch), not per record.
// The spool is bounded in bytes (the files' sizes together); an append
// takes the records that fit, in order, and says how many.
//
// Records leave the spool from the front only after the store has taken
// them (Peek, then Advance): a segment whose records were all taken is
// deleted; a restart reads every segment from its start again, and the
// writer skips the records the store already holds (replay is idempotent).
//
// A Spool is used by one goroutine at a time (the writer's).
type Spool struct {
	dir     string
	limit   int64
	segSize int64
	lock    *os.File
	segs    []*segment // oldest first
	count   int        // records not yet taken
	bytes   int64      // the segments' sizes together
	w       *os.File   // the last segment, open for appends
	next    uint64     // the next segment's number
}

// segment is one file: its records from offset start on are not yet taken
// (left of them); those before start are (only the front segment's).
type segment struct {
	num   uint64
	path  string
	size  int64
	start int64
	left  int
}

// ErrSpoolFull is an append that found no room for a record.
var ErrSpoolFull = errors.New("the request log spool is full")

const (
	spoolMagic = "SOVSPL\x00\x01"
	frameHead  = 8
	// maxFrame bounds a frame's payload: a length beyond it is damage,
	// not a record (a record's captured texts are cut at 64 KiB each; its
	// other fields are bounded by the request's size).
	maxFrame   = 64 << 20
	segSuffix  = ".spool"
	lockName   = "lock"
	maxSegSize = 8 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// DefaultSpoolBytes bounds a spool opened with limit 0.
const DefaultSpoolBytes = 256 << 20

// OpenSpool opens (creating it if need be) the spool in dir, bounded to
// limit bytes (0: DefaultSpoolBytes). It takes an exclusive lock on the
// directory (two servers must not share a spool), and cuts any segment at
// its first frame that does not verify (a torn write); cut reports what
// it cut, for the log (one line per segment).
func OpenSpool(dir string, limit int64) (s *Spool, cut []string, err error) {
	if limit <= 0 {
		limit = DefaultSpoolBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("request log spool: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("request log spool: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("request log spool %s: another server holds it: %w", dir, err)
	}
	sp := &Spool{dir: dir, limit: limit, segSize: min(maxSegSize, max(limit/8, 4096)), lock: lock, next: 1}
	defer func() {
		if err != nil {
			sp.Close()
		}
	}()
	s = sp
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("request log spool: %w", err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		num, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		s.segs = append(s.segs, &segment{num: num, path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(s.segs, func(i, j int) bool { return s.segs[i].num < s.segs[j].num })
	kept := s.segs[:0]
	for _, seg := range s.segs {
		s.next = max(s.next, seg.num+1)
		msg, err := s.load(seg)
		if err != nil {
			return nil, nil, err
		}
		if msg != "" {
			cut = append(cut, msg)
		}
		if seg.left == 0 {
			// Nothing to replay in it (an empty or torn segment).
			if err := os.Remove(seg.path); err != nil {
				return nil, nil, fmt.Errorf("request log spool: %w", err)
			}
			continue
		}
		kept = append(kept, seg)
		s.count += seg.left
		s.bytes += seg.size
	}
	s.segs = kept
	return s, cut, nil
}

// load reads a segment, counts its records and cuts it at its first frame
// that does not verify (returning what it cut).
func (s *Spool) load(seg *segment) (string, error) {
	data, err := os.ReadFile(seg.path)
	if err != nil {
		return "", fmt.Errorf("request log spool: %w", err)
	}
	if len(data) < len(spoolMagic) {
		// Torn while it was being created: it holds nothing.
		seg.size = int64(len(data))
		return "", nil
	}
	if string(data[:len(spoolMagic)]) != spoolMagic {
		return "", fmt.Errorf("request log spool: %s is not a spool segment (remove it, or move the spool directory aside)", seg.path)
	}
	// A frame counts when it verifies and holds a record: what Peek will
	// read back.
	n, good := scanFrames(data[len(spoolMagic):], func(p []byte) bool {
		var r Record
		return json.Unmarshal(p, &r) == nil
	})
	seg.left, seg.start, seg.size = n, int64(len(spoolMagic)), int64(len(spoolMagic))+good
	if seg.size == int64(len(data)) {
		return "", nil
	}
	if err := os.Truncate(seg.path, seg.size); err != nil {
		return "", fmt.Errorf("request log spool: cutting %s: %w", seg.path, err)
	}
	return fmt.Sprintf("%s: %d bytes after offset %d do not verify (a write torn by a crash, or damage): cut", filepath.Base(seg.path), int64(len(data))-seg.size, seg.size), nil
}

// scanFrames walks the frames at the start of b, calling fn (when not
// nil) with each payload, and returns how many verified and the length of
// the prefix they fill: it stops at the first frame that is short, too
// long or fails its CRC, or when fn returns false.
func scanFrames(b []byte, fn func(payload []byte) bool) (n int, good int64) {
	for {
		payload, size, ok := readFrame(b[good:])
		if !ok || fn != nil && !fn(payload) {
			return n, good
		}
		n++
		good += int64(size)
	}
}

// readFrame decodes the frame at the start of b: its payload, its size,
// and whether it is whole and verifies.
func readFrame(b []byte) (payload []byte, size int, ok bool) {
	if len(b) < frameHead {
		return nil, 0, false
	}
	n := binary.LittleEndian.Uint32(b)
	if n > maxFrame || uint64(len(b)-frameHead) < uint64(n) {
		return nil, 0, false
	}
	sum := crc32.Update(crc32.Checksum(b[:4], castagnoli), castagnoli, b[frameHead:frameHead+int(n)])
	if sum != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	return b[frameHead : frameHead+int(n)], frameHead + int(n), true
}

// appendFrame appends payload's frame to b.
func appendFrame(b, payload []byte) []byte {
	var head [frameHead]byte
	binary.LittleEndian.PutUint32(head[:], uint32(len(payload)))
	sum := crc32.Update(crc32.Checksum(head[:4], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(head[4:], sum)
	return append(append(b, head[:]...), payload...)
}

// encodeSpooled is a record as the spool keeps it: without its place in
// the chain, which the store gives it.
func encodeSpooled(r Record) ([]byte, error) {
	r.Seq, r.PrevHash, r.Hash = 0, "", ""
	return json.Marshal(r)
}

// frontLeft is how many records of the front segment are not yet taken.
func (s *Spool) frontLeft() int {
	if len(s.segs) == 0 {
		return 0
	}
	return s.segs[0].left
}

// Len is how many records the spool holds (not yet taken by the store).
func (s *Spool) Len() int { return s.count }

// Bytes is the spool's size on disk.
func (s *Spool) Bytes() int64 { return s.bytes }

// Limit is the spool's bound in bytes.
func (s *Spool) Limit() int64 { return s.limit }

// Append adds records at the end of the spool and fsyncs it, and returns
// how many it took: those that fit, from the first (ErrSpoolFull for the
// rest), or none with the error that kept it from writing them.
func (s *Spool) Append(rs []Record) (int, error) {
	return s.append(rs, s.limit)
}

// AppendOver is Append past the bound by at most over bytes: for the one
// gap marker a closing writer could not store, which is small and must
// not be lost with the process.
func (s *Spool) AppendOver(rs []Record, over int64) (int, error) {
	return s.append(rs, s.limit+over)
}

func (s *Spool) append(rs []Record, limit int64) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	rotate := s.w == nil || s.segs[len(s.segs)-1].size >= s.segSize
	room := limit - s.bytes
	if rotate {
		room -= int64(len(spoolMagic))
	}
	var buf []byte
	n := 0
	var full error
	for _, r := range rs {
		p, err := encodeSpooled(r)
		if err != nil {
			return 0, fmt.Errorf("request log spool: %w", err)
		}
		if len(p) > maxFrame || int64(len(buf)+frameHead+len(p)) > room {
			full = ErrSpoolFull
			break
		}
		buf = appendFrame(buf, p)
		n++
	}
	if n == 0 {
		return 0, full
	}
	if rotate {
		if err := s.rotate(); err != nil {
			return 0, err
		}
	}
	seg := s.segs[len(s.segs)-1]
	if _, err := s.w.Write(buf); err != nil {
		// A write cut short (a full disk): take none of it back in.
		s.w.Truncate(seg.size)
		return 0, fmt.Errorf("request log spool: %w", err)
	}
	if err := s.w.Sync(); err != nil {
		s.w.Truncate(seg.size)
		return 0, fmt.Errorf("request log spool: fsync: %w", err)
	}
	seg.size += int64(len(buf))
	seg.left += n
	s.bytes += int64(len(buf))
	s.count += n
	return n, full
}

// rotate starts a new segment for appends (its header fsynced, and the
// directory, so that the file survives a crash).
func (s *Spool) rotate() error {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	seg := &segment{num: s.next, path: filepath.Join(s.dir, fmt.Sprintf("%020d%s", s.next, segSuffix))}
	f, err := os.OpenFile(seg.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("request log spool: %w", err)
	}
	if _, err := f.Write([]byte(spoolMagic)); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		f.Close()
		os.Remove(seg.path)
		return fmt.Errorf("request log spool: %w", err)
	}
	s.next++
	seg.size, seg.start = int64(len(spoolMagic)), int64(len(spoolMagic))
	s.segs = append(s.segs, seg)
	s.bytes += seg.size
	s.w = f
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Peek returns up to n records from the front of the spool, in the order
// they were appended, without taking them (Advance does, once the store
// holds them). A frame that no longer verifies (the disk changed it since
// it was written) ends its segment: the segment's records from it on are
// dropped (the file cut there), and Peek says how many.
func (s *Spool) Peek(n int) (rs []Record, dropped int, err error) {
	for _, seg := range s.segs {
		if len(rs) >= n {
			break
		}
		if seg.left == 0 {
			continue
		}
		got, off, bad, err := readSegment(seg, n-len(rs))
		if err != nil {
			return rs, dropped, err
		}
		rs = append(rs, got...)
		if !bad {
			continue
		}
		lost := seg.left - len(got)
		dropped += lost
		seg.left -= lost
		s.count -= lost
		s.bytes -= seg.size - off
		seg.size = off
		if err := os.Truncate(seg.path, off); err != nil {
			return rs, dropped, fmt.Errorf("request log spool: cutting %s: %w", seg.path, err)
		}
	}
	return rs, dropped, nil
}

// readSegment reads up to n records of seg from its start, and returns
// the offset after the last, and whether a frame there does not verify.
func readSegment(seg *segment, n int) (rs []Record, off int64, bad bool, err error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return nil, seg.start, false, fmt.Errorf("request log spool: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.NewSectionReader(f, seg.start, seg.size-seg.start), 64<<10)
	off = seg.start
	for len(rs) < n && len(rs) < seg.left {
		var head [frameHead]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return rs, off, true, nil
		}
		size := binary.LittleEndian.Uint32(head[:])
		if size > maxFrame || int64(size) > seg.size-off-frameHead {
			return rs, off, true, nil
		}
		frame := make([]byte, frameHead+int(size))
		copy(frame, head[:])
		if _, err := io.ReadFull(r, frame[frameHead:]); err != nil {
			return rs, off, true, nil
		}
		payload, _, ok := readFrame(frame)
		var rec Record
		if !ok || json.Unmarshal(payload, &rec) != nil {
			return rs, off, true, nil
		}
		rs = append(rs, rec)
		off += int64(len(frame))
	}
	return rs, off, false, nil
}

// Advance takes n records from the front of the spool (the store holds
// them): a segment whose records are all taken is deleted, and so, once
// nothing is left, is every file.
func (s *Spool) Advance(n int) error {
	for len(s.segs) > 0 {
		seg := s.segs[0]
		if n < seg.left {
			off, err := skipFrames(seg, n)
			if err != nil {
				return err
			}
			seg.start, seg.left, s.count = off, seg.left-n, s.count-n
			return nil
		}
		n -= seg.left
		s.count -= seg.left
		if s.w != nil && len(s.segs) == 1 {
			s.w.Close()
			s.w = nil
		}
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("request log spool: %w", err)
		}
		s.bytes -= seg.size
		s.segs = s.segs[1:]
	}
	return nil
}

// skipFrames returns the offset n frames after seg's start.
func skipFrames(seg *segment, n int) (int64, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return seg.start, fmt.Errorf("request log spool: %w", err)
	}
	defer f.Close()
	off := seg.start
	var head [frameHead]byte
	for range n {
		if _, err := f.ReadAt(head[:], off); err != nil {
			return seg.start, fmt.Errorf("request log spool: %w", err)
		}
		off += frameHead + int64(binary.LittleEndian.Uint32(head[:]))
	}
	return off, nil
}

// Close closes the spool's files and releases its lock (what it holds
// stays on disk for the next start).
func (s *Spool) Close() error {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
	return nil
}
