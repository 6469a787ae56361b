package pii

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamCustom are custom detectors of every shape the stream redactor
// treats differently: bounded, unbounded with terminators, looking left
// (\b, ^), matching across lines with no bound, non-ASCII, anchored at the
// end of the text, overlapping the built-ins.
var streamCustom = map[string]string{
	"employee_id": `EMP-\d{6}`,
	"secret":      `(?i)secret[a-z0-9_]+`,
	"ticket":      `\bTCK-\d+\b`,
	"block":       `(?s)BEGIN.*?END`,
	"keyline":     `(?m)^key:\S+`,
	"umlaut":      `ü+ber`,
	"tail":        `END$`,
	"digits":      `\d{20,}`,
	"euro":        `€\d+`,
	"anychar":     `(?s)Q.{2}!`,
	"quoted":      `\bq\Q)(`,
}

// checkStream streams text in chunks and checks the contract: the emits
// make up Redact(text, Find(text)), the findings Find's, and no emit ends
// inside a character of valid UTF-8.
func checkStream(t testing.TB, s *Set, text string, chunks []string, kinds ...string) {
	t.Helper()
	want := s.Find(text, kinds...)
	r := s.NewStreamRedactor(kinds...)
	var got strings.Builder
	var found []Finding
	add := func(emit string, fs []Finding) {
		if utf8.ValidString(text) && !utf8.ValidString(emit) {
			t.Fatalf("chunks %q: emit %q splits a character", chunks, emit)
		}
		got.WriteString(emit)
		found = append(found, fs...)
	}
	for _, c := range chunks {
		add(r.Write(c))
	}
	add(r.Flush())
	if w := Redact(text, want); got.String() != w {
		t.Fatalf("text %q in chunks %q:\n got %q\nwant %q", text, chunks, got.String(), w)
	}
	if !slices.Equal(found, want) {
		t.Fatalf("text %q in chunks %q: findings %v, want %v", text, chunks, found, want)
	}
}

// splits returns text cut at the given positions.
func splits(text string, at ...int) []string {
	var out []string
	last := 0
	for _, a := range at {
		out = append(out, text[last:a])
		last = a
	}
	return append(out, text[last:])
}

func randomChunks(rng *rand.Rand, text string, maxLen int) []string {
	var out []string
	for rest := text; rest != ""; {
		n := min(1+rng.Intn(maxLen), len(rest))
		out = append(out, rest[:n])
		rest = rest[n:]
	}
	return out
}

// fragments make up the generated texts: PII, near misses, separators and
// multi-byte characters, so that matches land on chunk edges.
var fragments = []string{
	"jane.doe@example.com", "a@b", "x@y.co", "...", "+44 20 7946 0958", "+1-202-555-0173", "(202) 555-0173", "202-555-0173",
	"020 7946 0958", "06 12 34 56 78", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "4111 1111 1111 1112",
	"378282246310005", "GB82 WEST 1234 5698 7654 32", "DE89370400440532013000", "GB82 WEST 1234 5698 7654 33",
	"192.168.1.1", "10.0.0.1:8080", "2001:db8::1", "::1", "fe80::1ff:fe23:4567:890a", "1.2.3", "2024-11-25", "1,000,000",
	"EMP-123456", "TCK-99", "secretXYZ", "BEGIN", "END", "key:val", "über", "ü", "日本", "€", "€5", "Q", "!", "q)(", "\xe2\x82",
	" ", " ", " ", "\n", ".", ",", "-", ":", "@", "+", "(", ")", "0", "1", "12", "2024", "a", "Z", "x",
}

func genText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(fragments[rng.Intn(len(fragments))])
	}
	return b.String()
}

var streamTexts = []string{
	"Contact jane.doe@example.com or +44 20 7946 0958; card 4111 1111 1111 1111; IBAN GB82 WEST 1234 5698 7654 32; host 192.168.1.20 and 2001:db8::42.",
	strings.Repeat("filler text without anything personal. ", 20) + "mail bob@example.org" + strings.Repeat(" more words", 30) + " 5555 5555 5555 4444 end",
	"x4111111111111111 is not a card but 4111111111111111 is; EMP-123456 too, and TCK-12 but not xTCK-12.",
	"+1 4111 1111 1111 1111 and NL91 ABNA 0417 1643 00 and 4111111111111111@example.com",
	"BEGIN secret block\nspanning lines END, then key:value\nkey:other and über ü ber üüber.\nEND",
	"日本語のテキスト jane@example.com 電話 +81 3 1234 5678 です。€100 an 10.0.0.1",
	strings.Repeat("a", 70) + "@example.com " + strings.Repeat("b", 60) + "@" + strings.Repeat("c", 200) + ".com",
	"12345678901234567890123 and 4111 1111 1111 1111 123 and 0044 20 7946 0958.",
}

