package chunk

import (
	"math/rand"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// checkInvariants asserts everything the package doc promises of Split.
func checkInvariants(t *testing.T, text string, opts Options, chunks []Chunk) {
	t.Helper()
	o := opts.normalize()
	covered := 0 // text[:covered] is in chunks or whitespace
	for i, c := range chunks {
		if c.Index != i {
			t.Fatalf("chunk %d has Index %d", i, c.Index)
		}
		if c.Start < 0 || c.End > len(text) || c.Start >= c.End {
			t.Fatalf("chunk %d: bad span [%d,%d) of %d", i, c.Start, c.End, len(text))
		}
		if c.Text != text[c.Start:c.End] {
			t.Fatalf("chunk %d: Text != text[Start:End]", i)
		}
		if n := c.End - c.Start; n > o.MaxChars {
			t.Fatalf("chunk %d: %d bytes > MaxChars %d", i, n, o.MaxChars)
		}
		if utf8.ValidString(text) && (!utf8.RuneStart(text[c.Start]) || (c.End < len(text) && !utf8.RuneStart(text[c.End]))) {
			t.Fatalf("chunk %d [%d,%d) splits a code point", i, c.Start, c.End)
		}
		if utf8.ValidString(text) && !utf8.ValidString(c.Text) {
			t.Fatalf("chunk %d: invalid UTF-8", i)
		}
		first, _ := utf8.DecodeRuneInString(c.Text)
		last, _ := utf8.DecodeLastRuneInString(c.Text)
		if unicode.IsSpace(first) || unicode.IsSpace(last) {
			t.Fatalf("chunk %d %q: leading or trailing whitespace", i, c.Text)
		}
		if i > 0 {
			p := chunks[i-1]
			if c.Start <= p.Start || c.End <= p.End {
				t.Fatalf("chunk %d [%d,%d) not after chunk %d [%d,%d)", i, c.Start, c.End, i-1, p.Start, p.End)
			}
			if ov := p.End - c.Start; ov > o.Overlap {
				t.Fatalf("chunks %d,%d overlap by %d > %d", i-1, i, ov, o.Overlap)
			}
		}
		if covered < c.Start && !onlySpace(text[covered:c.Start]) {
			t.Fatalf("text[%d:%d] = %q is in no chunk", covered, c.Start, text[covered:c.Start])
		}
		covered = max(covered, c.End)
	}
	if !onlySpace(text[covered:]) {
		t.Fatalf("tail text[%d:] = %q is in no chunk", covered, text[covered:])
	}
}

func onlySpace(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func TestSplitShort(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []Chunk
	}{
		{"", nil},
		{"  \n\t \u3000\u00a0 ", nil},
		{"hello", []Chunk{{0, 0, 5, "hello"}}},
		{"\n\n  hello world \n", []Chunk{{0, 4, 15, "hello world"}}},
	} {
		got := Split(tc.text, Options{})
		if len(got) != len(tc.want) {
			t.Errorf("Split(%q) = %+v, want %+v", tc.text, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Split(%q)[%d] = %+v, want %+v", tc.text, i, got[i], tc.want[i])
			}
		}
	}
}

func TestSplitPrefersParagraphs(t *testing.T) {
	para := func(word string) string {
		return strings.TrimSpace(strings.Repeat(word+" ", 50)) + "." // 50 words: ~250-300 bytes
	}
	paras := []string{para("alpha"), para("beta"), para("gamma"), para("delta"), para("epsilon"), para("zeta")}
	text := strings.Join(paras, "\n\n")
	opts := Options{MaxChars: 700, Overlap: -1}
	chunks := Split(text, opts)
	checkInvariants(t, text, opts, chunks)
	for _, c := range chunks {
		// Every chunk is whole paragraphs.
		for _, p := range strings.Split(c.Text, "\n\n") {
			found := false
			for _, q := range paras {
				found = found || p == q
			}
			if !found {
				t.Errorf("chunk %d does not end at a paragraph break: %q", c.Index, c.Text)
				break
			}
		}
	}
	if len(chunks) != 3 {
		t.Errorf("%d chunks, want 3 (two paragraphs each)", len(chunks))
	}
}

func TestSplitPreferenceOrder(t *testing.T) {
	// A line break beats sentence ends and spaces; a sentence end beats
	// spaces; all only in the latter half of the room.
	words := strings.Repeat("word ", 30) // 150 bytes
	for _, tc := range []struct {
		name, text, wantFirst string
	}{
		{"line", words + "line one\nnext " + words, strings.TrimSpace(words + "line one")},
		{"sentence", words + "Done. Then " + words, strings.TrimSpace(words + "Done.")},
		{"question", words + "Why? Then " + words, strings.TrimSpace(words + "Why?")},
		{"cjk sentence", strings.Repeat("字", 60) + "。" + strings.Repeat("字", 60), strings.Repeat("字", 60) + "。"},
		{"space", words + words, (words + words)[:199]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{MaxChars: 200, Overlap: 30}
			chunks := Split(tc.text, opts)
			checkInvariants(t, tc.text, opts, chunks)
			if chunks[0].Text != tc.wantFirst {
				t.Errorf("first chunk %q, want %q", chunks[0].Text, tc.wantFirst)
			}
		})
	}
}

