package citation

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var srcs = []Source{
	{ID: "chunk_1", DocumentID: "doc_a", Title: "Engines", Text: "The zorblat engine runs on purple coolant and was first built in the harbour town of Qarth in 1872."},
	{ID: "chunk_2", DocumentID: "doc_b", Title: "Gardening", Text: "Quantum tomatoes ripen only in complete darkness, and their seeds hum softly at dawn."},
	{ID: "chunk_3", DocumentID: "doc_c", Title: "Aviation", Text: "The sky ships of Veloria float on warm helium and are steered by singing captains."},
}

// run feeds answer to a Writer in one piece and returns the final text.
func run(answer string, cite bool) (string, []Citation) {
	w := NewWriter(srcs, cite)
	out := w.Write(answer) + w.Flush()
	if out != w.Text() {
		panic("returned text differs from Text()")
	}
	return out, w.Citations()
}

func TestWriterSettlesMarkers(t *testing.T) {
	cases := []struct {
		name, in, want string
		docs           []string // document of each citation's first source
	}{
		{"model markers kept", "The zorblat engine runs on purple coolant [1]. Quantum tomatoes ripen in darkness [2].",
			"The zorblat engine runs on purple coolant[1]. Quantum tomatoes ripen in darkness[2].", []string{"doc_a", "doc_b"}},
		{"marker after the period", "The zorblat engine runs on purple coolant. [1]",
			"The zorblat engine runs on purple coolant.[1]", []string{"doc_a"}},
		{"marker naming nothing removed", "Sky ships float on warm helium [7].",
			"Sky ships float on warm helium.[3]", []string{"doc_c"}},
		{"marker naming nothing, unsupported sentence", "I do not know [9].", "I do not know.", nil},
		{"unmarked supported sentence gets a marker", "The zorblat engine was built in Qarth in 1872. It is old",
			"The zorblat engine was built in Qarth in 1872.[1] It is old", []string{"doc_a"}},
		{"wrong marker rewritten to the supporting source", "Quantum tomatoes ripen only in complete darkness [3].",
			"Quantum tomatoes ripen only in complete darkness[2].", []string{"doc_b"}},
		{"several sources in one marker", "Zorblat engines and sky ships both exist [1, 3].",
			"Zorblat engines and sky ships both exist[1][3].", []string{"doc_a"}},
		{"brackets that are not markers stay", "See [note] and [1a] here.", "See [note] and [1a] here.", nil},
		{"unsupported sentence gets nothing", "Hello there. How are you?", "Hello there. How are you?", nil},
		{"short sentence wholly supported", "Tomatoes. Helium.", "Tomatoes.[2] Helium.[3]", []string{"doc_b", "doc_c"}},
		{"newline ends a sentence", "Veloria sky ships are steered by singing captains\nDone",
			"Veloria sky ships are steered by singing captains[3]\nDone", []string{"doc_c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, cits := run(c.in, true)
			if got != c.want {
				t.Fatalf("answer\n got %q\nwant %q", got, c.want)
			}
			if len(cits) != len(c.docs) {
				t.Fatalf("%d citations, want %d: %+v", len(cits), len(c.docs), cits)
			}
			runes := []rune(got)
			for i, ci := range cits {
				if ci.Index != i || string(runes[ci.Start:ci.End]) != ci.Text || ci.Text == "" {
					t.Fatalf("citation %d does not slice the answer: %+v", i, ci)
				}
				if ci.Sources[0].DocumentID != c.docs[i] {
					t.Fatalf("citation %d cites %s, want %s", i, ci.Sources[0].DocumentID, c.docs[i])
				}
			}
		})
	}
}

func TestWriterWithoutCitationsRemovesMarkers(t *testing.T) {
	got, cits := run("The zorblat engine runs on purple coolant [1]. Tomatoes [2][3] hum.", false)
	if want := "The zorblat engine runs on purple coolant. Tomatoes hum."; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if len(cits) != 0 {
		t.Fatalf("citations without cite: %+v", cits)
	}
}

func TestOffsetsAreCharacters(t *testing.T) {
	got, cits := run("Ünïcode first: the zorblat engine runs on purple coolant [1].", true)
	if len(cits) != 1 {
		t.Fatalf("citations: %+v", cits)
	}
	c := cits[0]
	if string([]rune(got)[c.Start:c.End]) != c.Text || !strings.HasPrefix(c.Text, "Ünïcode") {
		t.Fatalf("offsets are not character offsets: %+v in %q", c, got)
	}
}

// chunked feeds in to a Writer in pieces of size bytes.
func chunked(in string, size int, cite bool) string {
	w := NewWriter(srcs, cite)
	var b strings.Builder
	for i := 0; i < len(in); i += size {
		b.WriteString(w.Write(in[i:min(i+size, len(in))]))
	}
	return b.String() + w.Flush()
}

