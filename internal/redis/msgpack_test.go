package redis

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
)

// TestMessagePackWithRedis holds the encoder and the reader to what
// Redis's own cmsgpack reads and writes: numbers sent to a script come
// back unchanged, and every width cmsgpack answers in reads as Redis
// would turn the Lua number into an integer (floats toward zero).
func TestMessagePackWithRedis(t *testing.T) {
	ctx := context.Background()
	opt, err := goredis.ParseURL(limitstest.RequireRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()

	// Sent as we send a batch's numbers, echoed by a script.
	sent := []int64{0, 1, 127, 128, 255, 256, -1, -32, -33, 65535, 65536, 1 << 31, -(1 << 31) - 1, 1e12, -1e12, 1 << 52}
	b := openArray(nil)
	for _, v := range sent {
		b = appendInt(b, v)
	}
	b = appendFloat(b, 60)
	closeArray(b, 0, len(sent)+1)
	out, err := rdb.Eval(ctx, `return cmsgpack.pack(cmsgpack.unpack(ARGV[1]))`, nil, b).Text()
	if err != nil {
		t.Fatal(err)
	}
	got, err := readNumbers(out, nil)
	if err != nil {
		t.Fatalf("reading %x: %v", out, err)
	}
	want := append(append([]int64(nil), sent...), 60)
	if len(got) != len(want) {
		t.Fatalf("echo: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("echo %d: got %d, want %d", i, got[i], want[i])
		}
	}

	// Floats as a script computes them (the GCRA's remaining counts and
	// times), and what Redis would answer for each as an integer reply.
	exprs := []string{"99999999.5", "-0.25", "2.5", "-2.5", "1e6/3", "-1e9/7", "123456789012.75", "2^40+0.5"}
	src := "return cmsgpack.pack({"
	ints := "return {"
	for i, e := range exprs {
		if i > 0 {
			src += ", "
			ints += ", "
		}
		src += e
		ints += e
	}
	out, err = rdb.Eval(ctx, src+"})", nil).Text()
	if err != nil {
		t.Fatal(err)
	}
	got, err = readNumbers(out, nil)
	if err != nil {
		t.Fatalf("reading %x: %v", out, err)
	}
	redisInts, err := rdb.Eval(ctx, ints+"}", nil).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range exprs {
		if got[i] != redisInts[i] {
			t.Errorf("%s: read %d, Redis's integer reply is %d", exprs[i], got[i], redisInts[i])
		}
	}

	// An empty table.
	out, err = rdb.Eval(ctx, `return cmsgpack.pack({})`, nil).Text()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readNumbers(out, nil); err != nil || len(got) != 0 {
		t.Errorf("empty table %x: got %v, %v", out, got, err)
	}
}

// TestReadNumbersRefuses: what is not an array of numbers, or is cut
// short, or runs on, is an error.
func TestReadNumbersRefuses(t *testing.T) {
	for _, s := range []string{
		"",                 // nothing
		"\x01",             // a number, not an array
		"\x92\x01",         // one element short
		"\x91\x01\x02",     // bytes left over
		"\x91\xa1x",        // a string
		"\x91\xc0",         // nil
		"\x91\xd3\x00\x00", // a cut int 64
		"\x91\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", // NaN
		"\x91\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00", // +Inf
		"\x91\xcf\xff\xff\xff\xff\xff\xff\xff\xff", // above int 64
		"\xdd\xff\xff\xff\xff\x01",                 // a huge count, cut short
	} {
		if got, err := readNumbers(s, nil); err == nil {
			t.Errorf("%x: read %v, want an error", s, got)
		}
	}
}

// FuzzReadNumbers: any bytes either fail to read or read as numbers that,
// written back and read again, are the same.
func FuzzReadNumbers(f *testing.F) {
	f.Add("\x93\x01\xd3\x00\x00\x00\xe8\xd4\xa5\x10\x00\xcb\x40\x4e\x00\x00\x00\x00\x00\x00")
	f.Add("\x92\xca\x40\x20\x00\x00\xfd")
	f.Add("\xdc\x00\x01\xcc\xff")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := readNumbers(s, nil)
		if err != nil {
			return
		}
		b := openArray(nil)
		for _, v := range got {
			b = appendInt(b, v)
		}
		closeArray(b, 0, len(got))
		again, err := readNumbers(string(b), nil)
		if err != nil || len(again) != len(got) {
			t.Fatalf("%x read as %v; written back as %x: %v, %v", s, got, b, again, err)
		}
		for i := range got {
			if again[i] != got[i] {
				t.Fatalf("%x read as %v; written back and read as %v", s, got, again)
			}
		}
	})
}