func TestSplitOverlapStartsAtWord(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100)
	opts := Options{MaxChars: 300, Overlap: 60}
	chunks := Split(text, opts)
	checkInvariants(t, text, opts, chunks)
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks[1:] {
		prev := chunks[i]
		if c.Start > 0 && !unicode.IsSpace(rune(text[c.Start-1])) {
			t.Errorf("chunk %d starts inside a word: %q", c.Index, c.Text[:20])
		}
		if ov := prev.End - c.Start; ov <= 0 || ov > 60 {
			t.Errorf("chunks %d,%d overlap by %d", i, i+1, ov)
		}
	}
	// Deterministic.
	again := Split(text, opts)
	for i := range chunks {
		if chunks[i] != again[i] {
			t.Fatal("Split is not deterministic")
		}
	}
}

func TestSplitNoSpaces(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"ascii", strings.Repeat("abcdefghij", 500)},
		{"cjk", strings.Repeat("日本語の文章を区切る", 200)},
		{"emoji", strings.Repeat("😀👍🏽🇯🇵", 300)},
		{"mixed", strings.Repeat("aé日😀", 400)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{MaxChars: 101, Overlap: 20}
			chunks := Split(tc.text, opts)
			checkInvariants(t, tc.text, opts, chunks)
			for i, c := range chunks[:len(chunks)-1] {
				if c.End-c.Start < 101-utf8.UTFMax {
					t.Errorf("chunk %d is %d bytes: a hard cut should fill the room", i, c.End-c.Start)
				}
				// Overlap continues at a code point boundary after a hard cut.
				if ov := c.End - chunks[i+1].Start; ov <= 0 {
					t.Errorf("chunks %d,%d do not overlap (%d)", i, i+1, ov)
				}
			}
		})
	}
}

func TestSplitMultilingual(t *testing.T) {
	text := "Résumé of the meeting.\n\n会議の概要：新しい機能について話し合いました。次回は来週です。\n\n" +
		"Встреча прошла хорошо! Следующая — в пятницу.\n\nمرحبا بالعالم. هذا نص عربي.\n\n" +
		"Emoji test 👩‍💻 works 🎉 fine."
	for _, max := range []int{16, 20, 33, 64, 100, 1200} {
		opts := Options{MaxChars: max, Overlap: max / 4}
		chunks := Split(text, opts)
		checkInvariants(t, text, opts, chunks)
	}
}

func TestSplitLongWhitespaceGap(t *testing.T) {
	text := "start" + strings.Repeat(" ", 5000) + "middle" + strings.Repeat("\n", 3000) + "end"
	opts := Options{MaxChars: 100, Overlap: 40}
	chunks := Split(text, opts)
	checkInvariants(t, text, opts, chunks)
	var got []string
	for _, c := range chunks {
		got = append(got, c.Text)
	}
	if strings.Join(got, "|") != "start|middle|end" {
		t.Errorf("chunks %q", got)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct{ in, want Options }{
		{Options{}, Options{1200, 150}},
		{Options{MaxChars: 5}, Options{16, 8}},
		{Options{MaxChars: 100, Overlap: -1}, Options{100, 0}},
		{Options{MaxChars: 100, Overlap: 90}, Options{100, 50}},
		{Options{MaxChars: -3, Overlap: 10}, Options{16, 8}},
	} {
		if got := tc.in.normalize(); got != tc.want {
			t.Errorf("%+v.normalize() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// randomText builds text from pieces that exercise every kind of boundary.
func randomText(r *rand.Rand, n int) string {
	pieces := []string{"word", "a", "longerword", "日本", "😀", "é", " ", " ", " ", "  ", "\n", "\n\n", "\n \n", ". ", "? ", "! ", "。", "\t", "\u00a0", "\u3000", "x.y", strings.Repeat("z", 70)}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	return b.String()
}

func TestSplitRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		text := randomText(r, r.Intn(3000))
		opts := Options{MaxChars: r.Intn(300) - 10, Overlap: r.Intn(200) - 20}
		checkInvariants(t, text, opts, Split(text, opts))
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("Hello world. This is a test.\n\nNew paragraph here.", 20, 5)
	f.Add(strings.Repeat("日本語", 50), 16, 4)
	f.Add("a\xffb\xe6\x97 c\u00a0d\u3000e", 16, 8)
	f.Add("   ", 0, 0)
	f.Add(strings.Repeat("x", 100)+" y", 30, -1)
	f.Fuzz(func(t *testing.T, text string, maxChars, overlap int) {
		opts := Options{MaxChars: maxChars % 5000, Overlap: overlap % 5000}
		checkInvariants(t, text, opts, Split(text, opts))
	})
}

func BenchmarkSplit(b *testing.B) {
	text := randomText(rand.New(rand.NewSource(2)), 1<<20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Split(text, Options{})
	}
}
