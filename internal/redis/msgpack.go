package redis

import (
	"encoding/binary"
	"errors"
	"math"
)

// The batch script's numbers travel as MessagePack (batchScript says why):
// the little of it they need, written here rather than taken from a
// library because the point is to build and read them without allocating —
// appended to a pooled buffer, read into a pooled slice.

// openArray appends the header of an array whose length closeArray sets
// once it is known, so that the elements can be appended as they are made:
// an array 32 header, whatever the length (a reader takes every width).
func openArray(b []byte) []byte { return append(b, 0xdd, 0, 0, 0, 0) }

// closeArray sets to n the length of the array openArray began at b[at].
func closeArray(b []byte, at, n int) { binary.BigEndian.PutUint32(b[at+1:], uint32(n)) }

// appendInt appends v: a positive fixint when it fits, else an int 64.
func appendInt(b []byte, v int64) []byte {
	if v >= 0 && v < 128 {
		return append(b, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

// appendFloat appends f as a float 64.
func appendFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

var errMsgpack = errors.New("redis: batch answer is not a MessagePack array of numbers")

// readNumbers reads a MessagePack array of numbers — what Redis's cmsgpack
// makes of a Lua array: integers of any width, floats as float 32 or 64 —
// appending them to dst. A float is truncated toward zero, as Redis does
// when it turns a Lua number into an integer reply. Anything else, or
// bytes left over, is an error.
func readNumbers(s string, dst []int64) ([]int64, error) {
	n, s, err := arrayLen(s)
	if err != nil {
		return dst, err
	}
	for range n {
		var v int64
		if v, s, err = number(s); err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	if s != "" {
		return dst, errMsgpack
	}
	return dst, nil
}

// arrayLen reads an array header (an empty map too: cmsgpack's encoding of
// an empty table).
func arrayLen(s string) (int, string, error) {
	if s == "" {
		return 0, s, errMsgpack
	}
	switch c := s[0]; {
	case c&0xf0 == 0x90:
		return int(c & 0x0f), s[1:], nil
	case c == 0x80:
		return 0, s[1:], nil
	case c == 0xdc || c == 0xdd:
		size := 2
		if c == 0xdd {
			size = 4
		}
		if n, rest, ok := bigEndian(s[1:], size); ok {
			return int(n), rest, nil
		}
	}
	return 0, s, errMsgpack
}

// bigEndian reads a size-byte big-endian unsigned integer from the head
// of s.
func bigEndian(s string, size int) (uint64, string, bool) {
	if len(s) < size {
		return 0, s, false
	}
	var u uint64
	for i := range size {
		u = u<<8 | uint64(s[i])
	}
	return u, s[size:], true
}

// number reads one integer or float.
func number(s string) (int64, string, error) {
	if s == "" {
		return 0, s, errMsgpack
	}
	c := s[0]
	switch {
	case c <= 0x7f:
		return int64(c), s[1:], nil
	case c >= 0xe0:
		return int64(int8(c)), s[1:], nil
	}
	var size int
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2, 0xca:
		size = 4
	case 0xcf, 0xd3, 0xcb:
		size = 8
	}
	u, rest, ok := bigEndian(s[1:], size)
	if size == 0 || !ok {
		return 0, s, errMsgpack
	}
	switch c {
	case 0xcc, 0xcd, 0xce:
		return int64(u), rest, nil
	case 0xcf:
		if u > math.MaxInt64 {
			return 0, s, errMsgpack
		}
		return int64(u), rest, nil
	case 0xd0:
		return int64(int8(u)), rest, nil
	case 0xd1:
		return int64(int16(u)), rest, nil
	case 0xd2:
		return int64(int32(u)), rest, nil
	case 0xd3:
		return int64(u), rest, nil
	case 0xca:
		return truncate(float64(math.Float32frombits(uint32(u))), s, rest)
	default: // 0xcb
		return truncate(math.Float64frombits(u), s, rest)
	}
}

// truncate turns f into an integer toward zero; NaN and values out of
// range are errors.
func truncate(f float64, s, rest string) (int64, string, error) {
	if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, s, errMsgpack
	}
	return int64(f), rest, nil
}
