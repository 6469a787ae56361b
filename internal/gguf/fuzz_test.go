package gguf

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRead checks that Read never panics, reports only *FormatError for bad
// input, and that anything it accepts is self-consistent.
func FuzzRead(f *testing.F) {
	f.Add(encode(f, sample(f)))
	f.Add(encode(f, NewWriter()))
	f.Add(header(1, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(64).
		str("t").u32(2).u64(32).u64(2).u32(uint32(TypeQ8_0)).u64(0).Bytes())
	f.Add([]byte("GGUF\x02\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz.gguf")
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is %T, not *FormatError: %v", err, err)
			}
			return
		}
		if file.DataOffset%int64(file.Alignment) != 0 {
			t.Fatalf("data offset %d not aligned to %d", file.DataOffset, file.Alignment)
		}
		for _, ti := range file.Tensors {
			end := uint64(file.DataOffset) + ti.Offset + ti.Size()
			if end > uint64(len(data)) {
				t.Fatalf("tensor %q ends at %d past %d", ti.Name, end, len(data))
			}
			if _, err := file.TensorData(ti.Name); err != nil {
				t.Fatalf("TensorData(%q): %v", ti.Name, err)
			}
		}
		_ = file.ParameterCount()
		_ = file.FileType()
		_ = file.ContextLength()
	})
}
