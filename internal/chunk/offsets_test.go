package chunk

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRuneOffset(t *testing.T) {
	text := "aé日😀b" // bytes: a(1) é(2) 日(3) 😀(4) b(1)
	for _, tc := range []struct{ byteOff, want int }{
		{-5, 0}, {0, 0}, {1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 2}, {6, 3},
		{9, 3}, {10, 4}, {11, 5}, {99, 5},
	} {
		if got := RuneOffset(text, tc.byteOff); got != tc.want {
			t.Errorf("RuneOffset(%d) = %d, want %d", tc.byteOff, got, tc.want)
		}
		if got := NewIndex(text).RuneOffset(tc.byteOff); got != tc.want {
			t.Errorf("Index.RuneOffset(%d) = %d, want %d", tc.byteOff, got, tc.want)
		}
	}
	x := NewIndex(text)
	if x.Len() != 5 {
		t.Errorf("Len = %d", x.Len())
	}
	for r, want := range []int{0, 1, 3, 6, 10, 11} {
		if got := x.ByteOffset(r); got != want {
			t.Errorf("ByteOffset(%d) = %d, want %d", r, got, want)
		}
	}
	if x.ByteOffset(-1) != 0 || x.ByteOffset(100) != len(text) {
		t.Error("ByteOffset does not clamp")
	}
}

func TestIndexMatchesRuneOffset(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	texts := []string{
		"",
		strings.Repeat("ascii only ", 100),
		randomText(r, 5000),
		strings.Repeat("😀", 1000),
		"bad \xff\xfe utf8 \xe6\x97 and \x80\x80\x80\x80\x80 runs " + strings.Repeat("é\x80", 300),
	}
	for _, text := range texts {
		x := NewIndex(text)
		if x.Len() != utf8.RuneCountInString(text) {
			t.Errorf("Len = %d, want %d", x.Len(), utf8.RuneCountInString(text))
		}
		for off := -1; off <= len(text)+1; off++ {
			if got, want := x.RuneOffset(off), RuneOffset(text, off); got != want {
				t.Fatalf("Index.RuneOffset(%d) = %d, RuneOffset = %d", off, got, want)
			}
		}
		if utf8.ValidString(text) {
			for rn := 0; rn <= x.Len(); rn++ {
				b := x.ByteOffset(rn)
				if x.RuneOffset(b) != rn {
					t.Fatalf("RuneOffset(ByteOffset(%d)) = %d", rn, x.RuneOffset(b))
				}
			}
		}
	}
}

func TestRuneSpan(t *testing.T) {
	text := strings.Repeat("日本語の文章です。", 40)
	x := NewIndex(text)
	for _, c := range Split(text, Options{MaxChars: 60, Overlap: 12}) {
		s, e := x.RuneSpan(c)
		if got := string([]rune(text)[s:e]); got != c.Text {
			t.Fatalf("rune span [%d,%d) = %q, chunk %q", s, e, got, c.Text)
		}
	}
}

func FuzzIndex(f *testing.F) {
	f.Add("aé日😀b", 3)
	f.Add("\x80\x80é\xff", 2)
	f.Fuzz(func(t *testing.T, text string, off int) {
		x := NewIndex(text)
		if got, want := x.RuneOffset(off), RuneOffset(text, off); got != want {
			t.Fatalf("Index.RuneOffset(%d) = %d, RuneOffset = %d", off, got, want)
		}
		if b := x.ByteOffset(x.RuneOffset(off)); b > len(text) || b < 0 {
			t.Fatalf("ByteOffset out of range: %d", b)
		}
	})
}
