package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
)

// Magic is the 4-byte signature at the start of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment used when general.alignment is absent.
const DefaultAlignment = 32

// MaxTensorNameLen is ggml's GGML_MAX_NAME: tensor names must be shorter.
const MaxTensorNameLen = 64

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// Sentinel errors wrapped by every *FormatError; test with errors.Is.
var (
	// ErrNotGGUF means the file does not start with the GGUF magic.
	ErrNotGGUF = errors.New("not a GGUF file")
	// ErrTruncated means the file ends before the header or tensor data does.
	ErrTruncated = errors.New("truncated")
	// ErrInvalid means the file is structurally corrupt or unsupported.
	ErrInvalid = errors.New("invalid GGUF")
)

// FormatError describes why a GGUF file could not be read. Its message names
// the file, e.g. `gguf: /x/model.gguf: truncated: tensor "blk.3.ffn_up.weight"
// data ends at byte 123456 but file has 100000 bytes`.
type FormatError struct {
	Path string // the name given to Open or Read
	Kind error  // ErrNotGGUF, ErrTruncated or ErrInvalid
	Msg  string // what is wrong
}

// Error implements error.
func (e *FormatError) Error() string { return "gguf: " + e.Path + ": " + e.Msg }

// Unwrap returns the sentinel kind so errors.Is works.
func (e *FormatError) Unwrap() error { return e.Kind }

// KV is one metadata key/value pair. Value holds the Go equivalent of the
// GGUF type: uint8, int8, uint16, int16, uint32, int32, float32, bool,
// string, uint64, int64 or float64; for Type == TypeArray it holds a slice of
// the element type ([]uint8 ... []string) and ElemType names that type.
type KV struct {
	Key      string    // e.g. "general.architecture"
	Type     ValueType // the value's GGUF type
	ElemType ValueType // element type when Type == TypeArray
	Value    any       // the decoded value, see above
}

// TensorInfo describes one tensor in a GGUF file.
type TensorInfo struct {
	Name string // e.g. "blk.0.attn_q.weight"
	// Dims are in ggml order: Dims[0] is the fastest-varying (row length).
	Dims []uint64
	Type GGMLType // element type, e.g. TypeQ4_K
	// Offset is relative to the start of the data section (File.DataOffset).
	Offset uint64
}

// NumElements returns the product of the tensor's dimensions.
func (t TensorInfo) NumElements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Size returns the tensor's data size in bytes (0 for an unknown type).
func (t TensorInfo) Size() uint64 {
	bs := t.Type.BlockSize()
	if bs == 0 {
		return 0
	}
	return t.NumElements() / bs * t.Type.TypeSize()
}

// File is a parsed GGUF header: metadata and tensor directory.
type File struct {
	Path       string       // name given to Open or Read, used in errors
	Version    uint32       // GGUF version, 2 or 3
	KV         []KV         // metadata in file order
	Tensors    []TensorInfo // tensor directory in file order
	Alignment  uint64       // general.alignment or DefaultAlignment
	DataOffset int64        // absolute offset of the tensor data section
	Size       int64        // total file size in bytes

	index map[string]int
	src   io.ReaderAt // nil when opened by path
}

// Open reads and validates the GGUF header of the file at path. The file is
// closed before Open returns; TensorData reopens it when needed. Errors are
// *FormatError (wrapping ErrNotGGUF, ErrTruncated or ErrInvalid) or the
// *os.PathError from opening/reading the file.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &FormatError{path, ErrInvalid, "not a regular file"}
	}
	gf, err := Read(f, st.Size(), path)
	if err != nil {
		return nil, err
	}
	gf.src = nil
	return gf, nil
}

// Read parses and validates a GGUF header from r, which holds size bytes;
// name is used in error messages. It checks the magic, the version (2 or 3),
// that counts and lengths fit in the file, that every tensor has a known
// type, a sane shape and an aligned, contiguous data range that lies inside
// the file. Errors are *FormatError or I/O errors from r.
func Read(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{
		br:   bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10),
		size: size,
		name: name,
	}
	f, err := d.decode()
	if err != nil {
		return nil, err
	}
	f.src = r
	return f, nil
}

