package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// sample builds a writer exercising every metadata type and a few tensors.
func sample(t testing.TB) *Writer {
	t.Helper()
	w := NewWriter()
	w.SetString("general.architecture", "llama")
	w.SetUint32("llama.context_length", 4096)
	w.SetUint32("general.file_type", 15)
	w.SetString("tokenizer.chat_template", "{{ messages }}")
	w.SetInt32("i32", -7)
	w.SetFloat32("f32", 1.5)
	w.SetBool("b", true)
	w.SetUint64("u64", 1<<40)
	w.SetStrings("tokenizer.ggml.tokens", []string{"a", "", "▁héllo"})
	w.SetInt32s("i32s", []int32{1, -2, 3})
	w.SetFloat32s("f32s", []float32{0.5, -0.25})
	for k, v := range map[string]any{
		"u8": uint8(200), "i8": int8(-3), "u16": uint16(65000), "i16": int16(-300),
		"i64": int64(-1 << 50), "f64": math.Pi, "u8s": []uint8{1, 2}, "bools": []bool{true, false},
		"u64s": []uint64{9}, "i64s": []int64{-9}, "f64s": []float64{2.5}, "u16s": []uint16{7},
		"i16s": []int16{-7}, "u32s": []uint32{8}, "i8s": []int8{-1}, "empty": []string{},
	} {
		if err := w.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddTensorF32("a.weight", []uint64{3}, []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensorF16("b.weight", []uint64{2, 3}, []float32{1, -2, 0.5, 65504, 1e-8, -0}); err != nil {
		t.Fatal(err)
	}
	q := make([]byte, 18*2) // two Q4_0 blocks
	for i := range q {
		q[i] = byte(i)
	}
	if err := w.AddTensorBytes("c.weight", TypeQ4_0, []uint64{32, 2}, q); err != nil {
		t.Fatal(err)
	}
	return w
}

func encode(t testing.TB, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	data := encode(t, sample(t))
	f, err := Read(bytes.NewReader(data), int64(len(data)), "mem.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if f.Arch() != "llama" || f.ContextLength() != 4096 || f.ChatTemplate() != "{{ messages }}" || f.FileType() != "Q4_K_M" {
		t.Errorf("accessors: %q %d %q %q", f.Arch(), f.ContextLength(), f.ChatTemplate(), f.FileType())
	}
	if got, want := f.ParameterCount(), uint64(3+6+64); got != want {
		t.Errorf("ParameterCount = %d, want %d", got, want)
	}
	if s, ok := f.Strings("tokenizer.ggml.tokens"); !ok || !reflect.DeepEqual(s, []string{"a", "", "▁héllo"}) {
		t.Errorf("Strings = %q %v", s, ok)
	}
	if _, ok := f.Strings("i32s"); ok {
		t.Error("Strings accepted an int32 array")
	}
	if v, ok := f.Uint("i32"); ok {
		t.Errorf("Uint accepted negative int32: %d", v)
	}
	if v, ok := f.Uint("u16"); !ok || v != 65000 {
		t.Errorf("Uint(u16) = %d %v", v, ok)
	}
	if v, ok := f.Float("f64"); !ok || v != math.Pi {
		t.Errorf("Float(f64) = %v %v", v, ok)
	}
	if v, ok := f.Bool("b"); !ok || !v {
		t.Errorf("Bool = %v %v", v, ok)
	}
	want := map[string]any{
		"i32": int32(-7), "f32": float32(1.5), "u64": uint64(1 << 40), "u8": uint8(200), "i8": int8(-3),
		"i16": int16(-300), "i64": int64(-1 << 50), "i32s": []int32{1, -2, 3}, "f32s": []float32{0.5, -0.25},
		"u8s": []uint8{1, 2}, "bools": []bool{true, false}, "u64s": []uint64{9}, "i64s": []int64{-9},
		"f64s": []float64{2.5}, "u16s": []uint16{7}, "i16s": []int16{-7}, "u32s": []uint32{8}, "i8s": []int8{-1},
		"empty": []string{}, "general.alignment": uint32(32),
	}
	for k, v := range want {
		kv, ok := f.Get(k)
		if !ok || !reflect.DeepEqual(kv.Value, v) {
			t.Errorf("%s = %#v, want %#v", k, kv.Value, v)
		}
	}
	if kv, _ := f.Get("f32s"); kv.Type != TypeArray || kv.ElemType != TypeFloat32 {
		t.Errorf("f32s type %s/%s", kv.Type, kv.ElemType)
	}
	// Metadata order is preserved.
	if f.KV[0].Key != "general.architecture" {
		t.Errorf("first key %q", f.KV[0].Key)
	}

	if len(f.Tensors) != 3 {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	b, _ := f.Tensor("b.weight")
	if b.Type != TypeF16 || !reflect.DeepEqual(b.Dims, []uint64{2, 3}) || b.Size() != 12 || b.Offset%32 != 0 {
		t.Errorf("b.weight info %+v", b)
	}
	raw, err := f.TensorData("b.weight")
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	for i := 0; i < len(raw); i += 2 {
		got = append(got, Float16ToFloat32(binary.LittleEndian.Uint16(raw[i:])))
	}
	if !reflect.DeepEqual(got[:4], []float32{1, -2, 0.5, 65504}) || got[4] != 0 || !math.Signbit(float64(got[5])) && got[5] != 0 {
		t.Errorf("b.weight data %v", got)
	}
	raw, _ = f.TensorData("a.weight")
	if math.Float32frombits(binary.LittleEndian.Uint32(raw[8:])) != 3 {
		t.Errorf("a.weight data % x", raw)
	}
	raw, _ = f.TensorData("c.weight")
	if len(raw) != 36 || raw[35] != 35 {
		t.Errorf("c.weight data % x", raw)
	}
	if _, err := f.TensorData("nope"); err == nil {
		t.Error("TensorData of missing tensor succeeded")
	}
}

func TestOpenAndWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := sample(t).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := f.TensorData("a.weight")
	if err != nil || len(raw) != 12 {
		t.Fatalf("TensorData: %v %d", err, len(raw))
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open missing: %v", err)
	}
}

func TestEveryTruncationFails(t *testing.T) {
	data := encode(t, sample(t))
	f, err := Read(bytes.NewReader(data), int64(len(data)), "x")
	if err != nil {
		t.Fatal(err)
	}
	// The last tensor's padding is not needed; anything shorter must fail.
	last := f.Tensors[len(f.Tensors)-1]
	end := int(f.DataOffset) + int(last.Offset+last.Size())
	for n := 0; n < end; n++ {
		_, err := Read(bytes.NewReader(data[:n]), int64(n), "/x/cut.gguf")
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("prefix %d: error %v is not a *FormatError", n, err)
		}
		if !strings.HasPrefix(err.Error(), "gguf: /x/cut.gguf: ") {
			t.Fatalf("prefix %d: error %q does not name the file", n, err)
		}
		if n >= 4 && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("prefix %d: unexpected kind: %v", n, err)
		}
	}
	if _, err := Read(bytes.NewReader(data[:end]), int64(end), "x"); err != nil {
		t.Errorf("file without trailing padding rejected: %v", err)
	}
	_, err = Read(bytes.NewReader(data[:end-1]), int64(end-1), "/x/model.gguf")
	want := `gguf: /x/model.gguf: truncated: tensor "c.weight" data ends at byte ` + strconv.Itoa(end) + ` but file has ` + strconv.Itoa(end-1) + ` bytes`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// raw builds GGUF bytes by hand for malformed-input tests.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }

func header(nt, nkv uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(3).u64(nt).u64(nkv)
}

func TestMalformed(t *testing.T) {
	tensor := func(r *raw, name string, typ uint32, off uint64, dims ...uint64) *raw {
		r.str(name).u32(uint32(len(dims)))
		for _, d := range dims {
			r.u64(d)
		}
		return r.u32(typ).u64(off)
	}
	padded := func(r *raw, n int) []byte {
		for r.Len()%32 != 0 {
			r.WriteByte(0)
		}
		r.Write(make([]byte, n))
		return r.Bytes()
	}
	cases := []struct {
		name string
		data []byte
		kind error
		msg  string
	}{
		{"empty", nil, ErrNotGGUF, "not a GGUF file (bad magic"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), ErrNotGGUF, `not a GGUF file (bad magic "GGML")`},
		{"v1", append([]byte("GGUF"), 1, 0, 0, 0), ErrInvalid, "version 1"},
		{"no version", []byte("GGUF"), ErrTruncated, "version ends at byte 8 but file has 4 bytes"},
		{"big endian", append([]byte("GGUF"), 0, 0, 0, 3), ErrInvalid, "big-endian"},
		{"future version", append([]byte("GGUF"), 9, 0, 0, 0), ErrInvalid, "unsupported GGUF version 9"},
		{"huge kv count", header(0, 1<<60).Bytes(), ErrInvalid, "metadata count"},
		{"huge tensor count", header(1<<60, 0).Bytes(), ErrInvalid, "tensor count"},
		{"huge string", header(0, 1).u64(1 << 62).u64(0).Bytes(), ErrTruncated, "metadata key #0"},
		{"huge array", header(0, 1).str("k").u32(9).u32(uint32(TypeUint32)).u64(1 << 61).Bytes(), ErrTruncated, `"k" has 2305843009213693952 elements`},
		{"huge string array", header(0, 1).str("k").u32(9).u32(uint32(TypeString)).u64(1 << 61).Bytes(), ErrTruncated, "strings"},
		{"nested array", header(0, 1).str("k").u32(9).u32(9).u64(1).Bytes(), ErrInvalid, "nested array"},
		{"bad value type", header(0, 1).str("k").u32(13).u64(0).Bytes(), ErrInvalid, `"k" has invalid type type(13)`},
		{"duplicate key", header(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2).Bytes(), ErrInvalid, `duplicate metadata key "k"`},
		{"alignment type", header(0, 1).str("general.alignment").u32(10).u64(32).Bytes(), ErrInvalid, "general.alignment has type uint64"},
		{"alignment pow2", header(0, 1).str("general.alignment").u32(4).u32(24).Bytes(), ErrInvalid, "not a power of two"},
		{"unknown type", padded(tensor(header(1, 0), "t", 4, 0, 4), 64), ErrInvalid, `tensor "t" has unknown ggml type 4`},
		{"too many dims", padded(tensor(header(1, 0), "t", 0, 0, 1, 1, 1, 1, 1), 64), ErrInvalid, "5 dimensions"},
		{"negative dim", padded(tensor(header(1, 0), "t", 0, 0, 1<<63), 64), ErrInvalid, "negative or too large"},
		{"overflow", padded(tensor(header(1, 0), "t", 0, 0, 1<<32, 1<<32), 64), ErrInvalid, "too many elements"},
		{"block", padded(tensor(header(1, 0), "t", 2, 0, 33), 64), ErrInvalid, "not a multiple of the block size 32"},
		{"misplaced", padded(tensor(header(1, 0), "t", 0, 32, 4), 64), ErrInvalid, `tensor "t" has data offset 32, expected 0`},
		{"duplicate tensor", padded(tensor(tensor(header(2, 0), "t", 0, 0, 4), "t", 0, 32, 4), 64), ErrInvalid, `duplicate tensor name "t"`},
		{"long name", padded(tensor(header(1, 0), strings.Repeat("n", 64), 0, 0, 4), 64), ErrInvalid, "name is 64 bytes long"},
		{"data past end", padded(tensor(header(1, 0), "blk.3.ffn_up.weight", 0, 0, 100), 16), ErrTruncated, `truncated: tensor "blk.3.ffn_up.weight" data ends at byte`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data), int64(len(c.data)), "/m/bad.gguf")
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("error %q is not %v", err, c.kind)
			}
			if !strings.HasPrefix(err.Error(), "gguf: /m/bad.gguf: ") || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not name the file and contain %q", err, c.msg)
			}
		})
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	if err := w.Set("k", 3); err == nil {
		t.Error("Set accepted int")
	}
	if err := w.Set("", "x"); err == nil {
		t.Error("Set accepted empty key")
	}
	if err := w.Set("general.alignment", uint32(24)); err == nil {
		t.Error("Set accepted alignment 24")
	}
	if err := w.AddTensorF32("t", []uint64{2}, []float32{1}); err == nil {
		t.Error("AddTensorF32 accepted wrong length")
	}
	if err := w.AddTensorF32("t", []uint64{1}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensorF32("t", []uint64{1}, []float32{1}); err == nil {
		t.Error("duplicate tensor accepted")
	}
	if err := w.AddTensorF32("z", []uint64{0}, nil); err == nil {
		t.Error("zero dim accepted")
	}
	if err := w.AddTensorBytes("q", TypeQ4_0, []uint64{16}, make([]byte, 9)); err == nil {
		t.Error("Q4_0 row of 16 accepted")
	}
	if err := w.AddTensor("u", GGMLType(4), []uint64{1}, nil); err == nil {
		t.Error("unknown type accepted")
	}
	if err := w.AddTensor("short", TypeF32, []uint64{4}, func(w io.Writer) error {
		_, err := w.Write(make([]byte, 15))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), `"short": wrote 15 bytes, want 16`) {
		t.Errorf("short tensor: %v", err)
	}
	w2 := NewWriter()
	w2.SetString("", "x")
	if _, err := w2.WriteTo(io.Discard); err == nil {
		t.Error("empty key from typed setter not reported")
	}
	// A failed WriteFile leaves nothing behind.
	dir := t.TempDir()
	if err := w.WriteFile(filepath.Join(dir, "x.gguf")); err == nil {
		t.Error("WriteFile succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestCustomAlignment(t *testing.T) {
	w := NewWriter()
	if err := w.Set("general.alignment", uint32(64)); err != nil {
		t.Fatal(err)
	}
	w.AddTensorF32("a", []uint64{3}, []float32{1, 2, 3})
	w.AddTensorF32("b", []uint64{1}, []float32{4})
	data := encode(t, w)
	f, err := Read(bytes.NewReader(data), int64(len(data)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != 64 {
		t.Errorf("alignment %d data %d offset %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
}

func TestFileTypeName(t *testing.T) {
	for v, want := range map[uint64]string{0: "F32", 1: "F16", 2: "Q4_0", 7: "Q8_0", 15: "Q4_K_M", 17: "Q5_K_M", 18: "Q6_K", 32: "BF16", 5: "unknown(5)"} {
		if got := FileTypeName(v); got != want {
			t.Errorf("FileTypeName(%d) = %q, want %q", v, got, want)
		}
	}
	data := encode(t, NewWriter())
	f, err := Read(bytes.NewReader(data), int64(len(data)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if f.FileType() != "unknown" || f.Arch() != "" || f.ContextLength() != 0 {
		t.Errorf("empty file accessors: %q %q %d", f.FileType(), f.Arch(), f.ContextLength())
	}
}

func TestFloat16Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := Float16ToFloat32(uint16(h))
		if f != f { // NaN
			if back := Float32ToFloat16(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, back)
			}
			continue
		}
		if back := Float32ToFloat16(f); back != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, back)
		}
	}
}

func TestFloat16Rounding(t *testing.T) {
	cases := map[float32]uint16{
		1:                             0x3c00,
		1 + 1.0/2048:                  0x3c00, // tie, round to even (down)
		1 + 3.0/2048:                  0x3c02, // tie, round to even (up)
		65504:                         0x7bff,
		65519:                         0x7bff,
		65520:                         0x7c00, // tie at the top rounds to Inf
		float32(math.Inf(-1)):         0xfc00,
		0x1p-24:                       0x0001,
		0x1p-25:                       0x0000, // tie with zero rounds to even (zero)
		0x1.000002p-25:                0x0001,
		0x1.8p-24:                     0x0002, // tie between 1 and 2 subnormal ulps -> even
		0x1p-14 - 0x1p-25:             0x0400, // carries into the smallest normal
		-0x1p-30:                      0x8000,
		float32(math.Copysign(0, -1)): 0x8000,
	}
	for f, want := range cases {
		if got := Float32ToFloat16(f); got != want {
			t.Errorf("Float32ToFloat16(%g) = %#04x, want %#04x", f, got, want)
		}
	}
	// Random values: the result must be the nearest half (ties to even).
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		f := math.Float32frombits(rng.Uint32())
		if f != f || math.Abs(float64(f)) >= 65520 {
			continue
		}
		h := Float32ToFloat16(f)
		got := float64(Float16ToFloat32(h))
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 || (h&0x7fff == 0 && nb == h-1) {
				continue
			}
			alt := float64(Float16ToFloat32(nb))
			dg, da := math.Abs(got-float64(f)), math.Abs(alt-float64(f))
			if da < dg || (da == dg && h&1 == 1) {
				t.Fatalf("%g -> %#04x (%g), but %#04x (%g) is nearer or even", f, h, got, nb, alt)
			}
		}
	}
}

type failingReaderAt struct {
	data []byte
	err  error
}

func (r failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.data)) {
		return 0, r.err
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, r.err
	}
	return n, nil
}

func TestReaderShortOrFailing(t *testing.T) {
	data := encode(t, sample(t))
	half := data[:len(data)/4]
	// The reader holds fewer bytes than claimed: a truncation error.
	_, err := Read(failingReaderAt{half, io.EOF}, int64(len(data)), "short")
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("short reader: %v", err)
	}
	// An I/O error is passed through, wrapped with the file name.
	boom := errors.New("disk on fire")
	_, err = Read(failingReaderAt{half, boom}, int64(len(data)), "/d/f.gguf")
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "/d/f.gguf") {
		t.Errorf("failing reader: %v", err)
	}
}
