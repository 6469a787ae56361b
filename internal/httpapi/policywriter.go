package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// policyWriter applies a request's output-stage policies to an answer that
// exists only as rendered bytes: an upstream's relayed answer, and the
// answers not yet produced through a generate.Generation (answers with
// sources, the Responses API, comparisons). It is inert unless the
// request's admission armed the output stage and no Generation applied it
// to the native events already (generate.Call.OutputArmed).
//
//   - A JSON answer is held until it is complete, then evaluated: a deny
//     becomes a 403 policy_violation, redact rules redact its text.
//   - A streamed answer is redacted as it goes: each choice's (or output
//     part's) text runs through a pii.StreamRedactor, which holds back the
//     tail that could still become a match, so a match split across chunks
//     is never partly sent; the held-back text goes out with the choice's
//     last chunk. The whole answer is evaluated at its end: a deny then
//     ends the stream with an error event instead of its end marker.
type policyWriter struct {
	http.ResponseWriter
	s    *Server
	call *generate.Call

	mode   int
	op     *generate.OutputPolicy
	status int
	buf    bytes.Buffer
	// SSE state: the unfinished event, each text's redactor and original
	// text by index, the Responses API's sequence number shift, and
	// whether a deny ended the stream.
	pending []byte
	reds    map[int]*pii.StreamRedactor
	texts   map[int]*strings.Builder
	order   []int
	shift   int64
	stopped bool
	ended   bool
	// capture: the answer's text (as sent) goes to the request record;
	// sent collects it per index for a stream.
	capture bool
	sent    map[int]*strings.Builder
}

const (
	modeUndecided = iota
	modePass
	modeBuffer
	modeSSE
)

func (p *policyWriter) decide(code int) {
	if p.mode != modeUndecided {
		return
	}
	p.op, p.capture = p.call.OutputArmed()
	ct := p.Header().Get("Content-Type")
	switch {
	case (p.op == nil && !p.capture) || code != http.StatusOK:
		p.mode = modePass
	case strings.HasPrefix(ct, "text/event-stream"):
		p.mode = modeSSE
		p.reds, p.texts, p.sent = map[int]*pii.StreamRedactor{}, map[int]*strings.Builder{}, map[int]*strings.Builder{}
	default:
		p.mode = modeBuffer
	}
}

