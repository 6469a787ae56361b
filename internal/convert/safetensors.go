package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// maxSafetensorsHeader bounds the JSON header we are willing to parse.
const maxSafetensorsHeader = 100 << 20

// stTensor is one tensor in a safetensors file.
type stTensor struct {
	name  string
	dtype string
	shape []uint64
	file  *stFile
	begin int64 // absolute file offsets
	end   int64
}

type stFile struct {
	path string
	f    *os.File
}

func (t *stTensor) numElements() uint64 {
	n := uint64(1)
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// dtypeSize is the element size of the safetensors dtypes we can convert;
// 0 for others (which may still be present in files, e.g. I64 position ids).
func dtypeSize(dtype string) int64 {
	switch dtype {
	case "F32":
		return 4
	case "F16", "BF16":
		return 2
	}
	return 0
}

// safetensors is a set of tensors from one or more .safetensors files.
type safetensors struct {
	files   []*stFile
	tensors map[string]*stTensor
}

func (s *safetensors) Close() {
	for _, f := range s.files {
		f.f.Close()
	}
}

// names returns the tensor names in sorted order.
func (s *safetensors) names() []string {
	out := make([]string, 0, len(s.tensors))
	for n := range s.tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// openModelSafetensors opens dir/model.safetensors, or the shards listed in
// dir/model.safetensors.index.json.
func openModelSafetensors(dir string) (*safetensors, error) {
	s := &safetensors{tensors: map[string]*stTensor{}}
	single := filepath.Join(dir, "model.safetensors")
	index := filepath.Join(dir, "model.safetensors.index.json")
	var paths []string
	if _, err := os.Stat(single); err == nil {
		paths = []string{single}
	} else if b, err := os.ReadFile(index); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("%s: %w", index, err)
		}
		seen := map[string]bool{}
		for _, shard := range idx.WeightMap {
			if !seen[shard] {
				seen[shard] = true
				paths = append(paths, filepath.Join(dir, filepath.Clean("/" + shard)[1:]))
			}
		}
		sort.Strings(paths)
	} else {
		hint := ""
		if _, err := os.Stat(filepath.Join(dir, "pytorch_model.bin")); err == nil {
			hint = " (pytorch_model.bin is not supported; provide safetensors weights)"
		}
		return nil, fmt.Errorf("%s: no model.safetensors or model.safetensors.index.json%s", dir, hint)
	}
	for _, p := range paths {
		if err := s.add(p); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *safetensors) add(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	sf := &stFile{path: path, f: f}
	s.files = append(s.files, sf)
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return fmt.Errorf("%s: not a safetensors file: too short", path)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen > maxSafetensorsHeader || int64(hlen) > size-8 {
		return fmt.Errorf("%s: not a safetensors file: header length %d is invalid for a %d-byte file", path, hlen, size)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return fmt.Errorf("%s: reading safetensors header: %w", path, err)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &entries); err != nil {
		return fmt.Errorf("%s: bad safetensors header: %w", path, err)
	}
	dataStart := 8 + int64(hlen)
	dataSize := size - dataStart
	for name, raw := range entries {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			Dtype       string   `json:"dtype"`
			Shape       []uint64 `json:"shape"`
			DataOffsets []int64  `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%s: bad safetensors entry for %q: %w", path, name, err)
		}
		if len(e.DataOffsets) != 2 || e.DataOffsets[0] < 0 || e.DataOffsets[0] > e.DataOffsets[1] || e.DataOffsets[1] > dataSize {
			return fmt.Errorf("%s: tensor %q has data offsets %v outside the %d-byte data section", path, name, e.DataOffsets, dataSize)
		}
		t := &stTensor{name: name, dtype: e.Dtype, shape: e.Shape, file: sf,
			begin: dataStart + e.DataOffsets[0], end: dataStart + e.DataOffsets[1]}
		if es := dtypeSize(e.Dtype); es != 0 {
			n := t.numElements()
			for _, d := range e.Shape {
				if d > math.MaxInt32 {
					return fmt.Errorf("%s: tensor %q has absurd shape %v", path, name, e.Shape)
				}
			}
			if n > math.MaxInt64/uint64(es) || int64(n)*es != t.end-t.begin {
				return fmt.Errorf("%s: tensor %q: %s shape %v needs %d bytes but has %d", path, name, e.Dtype, e.Shape, n*uint64(es), t.end-t.begin)
			}
		}
		if _, dup := s.tensors[name]; dup {
			return fmt.Errorf("%s: tensor %q appears in more than one shard", path, name)
		}
		s.tensors[name] = t
	}
	return nil
}

// writeAs streams the tensor to w encoded as typ (F32 or F16), converting
// from its F32, F16 or BF16 source data in bounded chunks.
func (t *stTensor) writeAs(w io.Writer, typ gguf.GGMLType) error {
	es := dtypeSize(t.dtype)
	if es == 0 {
		return fmt.Errorf("tensor %q has unsupported dtype %s (want F32, F16 or BF16)", t.name, t.dtype)
	}
	const chunk = 1 << 18 // elements
	raw := make([]byte, chunk*es)
	vals := make([]float32, chunk)
	for off := t.begin; off < t.end; {
		n := min(int64(len(raw)), t.end-off)
		b := raw[:n]
		if _, err := t.file.f.ReadAt(b, off); err != nil {
			return fmt.Errorf("%s: reading tensor %q: %w", t.file.path, t.name, err)
		}
		off += n
		v := vals[:n/es]
		for i := range v {
			switch t.dtype {
			case "F32":
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			case "F16":
				v[i] = gguf.Float16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
			case "BF16":
				v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
			}
		}
		if err := gguf.EncodeFloats(w, typ, v); err != nil {
			return err
		}
	}
	return nil
}