type decoder struct {
	br   *bufio.Reader
	pos  int64
	size int64
	name string
	buf  [8]byte
}

func (d *decoder) errf(kind error, format string, args ...any) error {
	return &FormatError{Path: d.name, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) remaining() int64 { return d.size - d.pos }

// need fails with a truncation error unless n more bytes are available.
func (d *decoder) need(n uint64, what string) error {
	if d.remaining() < 0 || n > uint64(d.remaining()) {
		end := "more than 2^63"
		if n <= math.MaxInt64-uint64(d.pos) {
			end = strconv.FormatInt(d.pos+int64(n), 10)
		}
		return d.errf(ErrTruncated, "truncated: %s ends at byte %s but file has %d bytes", what, end, d.size)
	}
	return nil
}

func (d *decoder) read(p []byte, what string) error {
	if err := d.need(uint64(len(p)), what); err != nil {
		return err
	}
	n, err := io.ReadFull(d.br, p)
	d.pos += int64(n)
	if err != nil {
		return d.ioErr(err, what)
	}
	return nil
}

// ioErr reports a failed read: a short read as truncation (the reader held
// fewer bytes than its declared size), anything else as an I/O error.
func (d *decoder) ioErr(err error, what string) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return d.errf(ErrTruncated, "truncated: %s: unexpected end of data at byte %d", what, d.pos)
	}
	return fmt.Errorf("gguf: %s: reading %s: %w", d.name, what, err)
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.read(d.buf[:4], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(d.buf[:4]), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.read(d.buf[:8], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d.buf[:8]), nil
}

func (d *decoder) str(what string) (string, error) {
	return d.strLazy(func() string { return what })
}

// strLazy reads a string, building its description only on error, which
// matters for vocabularies of hundreds of thousands of tokens.
func (d *decoder) strLazy(what func() string) (string, error) {
	if d.remaining() < 8 {
		return "", d.need(8, what()+" length")
	}
	n8, err := io.ReadFull(d.br, d.buf[:8])
	d.pos += int64(n8)
	if err != nil {
		return "", d.ioErr(err, what()+" length")
	}
	n := binary.LittleEndian.Uint64(d.buf[:8])
	if d.remaining() < 0 || n > uint64(d.remaining()) {
		return "", d.need(n, what())
	}
	b := make([]byte, n)
	nb, err := io.ReadFull(d.br, b)
	d.pos += int64(nb)
	if err != nil {
		return "", d.ioErr(err, what())
	}
	return string(b), nil
}