// TestStreamingMatchesWhole checks that however the answer is cut into
// chunks, the Writer returns the same text as for the whole answer.
func TestStreamingMatchesWhole(t *testing.T) {
	for _, in := range []string{
		"The zorblat engine runs on purple coolant [1]. Quantum tomatoes ripen in darkness. [2] Sky ships [9] float on warm helium.",
		"Veloria ships are steered by singing captains\n\nThe zorblat engine dates from 1872 [1,3].",
		"[1] starts with a marker, then [ an open bracket and [12",
	} {
		whole, _ := run(in, true)
		for size := 1; size <= 7; size++ {
			if got := chunked(in, size, true); got != whole {
				t.Fatalf("chunks of %d:\n got %q\nwant %q", size, got, whole)
			}
		}
	}
}

func TestSystemPromptNumbersSources(t *testing.T) {
	p := SystemPrompt(srcs, true)
	for i, s := range srcs {
		if !strings.Contains(p, "["+string(rune('1'+i))+"] "+s.Title) || !strings.Contains(p, s.Text) {
			t.Fatalf("prompt lacks source %d:\n%s", i+1, p)
		}
	}
	if !strings.Contains(p, "square brackets") || strings.Contains(SystemPrompt(srcs, false), "square brackets") {
		t.Fatal("only the citing prompt asks for markers")
	}
	long := SystemPrompt([]Source{{Text: strings.Repeat("word ", 5000)}}, true)
	if utf8.RuneCountInString(long) > maxPromptSourceChars+500 {
		t.Fatalf("a long source is not truncated: %d characters", utf8.RuneCountInString(long))
	}
}

func FuzzWriter(f *testing.F) {
	f.Add("The zorblat engine runs on purple coolant [1]. Tomatoes [2].", 3)
	f.Add("[[1]] [1,,2] [ 3 ] .[2]\n[1]", 1)
	f.Add("ÿ\xff[1", 2)
	f.Fuzz(func(t *testing.T, in string, size int) {
		if size < 1 || size > 64 {
			size = 1 + size%8
			if size < 1 {
				size = 1
			}
		}
		whole, cits := run(in, true)
		if got := chunked(in, size, true); got != whole {
			t.Fatalf("chunked output differs:\n got %q\nwant %q", got, whole)
		}
		runes := []rune(whole)
		for _, c := range cits {
			if c.Start < 0 || c.End > len(runes) || c.Start >= c.End || string(runes[c.Start:c.End]) != c.Text {
				t.Fatalf("citation does not slice the answer: %+v in %q", c, whole)
			}
			for _, s := range c.Sources {
				if s.Number < 1 || s.Number > len(srcs) {
					t.Fatalf("citation names source %d", s.Number)
				}
			}
		}
		off, _ := run(in, false)
		if cs := Parse(off, srcs); strings.Count(in, "[") == strings.Count(off, "[") && len(cs) > 0 && !strings.Contains(in, "[") {
			t.Fatalf("citations appeared with cite off: %+v", cs)
		}
	})
}

// TestFactsMustBeInTheCitedSource: a cited sentence whose numbers or names
// are in none of its sources loses its marker and is listed as
// unsupported, with offsets into the answer; facts that are there keep it.
func TestFactsMustBeInTheCitedSource(t *testing.T) {
	for _, c := range []struct {
		in, want    string
		unsupported []string
	}{
		{"The coolant is purple.[1] The zorblat engine is a 1900-year-old engine.[1]",
			"The coolant is purple.[1] The zorblat engine is a 1900-year-old engine.", []string{"The zorblat engine is a 1900-year-old engine."}},
		{"It was first built in 1872.[1] It was first built in Qarth.[1]",
			"It was first built in 1872.[1] It was first built in Qarth.[1]", nil},
		{"The zorblat engine was first built in Paris.[1]", "The zorblat engine was first built in Paris.", []string{"The zorblat engine was first built in Paris."}},
		// Unmarked: a sentence that reads like a source is not given its
		// marker when its facts are not there, and is listed.
		{"The zorblat engine runs on purple coolant since 1999.", "The zorblat engine runs on purple coolant since 1999.", []string{"The zorblat engine runs on purple coolant since 1999."}},
		{"The zorblat engine runs on purple coolant.", "The zorblat engine runs on purple coolant.[1]", nil},
	} {
		for size := 0; size <= 5; size++ {
			w := NewWriter(srcs, true)
			var out string
			if size == 0 {
				out = w.Write(c.in)
			} else {
				for i := 0; i < len(c.in); i += size {
					out += w.Write(c.in[i:min(i+size, len(c.in))])
				}
			}
			out += w.Flush()
			if out != c.want {
				t.Fatalf("%q (chunks of %d): %q, want %q", c.in, size, out, c.want)
			}
			runes := []rune(out)
			var got []string
			for _, u := range w.Unsupported() {
				if string(runes[u.Start:u.End]) != u.Text {
					t.Fatalf("%q: span [%d,%d) %q does not slice the answer", c.in, u.Start, u.End, u.Text)
				}
				got = append(got, u.Text)
			}
			if strings.Join(got, "|") != strings.Join(c.unsupported, "|") {
				t.Fatalf("%q (chunks of %d): unsupported %q, want %q", c.in, size, got, c.unsupported)
			}
		}
	}
}
