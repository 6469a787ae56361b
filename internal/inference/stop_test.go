package inference

import (
	"strings"
	"testing"
)

func run(g *TextGate, pieces []string) (string, bool) {
	var sb strings.Builder
	for _, p := range pieces {
		out, stop := g.Push([]byte(p))
		sb.WriteString(out)
		if stop {
			return sb.String(), true
		}
	}
	sb.WriteString(g.Flush())
	return sb.String(), false
}

func TestTextGateStopAcrossTokens(t *testing.T) {
	cases := []struct {
		name   string
		stops  []string
		pieces []string
		want   string
		stop   bool
	}{
		{"no stop", nil, []string{"Hel", "lo"}, "Hello", false},
		{"single token", []string{"END"}, []string{"a", "END", "b"}, "a", true},
		{"split over three", []string{"STOP"}, []string{"x S", "T", "OPy"}, "x ", true},
		{"false start released", []string{"STOP"}, []string{"ST", "AR", "T"}, "START", false},
		{"earliest of two", []string{"b", "a"}, []string{"xxab"}, "xx", true},
		{"newline stop", []string{"\n\n"}, []string{"line\n", "\nmore"}, "line", true},
		{"utf8 split", nil, []string{"caf", "\xc3", "\xa9!"}, "café!", false},
		{"dangling utf8 at end", nil, []string{"a\xe2\x82"}, "a\uFFFD", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, stop := run(NewTextGate(c.stops), c.pieces)
			if got != c.want || stop != c.stop {
				t.Fatalf("got %q stop=%v, want %q stop=%v", got, stop, c.want, c.stop)
			}
		})
	}
}

func TestTextGateTrimLeft(t *testing.T) {
	g := NewTextGate(nil)
	g.TrimLeft = true
	if got, _ := run(g, []string{" ", "  The", " end"}); got != "The end" {
		t.Fatalf("got %q", got)
	}
}

func TestTextGateHoldsPartialStop(t *testing.T) {
	g := NewTextGate([]string{"</s>"})
	out, _ := g.Push([]byte("abc</"))
	if out != "abc" {
		t.Fatalf("sent %q before knowing whether </ starts a stop", out)
	}
	out, _ = g.Push([]byte("x"))
	if out != "</x" {
		t.Fatalf("got %q, want the held text released", out)
	}
}

func FuzzTextGate(f *testing.F) {
	f.Add("hello world", "wor", 3)
	f.Add("\xc3\xa9\xe2\x82\xac", "\xac", 1)
	f.Fuzz(func(t *testing.T, text, stop string, step int) {
		if step <= 0 || step > 16 {
			step = 1
		}
		g := NewTextGate([]string{stop})
		var sb strings.Builder
		stopped := false
		for i := 0; i < len(text) && !stopped; i += step {
			end := i + step
			if end > len(text) {
				end = len(text)
			}
			out, s := g.Push([]byte(text[i:end]))
			sb.WriteString(out)
			stopped = s
		}
		if !stopped {
			sb.WriteString(g.Flush())
		}
		got := sb.String()
		want := text
		if stop != "" {
			if i := strings.Index(text, stop); i >= 0 {
				want = text[:i]
				if !stopped {
					t.Fatalf("stop %q in %q not detected", stop, text)
				}
			}
		}
		if got != strings.ToValidUTF8(want, "\uFFFD") && !strings.Contains(want, "\uFFFD") {
			// Invalid bytes may be replaced per byte group; compare lengths loosely.
			if strings.ToValidUTF8(got, "") != strings.ToValidUTF8(want, "") {
				t.Fatalf("got %q want %q", got, want)
			}
		}
	})
}

// TestTextGateLogprobsJoinTheText: the logprobs a gate releases join into
// exactly the text it releases, with a trimmed leading space, a stop
// sequence split across tokens, and a flush at the end; and every token
// pushed gets exactly one entry, held-back ones included.
func TestTextGateLogprobsJoinTheText(t *testing.T) {
	for _, c := range []struct {
		stops    []string
		trim     bool
		tokens   []string
		wantText string
	}{
		{nil, true, []string{" The", " sky", " is"}, "The sky is"},
		{[]string{"\nUser:"}, true, []string{" Hi", ".", "\n", "User", ":", " x"}, "Hi."},
		{[]string{"END"}, false, []string{"a", "b", "E", "N"}, "abEN"},
		{[]string{"END"}, false, []string{"a", "bE", "ND", "z"}, "ab"},
		{nil, true, []string{" ", " Yes"}, "Yes"},
		{[]string{"\nUser:"}, false, []string{"Hi", "\n", "Us", "er", ":"}, "Hi"},
		{[]string{"xyz"}, false, []string{"a", "\xe2", "\x82", "\xac", "x", "y", "z"}, "a\u20ac"},
	} {
		g := NewTextGate(c.stops)
		g.TrimLeft = c.trim
		var text, joined string
		stopped := false
		pushed, entries := 0, 0
		for _, tok := range c.tokens {
			out, lps, st := g.PushLogprob([]byte(tok), &TokenLogprob{Token: tok, Bytes: []byte(tok)})
			pushed++
			entries += len(lps)
			text += out
			for _, lp := range lps {
				joined += lp.Token
				if string(lp.Bytes) != lp.Token {
					t.Errorf("%q: token %q has bytes %q", c.tokens, lp.Token, lp.Bytes)
				}
			}
			if st {
				stopped = true
				break
			}
		}
		if !stopped {
			out, lps := g.FlushLogprobs()
			entries += len(lps)
			text += out
			for _, lp := range lps {
				joined += lp.Token
			}
		}
		if entries != pushed {
			t.Errorf("%q: %d logprob entries for %d tokens", c.tokens, entries, pushed)
		}
		if text != c.wantText {
			t.Errorf("%q: text %q, want %q", c.tokens, text, c.wantText)
		}
		if joined != text {
			t.Errorf("%q: logprob tokens join into %q, text %q", c.tokens, joined, text)
		}
	}
}