func (d *decoder) decode() (*File, error) {
	var magic [4]byte
	if d.size < 4 {
		return nil, d.errf(ErrNotGGUF, "not a GGUF file (bad magic: file has only %d bytes)", d.size)
	}
	if err := d.read(magic[:], "magic"); err != nil {
		return nil, err
	}
	if string(magic[:]) != Magic {
		return nil, d.errf(ErrNotGGUF, "not a GGUF file (bad magic %q)", magic[:])
	}
	f := &File{Path: d.name, Size: d.size, index: map[string]int{}}
	var err error
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	switch {
	case f.Version == 1:
		return nil, d.errf(ErrInvalid, "GGUF version 1 is no longer supported")
	case f.Version == 2 || f.Version == 3:
	case f.Version&0xffff == 0 && bits.ReverseBytes32(f.Version) <= 3:
		return nil, d.errf(ErrInvalid, "big-endian GGUF files are not supported (version field %#x)", f.Version)
	default:
		return nil, d.errf(ErrInvalid, "unsupported GGUF version %d (want 2 or 3)", f.Version)
	}
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// Each KV needs at least a key length, a type and one value byte; each
	// tensor info at least a name length, n_dims, type and offset.
	const minKV, minTensor = 8 + 4 + 1, 8 + 4 + 4 + 8
	if nKV > uint64(d.remaining())/minKV {
		return nil, d.errf(ErrInvalid, "metadata count %d is impossible for a file of %d bytes", nKV, d.size)
	}
	if nTensors > uint64(d.remaining())/minTensor {
		return nil, d.errf(ErrInvalid, "tensor count %d is impossible for a file of %d bytes", nTensors, d.size)
	}

	f.KV = make([]KV, 0, min(nKV, 256))
	for i := uint64(0); i < nKV; i++ {
		kv, err := d.kv(i)
		if err != nil {
			return nil, err
		}
		if j, dup := f.index[kv.Key]; dup {
			return nil, d.errf(ErrInvalid, "duplicate metadata key %q (entries %d and %d)", kv.Key, j, i)
		}
		f.index[kv.Key] = len(f.KV)
		f.KV = append(f.KV, kv)
	}

	f.Alignment = DefaultAlignment
	if i, ok := f.index["general.alignment"]; ok {
		a, ok := f.KV[i].Value.(uint32)
		if !ok {
			return nil, d.errf(ErrInvalid, "general.alignment has type %s, want uint32", f.KV[i].Type)
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, d.errf(ErrInvalid, "general.alignment %d is not a power of two", a)
		}
		f.Alignment = uint64(a)
	}

	f.Tensors = make([]TensorInfo, 0, min(nTensors, 1024))
	names := make(map[string]int, min(nTensors, 1024))
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if j, dup := names[t.Name]; dup {
			return nil, d.errf(ErrInvalid, "duplicate tensor name %q (tensors %d and %d)", t.Name, j, i)
		}
		names[t.Name] = int(i)
		f.Tensors = append(f.Tensors, t)
	}

	// The data section starts at the next multiple of the alignment.
	pad := (f.Alignment - uint64(d.pos)%f.Alignment) % f.Alignment
	f.DataOffset = d.pos + int64(pad)

	// Like llama.cpp, require tensors to be stored contiguously in order,
	// each padded to the alignment, and entirely within the file.
	var expect uint64
	for _, t := range f.Tensors {
		if t.Offset != expect {
			return nil, d.errf(ErrInvalid, "tensor %q has data offset %d, expected %d (tensors must be contiguous and %d-byte aligned)", t.Name, t.Offset, expect, f.Alignment)
		}
		sz := t.Size()
		start := uint64(f.DataOffset) + t.Offset
		if start < t.Offset || sz > math.MaxInt64-start {
			return nil, d.errf(ErrInvalid, "tensor %q data range overflows", t.Name)
		}
		if end := start + sz; end > uint64(d.size) {
			return nil, d.errf(ErrTruncated, "truncated: tensor %q data ends at byte %d but file has %d bytes", t.Name, end, d.size)
		}
		padded := sz + (f.Alignment-sz%f.Alignment)%f.Alignment
		expect += padded
	}
	return f, nil
}

func (d *decoder) kv(i uint64) (KV, error) {
	key, err := d.str(fmt.Sprintf("metadata key #%d", i))
	if err != nil {
		return KV{}, err
	}
	what := fmt.Sprintf("value of metadata key %q", key)
	t, err := d.u32(what + " type")
	if err != nil {
		return KV{}, err
	}
	kv := KV{Key: key, Type: ValueType(t)}
	if kv.Type == TypeArray {
		et, err := d.u32(what + " array element type")
		if err != nil {
			return KV{}, err
		}
		kv.ElemType = ValueType(et)
		n, err := d.u64(what + " array length")
		if err != nil {
			return KV{}, err
		}
		kv.Value, err = d.array(kv.ElemType, n, what)
		if err != nil {
			return KV{}, err
		}
		return kv, nil
	}
	kv.Value, err = d.scalar(kv.Type, what)
	return kv, err
}

func (d *decoder) scalar(t ValueType, what string) (any, error) {
	if t == TypeString {
		return d.str(what)
	}
	n := t.fixedSize()
	if n == 0 {
		return nil, d.errf(ErrInvalid, "%s has invalid type %s", what, t)
	}
	if err := d.read(d.buf[:n], what); err != nil {
		return nil, err
	}
	return decodeScalar(t, d.buf[:n]), nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeBool:
		return b[0] != 0
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	panic("gguf: decodeScalar: bad type")
}

// arrayChunk bounds how many elements are decoded per allocation step, so a
// lying length cannot make the reader allocate much more than the file holds.
const arrayChunk = 1 << 16

