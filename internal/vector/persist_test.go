package vector

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

func TestSaveLoad(t *testing.T) {
	vs := randomVectors(3000, 24, 1)
	x := build(t, vs, graphOnly)
	x.Delete(10, 20, 30, 40) // tombstones are saved too
	x.Add(5, vs[6])          // and so is a replaced node

	var buf bytes.Buffer
	if err := x.Save(&buf); err != nil {
		t.Fatal(err)
	}
	saved := buf.Bytes()

	y := New(24, graphOnly)
	if err := y.Load(bytes.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	if y.Len() != x.Len() || y.m != x.m || y.ndead != x.ndead || y.entry != x.entry || y.top != x.top {
		t.Fatalf("loaded: Len %d M %d dead %d entry %d top %d; saved: %d %d %d %d %d",
			y.Len(), y.m, y.ndead, y.entry, y.top, x.Len(), x.m, x.ndead, x.entry, x.top)
	}
	for _, q := range randomVectors(30, 24, 2) {
		if got, want := y.Search(q, 10), x.Search(q, 10); !slices.Equal(got, want) {
			t.Fatalf("loaded index answers %v, saved one %v", got, want)
		}
	}
	// Saving the loaded index gives the same bytes.
	var again bytes.Buffer
	if err := y.Save(&again); err != nil || !bytes.Equal(again.Bytes(), saved) {
		t.Fatalf("re-saved index differs (err %v)", err)
	}
	// The loaded index takes more vectors and deletions.
	if err := y.Add(10_000, vs[0]); err != nil {
		t.Fatal(err)
	}
	y.Delete(0)
	if got := y.Search(vs[0], 1); len(got) != 1 || got[0].ID != 10_000 {
		t.Fatalf("after Add to the loaded index: %v", got)
	}

	t.Run("empty", func(t *testing.T) {
		var b bytes.Buffer
		if err := New(24, Options{}).Save(&b); err != nil {
			t.Fatal(err)
		}
		z := New(24, Options{})
		if err := z.Load(&b); err != nil || z.Len() != 0 {
			t.Fatalf("Load of an empty index: %v, Len %d", err, z.Len())
		}
		if err := z.Add(1, vs[1]); err != nil || z.Len() != 1 {
			t.Fatalf("Add after loading an empty index: %v", err)
		}
	})

	t.Run("bad data", func(t *testing.T) {
		z := build(t, vs[:10], Options{})
		check := func(name string, data []byte, want error) {
			t.Helper()
			if err := z.Load(bytes.NewReader(data)); !errors.Is(err, want) {
				t.Errorf("%s: Load = %v, want %v", name, err, want)
			}
			if z.Len() != 10 {
				t.Errorf("%s: failed Load changed the index", name)
			}
		}
		var other bytes.Buffer
		build(t, randomVectors(5, 8, 1), Options{}).Save(&other)
		check("other dimension", other.Bytes(), ErrDimension)
		check("not an index", []byte("hello, world, this is not an index at all"), ErrFormat)
		check("empty", nil, ErrFormat)
		check("truncated", saved[:len(saved)/2], ErrFormat)
		check("no checksum", saved[:len(saved)-4], ErrFormat)
		for _, off := range []int{9, 40, 1000, len(saved) / 2, len(saved) - 5} {
			bad := slices.Clone(saved)
			bad[off] ^= 0x40
			if err := z.Load(bytes.NewReader(bad)); err == nil {
				t.Errorf("flipped byte %d: Load succeeded", off)
			}
		}
		if err := z.Load(errReader{}); err == nil || errors.Is(err, ErrFormat) {
			t.Errorf("reader error: Load = %v, want the reader's error", err)
		}
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestSaveWriteError(t *testing.T) {
	x := build(t, randomVectors(100, 8, 1), Options{})
	if err := x.Save(failWriter{}); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Save to a failing writer: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }
