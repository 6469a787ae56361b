package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Writer builds a GGUF v3 file: metadata key/value pairs followed by tensor
// infos and tensor data, each tensor padded to general.alignment (default
// 32, written explicitly). Metadata is written in the order keys were first
// set; tensors in the order they were added. The zero value is not usable;
// call NewWriter.
type Writer struct {
	kv      []KV
	kvIndex map[string]int
	tensors []pendingTensor
	names   map[string]bool
	err     error // first error from a typed setter
}

type pendingTensor struct {
	info  TensorInfo
	write func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{kvIndex: map[string]int{}, names: map[string]bool{}}
}

// Set records a metadata value, replacing any earlier value for key. value
// must be one of uint8, int8, uint16, int16, uint32, int32, float32, bool,
// string, uint64, int64, float64 or a slice of one of them. It returns an
// error for an empty key or an unsupported Go type.
func (w *Writer) Set(key string, value any) error {
	if key == "" {
		return errors.New("gguf: empty metadata key")
	}
	kv := KV{Key: key, Value: value}
	switch value.(type) {
	case uint8:
		kv.Type = TypeUint8
	case int8:
		kv.Type = TypeInt8
	case uint16:
		kv.Type = TypeUint16
	case int16:
		kv.Type = TypeInt16
	case uint32:
		kv.Type = TypeUint32
	case int32:
		kv.Type = TypeInt32
	case float32:
		kv.Type = TypeFloat32
	case bool:
		kv.Type = TypeBool
	case string:
		kv.Type = TypeString
	case uint64:
		kv.Type = TypeUint64
	case int64:
		kv.Type = TypeInt64
	case float64:
		kv.Type = TypeFloat64
	case []uint8:
		kv.Type, kv.ElemType = TypeArray, TypeUint8
	case []int8:
		kv.Type, kv.ElemType = TypeArray, TypeInt8
	case []uint16:
		kv.Type, kv.ElemType = TypeArray, TypeUint16
	case []int16:
		kv.Type, kv.ElemType = TypeArray, TypeInt16
	case []uint32:
		kv.Type, kv.ElemType = TypeArray, TypeUint32
	case []int32:
		kv.Type, kv.ElemType = TypeArray, TypeInt32
	case []float32:
		kv.Type, kv.ElemType = TypeArray, TypeFloat32
	case []bool:
		kv.Type, kv.ElemType = TypeArray, TypeBool
	case []string:
		kv.Type, kv.ElemType = TypeArray, TypeString
	case []uint64:
		kv.Type, kv.ElemType = TypeArray, TypeUint64
	case []int64:
		kv.Type, kv.ElemType = TypeArray, TypeInt64
	case []float64:
		kv.Type, kv.ElemType = TypeArray, TypeFloat64
	default:
		return fmt.Errorf("gguf: metadata key %q: unsupported value type %T", key, value)
	}
	if key == "general.alignment" {
		a, ok := value.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: general.alignment must be a uint32 power of two, got %T %v", value, value)
		}
	}
	if i, ok := w.kvIndex[key]; ok {
		w.kv[i] = kv
		return nil
	}
	w.kvIndex[key] = len(w.kv)
	w.kv = append(w.kv, kv)
	return nil
}

// The typed setters below never fail immediately; an empty key (or an
// invalid general.alignment) is remembered and reported by WriteTo.

// SetString records a string value.
func (w *Writer) SetString(key, v string) { w.setTyped(key, v) }

// SetUint32 records a uint32 value.
func (w *Writer) SetUint32(key string, v uint32) { w.setTyped(key, v) }

// SetInt32 records an int32 value.
func (w *Writer) SetInt32(key string, v int32) { w.setTyped(key, v) }

// SetFloat32 records a float32 value.
func (w *Writer) SetFloat32(key string, v float32) { w.setTyped(key, v) }

// SetBool records a bool value.
func (w *Writer) SetBool(key string, v bool) { w.setTyped(key, v) }

// SetUint64 records a uint64 value.
func (w *Writer) SetUint64(key string, v uint64) { w.setTyped(key, v) }

// SetStrings records an array of strings.
func (w *Writer) SetStrings(key string, v []string) { w.setTyped(key, v) }

// SetInt32s records an array of int32.
func (w *Writer) SetInt32s(key string, v []int32) { w.setTyped(key, v) }

// SetFloat32s records an array of float32.
func (w *Writer) SetFloat32s(key string, v []float32) { w.setTyped(key, v) }