func (d *decoder) array(et ValueType, n uint64, what string) (any, error) {
	if et == TypeArray {
		return nil, d.errf(ErrInvalid, "%s is a nested array, which is not supported", what)
	}
	if et == TypeString {
		if n > uint64(d.remaining())/8 {
			return nil, d.errf(ErrTruncated, "truncated: %s has %d strings but only %d bytes remain", what, n, d.remaining())
		}
		out := make([]string, 0, min(n, arrayChunk))
		for i := uint64(0); i < n; i++ {
			s, err := d.strLazy(func() string { return fmt.Sprintf("%s[%d]", what, i) })
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	sz := et.fixedSize()
	if sz == 0 {
		return nil, d.errf(ErrInvalid, "%s is an array of invalid type %s", what, et)
	}
	if n > uint64(d.remaining())/uint64(sz) {
		return nil, d.errf(ErrTruncated, "truncated: %s has %d elements of %d bytes but only %d bytes remain", what, n, sz, d.remaining())
	}
	switch et {
	case TypeUint8:
		return readArray(d, n, sz, what, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		return readArray(d, n, sz, what, func(b []byte) int8 { return int8(b[0]) })
	case TypeBool:
		return readArray(d, n, sz, what, func(b []byte) bool { return b[0] != 0 })
	case TypeUint16:
		return readArray(d, n, sz, what, binary.LittleEndian.Uint16)
	case TypeInt16:
		return readArray(d, n, sz, what, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case TypeUint32:
		return readArray(d, n, sz, what, binary.LittleEndian.Uint32)
	case TypeInt32:
		return readArray(d, n, sz, what, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case TypeFloat32:
		return readArray(d, n, sz, what, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case TypeUint64:
		return readArray(d, n, sz, what, binary.LittleEndian.Uint64)
	case TypeInt64:
		return readArray(d, n, sz, what, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	default: // TypeFloat64
		return readArray(d, n, sz, what, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	}
}

func readArray[T any](d *decoder, n uint64, sz int, what string, conv func([]byte) T) ([]T, error) {
	out := make([]T, 0, min(n, arrayChunk))
	buf := make([]byte, min(n, arrayChunk)*uint64(sz))
	for n > 0 {
		c := min(n, arrayChunk)
		b := buf[:c*uint64(sz)]
		if err := d.read(b, what); err != nil {
			return nil, err
		}
		for i := 0; i < len(b); i += sz {
			out = append(out, conv(b[i:i+sz]))
		}
		n -= c
	}
	return out, nil
}

func (d *decoder) tensorInfo(i uint64) (TensorInfo, error) {
	var t TensorInfo
	var err error
	if t.Name, err = d.str(fmt.Sprintf("tensor #%d name", i)); err != nil {
		return t, err
	}
	if len(t.Name) >= MaxTensorNameLen {
		return t, d.errf(ErrInvalid, "tensor #%d name is %d bytes long, the limit is %d", i, len(t.Name), MaxTensorNameLen-1)
	}
	what := fmt.Sprintf("tensor %q info", t.Name)
	nd, err := d.u32(what)
	if err != nil {
		return t, err
	}
	if nd > maxDims {
		return t, d.errf(ErrInvalid, "tensor %q has %d dimensions, at most %d allowed", t.Name, nd, maxDims)
	}
	t.Dims = make([]uint64, nd)
	total := uint64(1)
	for j := range t.Dims {
		if t.Dims[j], err = d.u64(what); err != nil {
			return t, err
		}
		if t.Dims[j] > math.MaxInt64 {
			return t, d.errf(ErrInvalid, "tensor %q dimension %d is negative or too large (%d)", t.Name, j, int64(t.Dims[j]))
		}
		hi, lo := bits.Mul64(total, t.Dims[j])
		if hi != 0 || lo >= math.MaxInt64 {
			return t, d.errf(ErrInvalid, "tensor %q shape %v has too many elements", t.Name, t.Dims[:j+1])
		}
		total = lo
	}
	typ, err := d.u32(what)
	if err != nil {
		return t, err
	}
	t.Type = GGMLType(typ)
	if !t.Type.Known() {
		return t, d.errf(ErrInvalid, "tensor %q has unknown ggml type %d", t.Name, typ)
	}
	row := uint64(1)
	if len(t.Dims) > 0 {
		row = t.Dims[0]
	}
	if bs := t.Type.BlockSize(); row%bs != 0 {
		return t, d.errf(ErrInvalid, "tensor %q of type %s has %d elements per row, not a multiple of the block size %d", t.Name, t.Type, row, bs)
	}
	if hi, _ := bits.Mul64(total/t.Type.BlockSize(), t.Type.TypeSize()); hi != 0 {
		return t, d.errf(ErrInvalid, "tensor %q byte size overflows", t.Name)
	}
	if t.Offset, err = d.u64(what); err != nil {
		return t, err
	}
	return t, nil
}

// Get returns the metadata entry for key.
func (f *File) Get(key string) (KV, bool) {
	i, ok := f.index[key]
	if !ok {
		return KV{}, false
	}
	return f.KV[i], true
}

// String returns the string value of key; ok is false if the key is absent
// or not a string.
func (f *File) String(key string) (string, bool) {
	kv, _ := f.Get(key)
	s, ok := kv.Value.(string)
	return s, ok
}

// Uint returns the value of key as a uint64 when it is an unsigned integer,
// or a signed integer that is not negative; ok is false otherwise.
func (f *File) Uint(key string) (uint64, bool) {
	kv, _ := f.Get(key)
	switch v := kv.Value.(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8:
		return uint64(v), v >= 0
	case int16:
		return uint64(v), v >= 0
	case int32:
		return uint64(v), v >= 0
	case int64:
		return uint64(v), v >= 0
	}
	return 0, false
}

// Float returns the value of key as a float64 when it is a float32 or
// float64; ok is false otherwise.
func (f *File) Float(key string) (float64, bool) {
	kv, _ := f.Get(key)
	switch v := kv.Value.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// Bool returns the boolean value of key; ok is false if the key is absent or
// not a bool.
func (f *File) Bool(key string) (value, ok bool) {
	kv, _ := f.Get(key)
	value, ok = kv.Value.(bool)
	return value, ok
}

// Strings returns the string-array value of key; ok is false if the key is
// absent or not an array of strings.
func (f *File) Strings(key string) ([]string, bool) {
	kv, _ := f.Get(key)
	s, ok := kv.Value.([]string)
	return s, ok
}

// Arch returns general.architecture, e.g. "llama", or "" if absent.
func (f *File) Arch() string {
	s, _ := f.String("general.architecture")
	return s
}

// ContextLength returns <arch>.context_length, or 0 if absent.
func (f *File) ContextLength() uint64 {
	n, _ := f.Uint(f.Arch() + ".context_length")
	return n
}

// ChatTemplate returns tokenizer.chat_template, or "" if absent.
func (f *File) ChatTemplate() string {
	s, _ := f.String("tokenizer.chat_template")
	return s
}

// FileType returns the quantization name for general.file_type, such as
// "Q4_K_M", "F16" or "unknown(N)" for a value it does not know. If the key
// is absent it returns "unknown".
func (f *File) FileType() string {
	n, ok := f.Uint("general.file_type")
	if !ok {
		return "unknown"
	}
	return FileTypeName(n)
}

// ParameterCount returns the total number of elements over all tensors.
func (f *File) ParameterCount() uint64 {
	var n uint64
	for _, t := range f.Tensors {
		n += t.NumElements()
	}
	return n
}

// Tensor returns the info for the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// TensorData reads the raw bytes of the named tensor. It fails if no such
// tensor exists or the data cannot be read; a File from Open reopens its path.
func (f *File) TensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: %s: no tensor named %q", f.Path, name)
	}
	src := f.src
	if src == nil {
		fh, err := os.Open(f.Path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		src = fh
	}
	b := make([]byte, t.Size())
	if _, err := src.ReadAt(b, f.DataOffset+int64(t.Offset)); err != nil {
		return nil, fmt.Errorf("gguf: %s: reading tensor %q: %w", f.Path, name, err)
	}
	return b, nil
}