// WriteHeader holds the status of a JSON answer until it is evaluated.
func (p *policyWriter) WriteHeader(code int) {
	p.decide(code)
	if p.mode == modeBuffer {
		p.status = code
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *policyWriter) Write(b []byte) (int, error) {
	if p.mode == modeUndecided {
		p.decide(http.StatusOK)
		if p.mode == modeBuffer {
			p.status = http.StatusOK
		}
	}
	switch p.mode {
	case modeBuffer:
		return p.buf.Write(b)
	case modeSSE:
		return len(b), p.sse(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush passes through, except for a held JSON answer.
func (p *policyWriter) Flush() {
	if p.mode == modeBuffer {
		return
	}
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// answerKeys are the members whose strings are an answer's text, in
// every shape Sovereign answers with (chat, completions, Responses,
// comparison results).
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

// evaluate runs the output stage on the answer's text and records the
// decisions.
func (p *policyWriter) evaluate(text string) policy.Outcome {
	return p.s.Gen.Evaluate(p.op, text)
}

// finish sends a held JSON answer once evaluated. The handler adapter
// calls it when the handler returns.
func (p *policyWriter) finish() {
	if p.mode != modeBuffer {
		return
	}
	body := p.buf.Bytes()
	v, ok := decodeAny(body)
	if !ok {
		p.send(body)
		return
	}
	var text strings.Builder
	walkText(v, false, func(s string) string { text.WriteString(s); text.WriteByte('\n'); return s })
	out := p.evaluate(text.String())
	if out.Deny != nil {
		p.Header().Del("Content-Length")
		apierr.Write(p.ResponseWriter, generate.Denied(out.Deny))
		return
	}
	if len(out.Redact) > 0 && p.op.Redacts() {
		walkText(v, false, p.op.Redact)
		body = encodeAny(v)
		text.Reset()
		walkText(v, false, func(s string) string { text.WriteString(s); text.WriteByte('\n'); return s })
	}
	p.captured(strings.TrimSuffix(text.String(), "\n"))
	p.send(body)
}

// captured hands the answer's text, as sent, to the request record.
func (p *policyWriter) captured(text string) {
	p.call.Keep(text)
}

func (p *policyWriter) send(body []byte) {
	p.Header().Set("Content-Length", strconv.Itoa(len(body)))
	p.ResponseWriter.WriteHeader(p.status)
	p.ResponseWriter.Write(body)
}

// sse takes streamed bytes and passes each complete event on, redacted.
func (p *policyWriter) sse(b []byte) error {
	if p.stopped {
		return nil
	}
	p.pending = append(p.pending, b...)
	for {
		i := bytes.Index(p.pending, []byte("\n\n"))
		if i < 0 {
			return nil
		}
		ev := p.pending[:i+2]
		out := p.event(ev)
		p.pending = p.pending[i+2:]
		if len(out) > 0 {
			if _, err := p.ResponseWriter.Write(out); err != nil {
				return err
			}
		}
		if p.stopped {
			return nil
		}
	}
}

// event rewrites one SSE event (its lines, ending "\n\n").
func (p *policyWriter) event(ev []byte) []byte {
	lines := bytes.Split(bytes.TrimRight(ev, "\n"), []byte("\n"))
	di := -1
	for i, l := range lines {
		if bytes.HasPrefix(l, []byte("data:")) {
			di = i
		}
	}
	if di < 0 {
		return ev
	}
	data := bytes.TrimSpace(lines[di][len("data:"):])
	if string(data) == "[DONE]" {
		if p.end() {
			return nil
		}
		return ev
	}
	v, ok := decodeAny(data)
	obj, isObj := v.(map[string]any)
	if !ok || !isObj {
		return ev
	}
	var extra []byte
	if typ, _ := obj["type"].(string); typ != "" {
		if typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed" {
			if p.end() {
				return nil
			}
		}
		extra = p.responsesEvent(obj, typ)
	} else {
		p.chunk(obj)
	}
	lines[di] = append([]byte("data: "), encodeAny(obj)...)
	return append(extra, append(bytes.Join(lines, []byte("\n")), '\n', '\n')...)
}

// text feeds index idx's next piece of text to its redactor and returns
// what may be sent.
func (p *policyWriter) text(idx int, s string) string {
	t := p.texts[idx]
	if t == nil {
		t = &strings.Builder{}
		p.texts[idx] = t
		p.order = append(p.order, idx)
		if r := p.op.NewStreamRedactor(); r != nil {
			p.reds[idx] = r
		}
	}
	t.WriteString(s)
	emit := s
	if r := p.reds[idx]; r != nil {
		emit, _ = r.Write(s)
	}
	p.record(idx, emit)
	return emit
}

// record keeps what was sent of index idx's text, for capture.
func (p *policyWriter) record(idx int, s string) {
	if !p.capture || s == "" {
		return
	}
	b := p.sent[idx]
	if b == nil {
		b = &strings.Builder{}
		p.sent[idx] = b
	}
	if b.Len() < 2*records.MaxCapture {
		b.WriteString(s)
	}
}

// flush returns index idx's held-back text.
func (p *policyWriter) flush(idx int) string {
	if r := p.reds[idx]; r != nil {
		emit, _ := r.Flush()
		delete(p.reds, idx)
		p.record(idx, emit)
		return emit
	}
	return ""
}

// chunk redacts a chat or completion chunk's choices.
func (p *policyWriter) chunk(obj map[string]any) {
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
			out = p.text(idx, s)
		}
		if fr := ch["finish_reason"]; fr != nil {
			out += p.flush(idx)
		}
		if isStr || out != "" {
			holder[key] = out
		}
	}
}

// responsesEvent redacts a Responses API event; it returns an event to
// send before it (the held-back text as one more delta) and renumbers the
// events after it.
func (p *policyWriter) responsesEvent(obj map[string]any, typ string) []byte {
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
	var extra []byte
	switch typ {
	case "response.output_text.delta":
		if s, ok := obj["delta"].(string); ok {
			obj["delta"] = p.text(idx(), s)
		}
	case "response.output_text.done":
		if rest := p.flush(idx()); rest != "" {
			d := map[string]any{"type": "response.output_text.delta", "item_id": obj["item_id"], "output_index": obj["output_index"],
				"content_index": obj["content_index"], "delta": rest, "logprobs": []any{}, "sequence_number": seq() + p.shift}
			extra = append(append([]byte("event: response.output_text.delta\ndata: "), encodeAny(d)...), '\n', '\n')
			p.shift++
		}
		fallthrough
	default:
		if p.op.Redacts() {
			walkText(obj, false, p.op.Redact)
		}
	}
	if _, ok := obj["sequence_number"]; ok && p.shift > 0 {
		obj["sequence_number"] = seq() + p.shift
	}
	return extra
}

// end evaluates the whole streamed answer; on a deny it sends an error
// event in place of the stream's end and reports true.
func (p *policyWriter) end() bool {
	if p.ended {
		return p.stopped
	}
	p.ended = true
	var all, sent strings.Builder
	for n, i := range p.order {
		all.WriteString(p.texts[i].String())
		all.WriteByte('\n')
		if b := p.sent[i]; b != nil {
			if n > 0 {
				sent.WriteByte('\n')
			}
			sent.WriteString(b.String())
		}
	}
	p.captured(sent.String())
	out := p.evaluate(all.String())
	if out.Deny == nil {
		return false
	}
	env := generate.Denied(out.Deny).Envelope()
	b, _ := json.Marshal(env)
	p.ResponseWriter.Write(append(append([]byte("data: "), b...), '\n', '\n'))
	p.stopped = true
	return true
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (p *policyWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