func (w *Writer) setTyped(key string, v any) {
	if err := w.Set(key, v); err != nil && w.err == nil {
		// Only an empty key or a bad general.alignment gets here; remember
		// it so WriteTo fails instead of silently dropping the value.
		w.err = err
	}
}

// AddTensor adds a tensor whose data size in bytes is known and whose bytes
// are produced later, when the file is written, by calling write exactly
// once; write must write exactly the tensor's size in bytes (see
// TensorInfo.Size), or writing fails. dims are in ggml order (dims[0] is the
// row length, i.e. the fastest-varying dimension; a PyTorch [out, in] matrix
// has dims {in, out}). It returns an error for an empty, too long or
// duplicate name, 1 to 4 dims that are not all positive, an unknown type or
// a row length that is not a multiple of the type's block size.
func (w *Writer) AddTensor(name string, typ GGMLType, dims []uint64, write func(io.Writer) error) error {
	switch {
	case name == "":
		return errors.New("gguf: empty tensor name")
	case len(name) >= MaxTensorNameLen:
		return fmt.Errorf("gguf: tensor name %q is longer than %d bytes", name, MaxTensorNameLen-1)
	case w.names[name]:
		return fmt.Errorf("gguf: duplicate tensor %q", name)
	case len(dims) == 0 || len(dims) > maxDims:
		return fmt.Errorf("gguf: tensor %q has %d dimensions, want 1 to %d", name, len(dims), maxDims)
	case !typ.Known():
		return fmt.Errorf("gguf: tensor %q has unknown type %s", name, typ)
	case dims[0]%typ.BlockSize() != 0:
		return fmt.Errorf("gguf: tensor %q row length %d is not a multiple of the %s block size %d", name, dims[0], typ, typ.BlockSize())
	}
	total := uint64(1)
	for _, d := range dims {
		if d == 0 || total > math.MaxInt64/d {
			return fmt.Errorf("gguf: tensor %q has invalid shape %v", name, dims)
		}
		total *= d
	}
	w.names[name] = true
	w.tensors = append(w.tensors, pendingTensor{
		info:  TensorInfo{Name: name, Dims: append([]uint64(nil), dims...), Type: typ},
		write: write,
	})
	return nil
}

// AddTensorBytes adds a tensor with raw data already encoded as typ. It
// fails like AddTensor, and if len(data) does not match the shape.
func (w *Writer) AddTensorBytes(name string, typ GGMLType, dims []uint64, data []byte) error {
	if want := (TensorInfo{Dims: dims, Type: typ}).Size(); typ.Known() && uint64(len(data)) != want {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d for %s %v", name, len(data), want, typ, dims)
	}
	return w.AddTensor(name, typ, dims, func(out io.Writer) error {
		_, err := out.Write(data)
		return err
	})
}

// AddTensorF32 adds a float32 tensor. It fails like AddTensor, and if
// len(data) is not the product of dims.
func (w *Writer) AddTensorF32(name string, dims []uint64, data []float32) error {
	return w.addFloats(name, TypeF32, dims, data)
}

// AddTensorF16 adds a tensor stored as float16, converting data with
// round-to-nearest-even. It fails like AddTensorF32.
func (w *Writer) AddTensorF16(name string, dims []uint64, data []float32) error {
	return w.addFloats(name, TypeF16, dims, data)
}

func (w *Writer) addFloats(name string, typ GGMLType, dims []uint64, data []float32) error {
	if n := (TensorInfo{Dims: dims}).NumElements(); uint64(len(data)) != n {
		return fmt.Errorf("gguf: tensor %q: %d values, want %d for shape %v", name, len(data), n, dims)
	}
	return w.AddTensor(name, typ, dims, func(out io.Writer) error {
		return EncodeFloats(out, typ, data)
	})
}

