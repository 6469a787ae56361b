package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// recordOnly is a Policies that serves one set and takes decisions.
type recordOnly struct {
	Policies
	set *policy.Set
	got []policy.Decision
}

func (r *recordOnly) Set() *policy.Set            { return r.set }
func (r *recordOnly) Record(ds []policy.Decision) { r.got = append(r.got, ds...) }

// redactingWriter is a policyWriter armed with an output rule that
// redacts emails, over a recorder.
func redactingWriter(t testing.TB) (*policyWriter, *httptest.ResponseRecorder) {
	t.Helper()
	p := policy.Policy{ID: "pol_t", Name: "t", Scope: policy.ScopeDeployment, Enabled: true, Rules: []policy.Rule{
		{Name: "r", Stage: policy.StageOutput, When: `"email" in pii`, Action: policy.ActionRedact, Redact: []string{"email"}}}}
	set, err := policy.NewSet([]policy.Policy{p})
	if err != nil {
		t.Fatal(err)
	}
	// The call is armed the way every request is: by its admission.
	s := &Server{Policies: &recordOnly{set: set}}
	s.Gen = s.NewGenerator()
	call := &generate.Call{}
	call.SetKey(auth.Key{ID: "key_t", TeamID: "team_t"})
	if _, _, err := s.Gen.Admit(context.Background(), call, catalog.Resolved{ID: "m"}, generate.Gate{Output: true}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	return &policyWriter{ResponseWriter: rec, s: s, call: call}, rec
}

// chatStream is text as chat chunks cut at the given sizes, then a
// finish chunk and [DONE], as an upstream would send them.
func chatStream(text string, sizes []int) string {
	var b strings.Builder
	for i := 0; text != ""; i++ {
		n := 1
		if len(sizes) > 0 {
			n = max(1, sizes[i%len(sizes)])
		}
		n = min(n, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++ // a chunk's JSON string holds whole characters
		}
		c, _ := json.Marshal(text[:n])
		fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", c)
		text = text[n:]
	}
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	return b.String()
}

// streamedContent is the content a client reads from an SSE body.
func streamedContent(t testing.TB, body string) (string, bool) {
	var out strings.Builder
	done := false
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("a chunk the client cannot read: %q: %v", d, err)
		}
		for _, c := range ch.Choices {
			out.WriteString(c.Delta.Content)
		}
	}
	return out.String(), done
}

func TestStreamedRedactionAcrossChunksAndWrites(t *testing.T) {
	text := "Reach jane.doe@example.com or bob@corp.example.org today."
	set, _ := pii.New(nil)
	want := pii.Redact(text, set.Find(text, pii.Email))
	for _, sizes := range [][]int{{1}, {3}, {7, 2}, {100}} {
		for _, write := range []int{1, 5, 64, 1 << 20} {
			pw, rec := redactingWriter(t)
			pw.WriteHeader(200)
			stream := chatStream(text, sizes)
			for len(stream) > 0 {
				n := min(write, len(stream))
				pw.Write([]byte(stream[:n]))
				stream = stream[n:]
			}
			got, done := streamedContent(t, rec.Body.String())
			if got != want || !done {
				t.Fatalf("chunks %v, writes of %d: got %q (done %v), want %q", sizes, write, got, done, want)
			}
		}
	}
}

// FuzzPolicyWriterSSE feeds arbitrary answers, cut into arbitrary chunks
// and writes, through an output redaction: the client always reads valid
// chunks whose text is the whole answer redacted, never a partial match.
func FuzzPolicyWriterSSE(f *testing.F) {
	f.Add("mail me at a@example.com please", uint8(3), uint8(7))
	f.Add("x@y.zz", uint8(1), uint8(1))
	f.Add("no pii here at all", uint8(50), uint8(2))
	set, _ := pii.New(nil)
	f.Fuzz(func(t *testing.T, text string, chunk, write uint8) {
		if !utf8.ValidString(text) {
			return
		}
		pw, rec := redactingWriter(t)
		pw.WriteHeader(200)
		stream := chatStream(text, []int{int(chunk%40) + 1})
		w := int(write%200) + 1
		for len(stream) > 0 {
			n := min(w, len(stream))
			pw.Write([]byte(stream[:n]))
			stream = stream[n:]
		}
		got, done := streamedContent(t, rec.Body.String())
		if want := pii.Redact(text, set.Find(text, pii.Email)); got != want || !done {
			t.Fatalf("got %q (done %v), want %q", got, done, want)
		}
	})
}
