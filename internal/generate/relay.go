package generate

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Relayed applies a call's output stage to an upstream's relayed answer:
// the one answer that exists only as bytes, because the gateway passes an
// upstream's answer on as the upstream sent it (docs/openai-compat.md).
// It reads the answer's text where each shape Sovereign relays keeps it
// (chat, completions, the Responses API) and touches nothing else.
//
//   - A whole answer (Whole) is evaluated: a deny is the 403
//     policy_violation, redact rules redact its text.
//   - A streamed answer (Event) is redacted as it goes: each choice's (or
//     output part's) text runs through a pii.StreamRedactor, which holds
//     back the tail that could still become a match, so a match split
//     across events is never partly sent; the held-back text goes out with
//     the choice's last chunk (for the Responses API, as one more delta
//     before its text's end, the events after it renumbered). The whole
//     answer is evaluated at the stream's end: a deny then replaces the
//     end with the error.
type Relayed struct {
	s     *Service
	c     *Call
	op    *outputPolicy
	texts *answerTexts
	// shift renumbers the Responses API's events after an added delta.
	shift int64
	ended bool
}

// Relayed is the output stage of the call's relayed answer, or nil when
// no output rule applies and the team keeps no outputs (the answer then
// passes untouched, unparsed).
func (s *Service) Relayed(c *Call) *Relayed {
	c.mu.Lock()
	op, capture := c.output, c.capture
	c.mu.Unlock()
	if op == nil && !capture {
		return nil
	}
	return &Relayed{s: s, c: c, op: op, texts: newAnswerTexts(op, capture)}
}

// answerKeys are the members whose strings are an answer's text, in every
// shape an upstream answers with.
var answerKeys = map[string]bool{"content": true, "text": true, "output_text": true, "refusal": true, "output": true, "delta": true}

// walkText calls fn on every answer string in v and stores what it
// returns.
func walkText(v any, inText bool, fn func(string) string) any {
	switch x := v.(type) {
	case string:
		if inText {
			return fn(x)
		}
	case []any:
		for i := range x {
			x[i] = walkText(x[i], inText, fn)
		}
	case map[string]any:
		for k, e := range x {
			if k == "annotations" || k == "logprobs" || k == "tool_calls" {
				continue
			}
			x[k] = walkText(e, answerKeys[k], fn)
		}
	}
	return v
}

func decodeAny(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func encodeAny(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// texts is every answer string of v, one per line.
func texts(v any) string {
	var b strings.Builder
	walkText(v, false, func(s string) string { b.WriteString(s); b.WriteByte('\n'); return s })
	return b.String()
}

// Whole governs a whole answer: it returns the answer to send (redacted,
// re-encoded, when a redact rule found something), or the deny.
func (r *Relayed) Whole(body []byte) ([]byte, error) {
	v, ok := decodeAny(body)
	if !ok {
		return body, nil
	}
	text := texts(v)
	out := r.s.evaluate(r.op, text)
	if out.Deny != nil {
		return nil, Denied(out.Deny)
	}
	if len(out.Redact) > 0 && r.op.Redacts() {
		walkText(v, false, r.op.Redact)
		body = encodeAny(v)
		text = texts(v)
	}
	r.c.Keep(strings.TrimSuffix(text, "\n"))
	return body, nil
}

// Event governs one event of a streamed answer: it returns the events to
// send in its place (the event rewritten, after the held-back text of a
// Responses API output part when the event ends it), or, when the event
// ends the stream and a deny decides the whole answer, the deny — sent in
// place of the end.
func (r *Relayed) Event(ev inference.RelayEvent) ([]inference.RelayEvent, error) {
	if string(ev.Data) == "[DONE]" {
		if err := r.end(); err != nil {
			return nil, err
		}
		return []inference.RelayEvent{ev}, nil
	}
	v, ok := decodeAny(ev.Data)
	obj, isObj := v.(map[string]any)
	if !ok || !isObj {
		return []inference.RelayEvent{ev}, nil
	}
	var out []inference.RelayEvent
	if typ, _ := obj["type"].(string); typ != "" {
		if typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed" {
			if err := r.end(); err != nil {
				return nil, err
			}
		}
		if extra := r.responsesEvent(obj, typ); extra != nil {
			out = append(out, *extra)
		}
	} else {
		r.chunk(obj)
	}
	ev.Data = encodeAny(obj)
	return append(out, ev), nil
}

// text feeds index idx's next piece of text to its redactor and returns
// what may be sent.
func (r *Relayed) text(idx int, s string) string { return r.texts.add(idx, s, false) }

// flush returns index idx's held-back text.
func (r *Relayed) flush(idx int) string { return r.texts.add(idx, "", true) }

// chunk redacts a chat or completion chunk's choices.
func (r *Relayed) chunk(obj map[string]any) {
	choices, _ := obj["choices"].([]any)
	for _, c := range choices {
		ch, _ := c.(map[string]any)
		if ch == nil {
			continue
		}
		idx := 0
		if n, ok := ch["index"].(json.Number); ok {
			v, _ := n.Int64()
			idx = int(v)
		}
		holder, key := ch, "text"
		if d, ok := ch["delta"].(map[string]any); ok {
			holder, key = d, "content"
		}
		s, isStr := holder[key].(string)
		out := ""
		if isStr {
			out = r.text(idx, s)
		}
		if fr := ch["finish_reason"]; fr != nil {
			out += r.flush(idx)
		}
		if isStr || out != "" {
			holder[key] = out
		}
	}
}

// responsesEvent redacts a Responses API event; it returns an event to
// send before it (the held-back text as one more delta) and renumbers the
// events after it.
func (r *Relayed) responsesEvent(obj map[string]any, typ string) *inference.RelayEvent {
	idx := func() int {
		o, _ := obj["output_index"].(json.Number)
		c, _ := obj["content_index"].(json.Number)
		a, _ := o.Int64()
		b, _ := c.Int64()
		return int(a*1000 + b)
	}
	seq := func() int64 {
		n, _ := obj["sequence_number"].(json.Number)
		v, _ := n.Int64()
		return v
	}
	var extra *inference.RelayEvent
	switch typ {
	case "response.output_text.delta":
		if s, ok := obj["delta"].(string); ok {
			obj["delta"] = r.text(idx(), s)
		}
	case "response.output_text.done":
		if rest := r.flush(idx()); rest != "" {
			d := map[string]any{"type": "response.output_text.delta", "item_id": obj["item_id"], "output_index": obj["output_index"],
				"content_index": obj["content_index"], "delta": rest, "logprobs": []any{}, "sequence_number": seq() + r.shift}
			extra = &inference.RelayEvent{Event: "response.output_text.delta", Data: encodeAny(d), Output: true}
			r.shift++
		}
		fallthrough
	default:
		if r.op.Redacts() {
			walkText(obj, false, r.op.Redact)
		}
	}
	if _, ok := obj["sequence_number"]; ok && r.shift > 0 {
		obj["sequence_number"] = seq() + r.shift
	}
	return extra
}

// end evaluates the whole streamed answer (once) and keeps it as sent.
func (r *Relayed) end() error {
	if r.ended {
		return nil
	}
	r.ended = true
	all, sent := r.texts.whole()
	r.c.Keep(sent)
	if out := r.s.evaluate(r.op, all); out.Deny != nil {
		return Denied(out.Deny)
	}
	return nil
}