func TestStreamEverySplit(t *testing.T) {
	s := mustSet(t, streamCustom)
	for _, text := range streamTexts {
		for _, kinds := range [][]string{nil, {Phone}, {Card, Phone}, {"block", "secret"}} {
			checkStream(t, s, text, []string{text}, kinds...)
			for i := 0; i <= len(text); i++ {
				checkStream(t, s, text, splits(text, i), kinds...)
			}
		}
		checkStream(t, s, text, randomChunks(rand.New(rand.NewSource(0)), text, 1))
	}
}

func TestStreamRandom(t *testing.T) {
	s := mustSet(t, streamCustom)
	builtin := mustSet(t, nil)
	rng := rand.New(rand.NewSource(1))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		text := genText(rng, 1+rng.Intn(40))
		for _, set := range []*Set{s, builtin} {
			checkStream(t, set, text, randomChunks(rng, text, 1+rng.Intn(16)))
			i := rng.Intn(len(text) + 1)
			j := i + rng.Intn(len(text)-i+1)
			checkStream(t, set, text, splits(text, i, j))
		}
	}
}

// A match is emitted once it is complete, not at the end of the stream:
// in prose, what is held back is the last word or so.
func TestStreamHoldsBackLittle(t *testing.T) {
	s := mustSet(t, nil)
	r := s.NewStreamRedactor()
	text := strings.Repeat("The quick brown fox jumps over the lazy dog, then mails jane@example.com and calls 020 7946 0958 twice. ", 5)
	held, maxHeld := 0, 0
	for i := range len(text) {
		r.Write(text[i : i+1])
		held = r.e.end() - r.out
		maxHeld = max(maxHeld, held)
		// Once a space follows a word, everything before the word is out.
		if text[i] == ' ' && held > 20 {
			t.Fatalf("after %q: %d bytes held back", text[:i+1], held)
		}
	}
	if maxHeld > 80 {
		t.Fatalf("held back up to %d bytes", maxHeld)
	}
	// The window stays small too.
	if len(r.e.s) > 128 {
		t.Fatalf("window of %d bytes", len(r.e.s))
	}
}

// A long stream is scanned chunk by chunk, not rescanned: the window stays
// bounded however long the stream.
func TestStreamWindowBounded(t *testing.T) {
	s := mustSet(t, map[string]string{"employee_id": `EMP-\d{6}`, "word": `\bzz\w+`})
	r := s.NewStreamRedactor()
	chunk := "x@y.z EMP-123456 4111111111111111 192.168.0.1 aaaa@bbbb.cc zzword " + strings.Repeat("9", 30) + " "
	for range 2000 {
		r.Write(chunk)
		if len(r.e.s) > 512 {
			t.Fatalf("window of %d bytes", len(r.e.s))
		}
	}
}

// An unbounded custom pattern that can span anything is held back until it
// is decided, up to maxHold.
func TestStreamUnboundedCustom(t *testing.T) {
	s := mustSet(t, map[string]string{"block": `(?s)BEGIN.*?END`})
	r := s.NewStreamRedactor()
	emit, _ := r.Write("before BEGIN the secret\nstuff")
	if emit != "before " && !strings.HasPrefix("before ", emit) {
		t.Fatalf("emitted %q before the block was decided", emit)
	}
	e2, fs := r.Write(" END after")
	e3, _ := r.Flush()
	if got := emit + e2 + e3; got != "before [REDACTED:block] after" {
		t.Fatalf("got %q (findings %v)", got, fs)
	}
	// Past maxHold, text is let through.
	r = s.NewStreamRedactor()
	out := 0
	for range 3 * maxHold / 1024 {
		e, _ := r.Write("BEGIN" + strings.Repeat("x", 1019))
		out += len(e)
	}
	if out == 0 {
		t.Fatal("nothing emitted past maxHold")
	}
}

func TestStreamFlushResets(t *testing.T) {
	s := mustSet(t, nil)
	r := s.NewStreamRedactor()
	for _, text := range []string{"mail a@b.co", "call 020 7946 0958"} {
		e1, f1 := r.Write(text)
		e2, f2 := r.Flush()
		if got, want := e1+e2, Redact(text, s.Find(text)); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		if fs := append(f1, f2...); len(fs) != 1 || fs[0].Start != 5 {
			t.Fatalf("findings %v", fs)
		}
	}
}

func ExampleStreamRedactor() {
	s, _ := New(nil)
	r := s.NewStreamRedactor()
	for _, chunk := range []string{"Card: 4111 11", "11 1111 1111. Mail ", "jane@exa", "mple.com."} {
		emit, found := r.Write(chunk)
		fmt.Printf("%q %v\n", emit, found)
	}
	emit, found := r.Flush()
	fmt.Printf("%q %v\n", emit, found)
	// Output:
	// "Card:" []
	// " [REDACTED:card]. Mail" [{card 6 25}]
	// " " []
	// "" []
	// "[REDACTED:email]." [{email 32 48}]
}
