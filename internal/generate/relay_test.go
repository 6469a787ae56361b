package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// relayed is the output stage of an admitted call under set.
func relayed(t testing.TB, set *policy.Set) (*Relayed, *Call, *policies) {
	t.Helper()
	s, ps, _ := service(set, nil)
	s.Capture = capture{}
	c := keyedCall()
	if _, _, err := s.Admit(context.Background(), c, catalog.Resolved{ID: "up", Backend: "upstream"}, Gate{Text: "hi", Output: true}); err != nil {
		t.Fatal(err)
	}
	r := s.Relayed(c)
	if r == nil {
		t.Fatal("no output stage")
	}
	return r, c, ps
}

// chatEvents is text as an upstream's chat chunks cut at size, then a
// finish chunk and [DONE].
func chatEvents(text string, size int) []inference.RelayEvent {
	var evs []inference.RelayEvent
	for text != "" {
		n := min(size, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++ // a chunk's JSON string holds whole characters
		}
		c, _ := json.Marshal(text[:n])
		evs = append(evs, inference.RelayEvent{Data: []byte(fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, c))})
		text = text[n:]
	}
	return append(evs, inference.RelayEvent{Data: []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)},
		inference.RelayEvent{Data: []byte("[DONE]")})
}

// relayText is the content a client reads from the events, and whether
// the stream ended with [DONE].
func relayText(t testing.TB, r *Relayed, in []inference.RelayEvent) (string, bool, error) {
	t.Helper()
	var b strings.Builder
	done := false
	for _, ev := range in {
		out, err := r.Event(ev)
		if err != nil {
			return b.String(), false, err
		}
		for _, e := range out {
			if string(e.Data) == "[DONE]" {
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
			if err := json.Unmarshal(e.Data, &ch); err != nil {
				t.Fatalf("an event the client cannot read: %q: %v", e.Data, err)
			}
			for _, c := range ch.Choices {
				b.WriteString(c.Delta.Content)
			}
		}
	}
	return b.String(), done, nil
}

func TestRelayedStreamRedactsAcrossChunks(t *testing.T) {
	text := "Reach jane.doe@example.com or bob@corp.example.org today."
	set, _ := pii.New(nil)
	want := pii.Redact(text, set.Find(text, pii.Email))
	for _, size := range []int{1, 3, 7, 100} {
		r, c, _ := relayed(t, mustSet(t, redactEmails))
		got, done, err := relayText(t, r, chatEvents(text, size))
		if err != nil || got != want || !done {
			t.Fatalf("chunks of %d: got %q (done %v, %v), want %q", size, got, done, err, want)
		}
		if rec := c.Record(200, 0); rec.Output != want {
			t.Fatalf("kept %q, want the answer as sent", rec.Output)
		}
	}
}

// FuzzRelayedStream feeds arbitrary answers, cut into arbitrary chunks,
// through an output redaction: the client always reads valid chunks whose
// text is the whole answer redacted, never a partial match.
func FuzzRelayedStream(f *testing.F) {
	f.Add("mail me at a@example.com please", uint8(3))
	f.Add("x@y.zz", uint8(1))
	f.Add("no pii here at all", uint8(50))
	pset, _ := pii.New(nil)
	set := mustSet(f, redactEmails)
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		if !utf8.ValidString(text) {
			return
		}
		r, _, _ := relayed(t, set)
		got, done, err := relayText(t, r, chatEvents(text, int(size%40)+1))
		if want := pii.Redact(text, pset.Find(text, pii.Email)); err != nil || got != want || !done {
			t.Fatalf("got %q (done %v, %v), want %q", got, done, err, want)
		}
	})
}

func TestRelayedWholeAnswerAndDeny(t *testing.T) {
	body := []byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"mail a@example.com","tool_calls":[{"function":{"arguments":"{\"to\":\"a@example.com\"}"}}]}}]}`)
	r, c, _ := relayed(t, mustSet(t, redactEmails))
	out, err := r.Whole(body)
	if err != nil || !strings.Contains(string(out), `"content":"mail [REDACTED:email]"`) || !strings.Contains(string(out), `a@example.com\"}`) {
		t.Fatalf("whole answer: %s, %v (the content redacted, tool arguments not)", out, err)
	}
	if rec := c.Record(200, 0); rec.Output != "mail [REDACTED:email]" {
		t.Fatalf("kept %q", rec.Output)
	}
	deny := policy.Rule{Name: "no-mail", Stage: policy.StageOutput, When: `output.contains("mail")`, Action: policy.ActionDeny}
	r, _, ps := relayed(t, mustSet(t, deny))
	if _, err := r.Whole(body); apierr.From(err).Code != apierr.PolicyViolation {
		t.Fatalf("deny: %v", err)
	}
	r, _, _ = relayed(t, mustSet(t, deny))
	if _, done, err := relayText(t, r, chatEvents("no mail today", 4)); apierr.From(err).Code != apierr.PolicyViolation || done {
		t.Fatalf("a denied stream ended with [DONE] (%v)", err)
	}
	if len(ps.got) != 1 {
		t.Fatalf("decisions %+v", ps.got)
	}
}

func TestRelayedResponsesEventsGetTheHeldBackTextBeforeTheirEnd(t *testing.T) {
	r, _, _ := relayed(t, mustSet(t, redactEmails))
	in := []string{
		`{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"write to bob@exa","sequence_number":3}`,
		`{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"mple.com","sequence_number":4}`,
		`{"type":"response.output_text.done","item_id":"m","output_index":0,"content_index":0,"text":"write to bob@example.com","sequence_number":5}`,
		`{"type":"response.completed","sequence_number":6,"response":{"output":[{"content":[{"type":"output_text","text":"write to bob@example.com"}]}]}}`,
	}
	var deltas strings.Builder
	var seqs []int
	var all strings.Builder
	for _, d := range in {
		out, err := r.Event(inference.RelayEvent{Event: "x", Data: []byte(d)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range out {
			all.Write(e.Data)
			var ev struct {
				Type     string `json:"type"`
				Delta    string `json:"delta"`
				Sequence int    `json:"sequence_number"`
			}
			json.Unmarshal(e.Data, &ev)
			if ev.Type == "response.output_text.delta" {
				deltas.WriteString(ev.Delta)
			}
			seqs = append(seqs, ev.Sequence)
		}
	}
	if deltas.String() != "write to [REDACTED:email]" || strings.Contains(all.String(), "bob@") {
		t.Fatalf("deltas %q; events %s", deltas.String(), all.String())
	}
	if fmt.Sprint(seqs) != "[3 4 5 6 7]" {
		t.Fatalf("sequence numbers %v, want the added delta numbered in and the rest shifted", seqs)
	}
}