// EncodeFloats writes data to out as little-endian F32 or F16 (rounded to
// nearest even). It fails for any other type or when out fails.
func EncodeFloats(out io.Writer, typ GGMLType, data []float32) error {
	var buf [8192]byte
	for len(data) > 0 {
		var n int
		switch typ {
		case TypeF32:
			for n = 0; n < len(data) && 4*n+4 <= len(buf); n++ {
				binary.LittleEndian.PutUint32(buf[4*n:], math.Float32bits(data[n]))
			}
			n, data = 4*n, data[n:]
		case TypeF16:
			for n = 0; n < len(data) && 2*n+2 <= len(buf); n++ {
				binary.LittleEndian.PutUint16(buf[2*n:], Float32ToFloat16(data[n]))
			}
			n, data = 2*n, data[n:]
		default:
			return fmt.Errorf("gguf: cannot encode floats as %s", typ)
		}
		if _, err := out.Write(buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteTo writes the complete GGUF file to out and returns the number of
// bytes written. It fails if a typed setter was given an empty key or bad
// alignment, if a tensor's write function fails or writes the wrong number
// of bytes, or if out fails.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	kvs := w.kv
	align := uint64(DefaultAlignment)
	if i, ok := w.kvIndex["general.alignment"]; ok {
		align = uint64(w.kv[i].Value.(uint32))
	} else {
		kvs = append(kvs[:len(kvs):len(kvs)], KV{Key: "general.alignment", Type: TypeUint32, Value: uint32(DefaultAlignment)})
	}

	bw := bufio.NewWriterSize(out, 1<<20)
	cw := &countingWriter{w: bw}
	e := &encoder{w: cw}
	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Type))
		if kv.Type == TypeArray {
			e.u32(uint32(kv.ElemType))
		}
		e.value(kv.Value)
	}
	var offset uint64
	for _, t := range w.tensors {
		e.str(t.info.Name)
		e.u32(uint32(len(t.info.Dims)))
		for _, d := range t.info.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.info.Type))
		e.u64(offset)
		offset += padTo(t.info.Size(), align)
	}
	e.pad(align)
	if e.err != nil {
		return cw.n, e.err
	}
	for _, t := range w.tensors {
		start := cw.n
		if err := t.write(cw); err != nil {
			return cw.n, fmt.Errorf("gguf: writing tensor %q: %w", t.info.Name, err)
		}
		if got, want := uint64(cw.n-start), t.info.Size(); got != want {
			return cw.n, fmt.Errorf("gguf: tensor %q: wrote %d bytes, want %d", t.info.Name, got, want)
		}
		e.pad(align)
		if e.err != nil {
			return cw.n, e.err
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// WriteFile writes the GGUF file to path atomically: it writes a temporary
// file in the same directory and renames it into place. It fails like
// WriteTo or if the file cannot be created, synced or renamed.
func (w *Writer) WriteFile(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = w.WriteTo(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

func padTo(n, align uint64) uint64 { return n + (align-n%align)%align }

type encoder struct {
	w   *countingWriter
	err error
	buf [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.bytes([]byte(s))
}

func (e *encoder) pad(align uint64) {
	var zeros [256]byte
	n := (align - uint64(e.w.n)%align) % align
	for n > 0 {
		c := min(n, uint64(len(zeros)))
		e.bytes(zeros[:c])
		n -= c
	}
}

func (e *encoder) scalar(v any) {
	switch v := v.(type) {
	case uint8:
		e.bytes([]byte{v})
	case int8:
		e.bytes([]byte{byte(v)})
	case bool:
		if v {
			e.bytes([]byte{1})
		} else {
			e.bytes([]byte{0})
		}
	case uint16:
		binary.LittleEndian.PutUint16(e.buf[:2], v)
		e.bytes(e.buf[:2])
	case int16:
		binary.LittleEndian.PutUint16(e.buf[:2], uint16(v))
		e.bytes(e.buf[:2])
	case uint32:
		e.u32(v)
	case int32:
		e.u32(uint32(v))
	case float32:
		e.u32(math.Float32bits(v))
	case uint64:
		e.u64(v)
	case int64:
		e.u64(uint64(v))
	case float64:
		e.u64(math.Float64bits(v))
	case string:
		e.str(v)
	}
}

func (e *encoder) value(v any) {
	switch v := v.(type) {
	case []uint8:
		encodeSlice(e, v)
	case []int8:
		encodeSlice(e, v)
	case []uint16:
		encodeSlice(e, v)
	case []int16:
		encodeSlice(e, v)
	case []uint32:
		encodeSlice(e, v)
	case []int32:
		encodeSlice(e, v)
	case []float32:
		encodeSlice(e, v)
	case []bool:
		encodeSlice(e, v)
	case []string:
		encodeSlice(e, v)
	case []uint64:
		encodeSlice(e, v)
	case []int64:
		encodeSlice(e, v)
	case []float64:
		encodeSlice(e, v)
	default:
		e.scalar(v)
	}
}

func encodeSlice[T any](e *encoder, s []T) {
	e.u64(uint64(len(s)))
	for _, x := range s {
		e.scalar(x)
	}
}
