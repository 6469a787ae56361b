package runner

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/grammar"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
)

// Tool calls on local models take one of two formats:
//
//   - native: the model's chat template renders the tools, and llama.cpp's
//     chat code (common/chat) knows the family's tool-call format; it gives
//     the grammar that keeps calls parseable (lazy when the model may also
//     answer with text) and the parser that reads them back;
//   - generic: for a model without a template (a base model, like the
//     default one) or whose template ignores tools, the tools are described
//     in a system message and a call is the JSON envelope
//     {"tool_calls": [{"name": …, "arguments": {…}}]}, constrained by a
//     grammar compiled from the tools' JSON Schemas.
//
// tool_choice "required" (or a named function) makes the grammar apply
// from the first token; "auto" makes it lazy; "none" renders the tools
// (native) or leaves them out (generic) and constrains nothing.

// genericEnvelope is how a generic-format call starts.
const genericEnvelope = `{"tool_calls"`

// genericPreamble introduces the tools to a model without a tool format.
const genericPreamble = `You can call these functions (JSON Schema of their arguments):
%s
To call functions, answer with JSON only, in this form:
{"tool_calls": [{"name": "<function name>", "arguments": {<arguments>}}]}
`

// formatted is a request's prompt and how its output is constrained and
// read back.
type formatted struct {
	text     string
	stops    []string
	trimLeft bool
	grammar  string
	triggers []inference.GrammarTrigger
	// preserved are special tokens the output shows as text (a native
	// format's markers, such as <tool_call>).
	preserved []string
	// prefill is text the grammar starts with that the prompt already
	// holds (a native format's generation prompt).
	prefill string
	// tools reads tool calls out of the output; nil for a request
	// without tools.
	tools *toolReader
}

// formatChat renders req's messages (and tools) as a prompt.
func (s *Server) formatChat(req *inference.CompletionRequest) (formatted, error) {
	calling := len(req.Tools) > 0 && req.ToolChoice != inference.ToolChoiceNone
	tools := req.Tools
	if req.ToolName != "" {
		for _, t := range req.Tools {
			if t.Name == req.ToolName {
				tools = []inference.Tool{t}
			}
		}
	}
	choice := req.ToolChoice
	if choice == "" {
		choice = inference.ToolChoiceAuto
	}
	// A named function is one call of it (as OpenAI answers one): with
	// parallel calls allowed, a small model repeats the call until
	// max_tokens, and clients that name a function (instructor, LangChain's
	// structured output) read exactly one.
	parallel := req.ParallelToolCalls && req.ToolName == ""
	if s.chat != nil && len(req.Tools) > 0 {
		p, err := s.apply(req.Messages, tools, choice, parallel)
		if err != nil {
			return formatted{}, err
		}
		// Native when llama.cpp constrains the format, or, for auto, when
		// the template at least shows the tools (its parser then reads the
		// family's calls unconstrained, as llama-server does).
		rendersTools := len(tools) > 0 && strings.Contains(p.Prompt, tools[0].Name)
		if p.Grammar != "" || !calling || choice == inference.ToolChoiceAuto && rendersTools {
			f := formatted{text: p.Prompt, stops: p.AdditionalStops}
			if calling {
				f.preserved = p.PreservedTokens
				if p.Grammar != "" {
					f.grammar = p.Grammar
					if p.GrammarLazy {
						f.triggers = s.triggers(p.GrammarTriggers)
					} else if g, ok := dropLeadingLiteral(f.grammar, p.GenerationPrompt); ok {
						f.grammar = g
					} else {
						f.prefill = p.GenerationPrompt
					}
					if choice == inference.ToolChoiceRequired {
						f.grammar = dropFreeText(f.grammar)
					}
				}
				parser, err := llamacpp.NewChatParser(p)
				if err != nil {
					return formatted{}, err
				}
				f.tools = &toolReader{native: parser, tools: tools, forced: choice == inference.ToolChoiceRequired,
					jsonCalls: choice == inference.ToolChoiceAuto}
			}
			return f, nil
		}
		// The template ignores tools: the generic format below.
	}
	msgs := req.Messages
	if calling || hasToolTurns(msgs) {
		msgs = genericMessages(msgs, tools, calling)
	}
	var f formatted
	if s.chat != nil {
		p, err := s.apply(msgs, nil, "", false)
		if err != nil {
			return formatted{}, err
		}
		f = formatted{text: p.Prompt, stops: p.AdditionalStops}
	} else if s.template != "" {
		return formatted{}, apierr.Invalid("messages", fmt.Sprintf("this model's chat template cannot be loaded (%v); send a raw prompt to /v1/completions instead", s.chatErr))
	} else {
		f = formatted{text: transcript(msgs), stops: transcriptStops, trimLeft: true}
	}
	if calling {
		g, err := envelopeGrammar(tools, parallel)
		if err != nil {
			return formatted{}, err
		}
		f.grammar = g
		if choice == inference.ToolChoiceAuto {
			// The envelope is enforced once the output starts with it; any
			// other start is a text answer.
			f.triggers = []inference.GrammarTrigger{{Pattern: `^\s*(\{\s*"tool_calls"[\s\S]*)$`}}
		}
		f.tools = &toolReader{tools: tools, forced: choice == inference.ToolChoiceRequired}
	}
	return f, nil
}

// apply renders messages and tools with the model's template; a template
// that refuses them is the caller's error.
func (s *Server) apply(msgs []inference.Message, tools []inference.Tool, choice string, parallel bool) (*llamacpp.ChatPrompt, error) {
	req := llamacpp.ChatRequest{Messages: openAIMessages(msgs), AddGenerationPrompt: true, EnableThinking: true,
		ToolChoice: choice, ParallelToolCalls: parallel}
	for _, t := range tools {
		req.Tools = append(req.Tools, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.Parameters}})
	}
	p, err := s.chat.Apply(req)
	var te *llamacpp.TemplateError
	if errors.As(err, &te) {
		return nil, apierr.Invalid("messages", "this model's chat template refused the messages: "+te.Msg)
	}
	return p, err
}

// triggers resolves a native format's grammar triggers: a word that is one
// token of the vocabulary triggers on that token, other words and patterns
// on the text.
func (s *Server) triggers(ts []llamacpp.GrammarTrigger) []inference.GrammarTrigger {
	var out []inference.GrammarTrigger
	for _, t := range ts {
		switch t.Type {
		case 0: // token
			tok := int32(t.Token)
			out = append(out, inference.GrammarTrigger{Token: &tok})
		case 1: // word
			if toks, err := s.model.Tokenize(t.Value, false, true); err == nil && len(toks) == 1 {
				tok := int32(toks[0])
				out = append(out, inference.GrammarTrigger{Token: &tok})
			} else {
				out = append(out, inference.GrammarTrigger{Pattern: regexEscape(t.Value)})
			}
		case 2: // pattern, searched anywhere
			out = append(out, inference.GrammarTrigger{Pattern: t.Value})
		case 3: // pattern over the whole output
			p := t.Value
			if !strings.HasPrefix(p, "^") {
				p = "^" + p
			}
			if !strings.HasSuffix(p, "$") {
				p += "$"
			}
			out = append(out, inference.GrammarTrigger{Pattern: p})
		}
	}
	return out
}

// regexEscape quotes s for an ECMAScript regular expression (llama.cpp's
// std::regex).
func regexEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\^$.|?*+()[]{}/-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// openAIMessages renders native messages in OpenAI's shape, which llama.cpp's
// chat code reads.
func openAIMessages(msgs []inference.Message) []map[string]any {
	out := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		o := map[string]any{"role": m.Role, "content": m.Content}
		if len(m.ToolCalls) > 0 {
			calls := make([]map[string]any, len(m.ToolCalls))
			for k, c := range m.ToolCalls {
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				calls[k] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
			}
			o["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			o["tool_call_id"] = m.ToolCallID
		}
		if m.Name != "" {
			o["name"] = m.Name
		}
		out[i] = o
	}
	return out
}

func hasToolTurns(msgs []inference.Message) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return true
		}
	}
	return false
}

// genericMessages rewrites a conversation for the generic format: the
// tools are described in the system message (when calls are allowed), an
// assistant's calls become their envelope text, and a tool result becomes
// a user message naming the call it answers.
func genericMessages(msgs []inference.Message, tools []inference.Tool, calling bool) []inference.Message {
	out := make([]inference.Message, 0, len(msgs)+1)
	if calling {
		var list strings.Builder
		for _, t := range tools {
			fmt.Fprintf(&list, "- %s: %s\n  arguments: %s\n", t.Name, oneLine(t.Description), compactJSON(t.Parameters))
		}
		pre := fmt.Sprintf(genericPreamble, strings.TrimRight(list.String(), "\n"))
		if len(msgs) > 0 && msgs[0].Role == "system" {
			out = append(out, inference.Message{Role: "system", Content: msgs[0].Content + "\n\n" + pre})
			msgs = msgs[1:]
		} else {
			out = append(out, inference.Message{Role: "system", Content: pre})
		}
	}
	names := map[string]string{}
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			type call struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			env := struct {
				ToolCalls []call `json:"tool_calls"`
			}{}
			for _, c := range m.ToolCalls {
				args := json.RawMessage(c.Arguments)
				if !json.Valid(args) {
					args = json.RawMessage("{}")
				}
				env.ToolCalls = append(env.ToolCalls, call{c.Name, args})
				names[c.ID] = c.Name
			}
			b, _ := json.Marshal(env)
			text := string(b)
			if m.Content != "" {
				text = m.Content + "\n" + text
			}
			out = append(out, inference.Message{Role: "assistant", Content: text})
		case m.Role == "tool":
			name := names[m.ToolCallID]
			if name == "" {
				name = m.Name
			}
			out = append(out, inference.Message{Role: "user", Content: fmt.Sprintf("Result of %s (call %s):\n%s", name, m.ToolCallID, m.Content)})
		default:
			out = append(out, inference.Message{Role: m.Role, Content: m.Content})
		}
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func compactJSON(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// envelopeGrammar compiles the generic envelope for tools into GBNF: an
// object whose tool_calls are one call (or, with parallel calls, one or
// more), each naming a tool and giving arguments valid under its schema.
// Each tool's schema keeps its own "#/…" references, rebased under the
// envelope.
func envelopeGrammar(tools []inference.Tool, parallel bool) (string, error) {
	var alts []any
	for i, t := range tools {
		var params any
		if err := json.Unmarshal(t.Parameters, &params); err != nil {
			return "", apierr.Invalid("tools", fmt.Sprintf("tool %q: parameters: %v", t.Name, err))
		}
		base := fmt.Sprintf("#/properties/tool_calls/items/anyOf/%d/properties/arguments", i)
		alts = append(alts, map[string]any{
			"type":                 "object",
			"properties":           orderedCall{name: t.Name, args: rebase(params, base)},
			"required":             []string{"name", "arguments"},
			"additionalProperties": false,
		})
	}
	items := map[string]any{"type": "array", "items": map[string]any{"anyOf": alts}, "minItems": 1}
	if !parallel {
		items["maxItems"] = 1
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"tool_calls": items},
		"required": []string{"tool_calls"}, "additionalProperties": false}
	b, err := json.Marshal(schema)
	if err != nil {
		return "", err
	}
	g, err := grammar.FromJSONSchema(b)
	if err != nil {
		return "", apierr.Invalid("tools", "the tools' parameters cannot be turned into a grammar: "+err.Error())
	}
	return g, nil
}

// orderedCall marshals a call's properties with "name" before "arguments"
// (the order the grammar then asks the model for).
type orderedCall struct {
	name string
	args any
}

func (o orderedCall) MarshalJSON() ([]byte, error) {
	n, _ := json.Marshal(map[string]any{"const": o.name})
	a, err := json.Marshal(o.args)
	if err != nil {
		return nil, err
	}
	return []byte(`{"name":` + string(n) + `,"arguments":` + string(a) + `}`), nil
}

// rebase prefixes the local references ("#…") in a schema with base.
func rebase(v any, base string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" && strings.HasPrefix(s, "#") {
				out[k] = base + strings.TrimPrefix(s, "#")
				continue
			}
			out[k] = rebase(e, base)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rebase(e, base)
		}
		return out
	}
	return v
}

// newCallID returns an id for a tool call, in OpenAI's form.
func newCallID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "call_" + string(b)
}

// toolReader turns what a model generates for a request with tools into
// content and tool-call events, as they come.
type toolReader struct {
	native *llamacpp.ChatParser // nil: the generic envelope
	raw    strings.Builder      // the output so far
	// content is the content sent so far (native), sent the bytes of raw
	// sent as content (generic).
	content string
	sent    int
	calls   []sentCall
	mode    int // generic: undecided, text or envelope
	// tools are the tools offered; forced says the request forces a call
	// (tool_choice required or a function named). jsonCalls (native
	// format, tool_choice auto) reads an answer that is a call written as
	// plain JSON as that call (jsoncall.go). finish is the finish reason
	// of the event being read.
	tools     []inference.Tool
	forced    bool
	jsonCalls bool
	finish    string
}

type sentCall struct {
	id, name string
	args     string
}

const (
	modeUndecided = iota
	modeText
	modeEnvelope
)

// read takes one engine event and returns the events to send instead.
func (t *toolReader) read(ev inference.Event) []inference.Event {
	t.raw.WriteString(ev.Text)
	t.finish = ev.FinishReason
	var out inference.Event
	if t.native != nil {
		out = t.readNative(ev.Done)
	} else {
		out = t.readGeneric(ev.Done)
	}
	out.Logprobs, out.Done, out.Usage, out.Error = ev.Logprobs, ev.Done, ev.Usage, ev.Error
	if ev.Done {
		out.FinishReason = ev.FinishReason
		if len(t.calls) > 0 && ev.FinishReason == inference.FinishStop {
			out.FinishReason = inference.FinishToolCalls
		}
	}
	if out.Text == "" && len(out.ToolCalls) == 0 && len(out.Logprobs) == 0 && !out.Done && out.Error == "" {
		return nil
	}
	return []inference.Event{out}
}

// readNative parses the whole output so far with the format's parser and
// sends what is new: more content, new calls, more arguments.
func (t *toolReader) readNative(done bool) inference.Event {
	var out inference.Event
	// Output cut short by max_tokens is read as partial too: a call being
	// written comes back with the arguments written so far.
	cut := done && t.finish == inference.FinishLength
	msg, err := t.native.Parse(t.raw.String(), !done || cut)
	if err != nil {
		if done && !(cut && t.forced) {
			// Unparseable at the end: what was not sent goes out as text
			// (but not a forced call's: the grammar made it all markup).
			out.Text = strings.TrimPrefix(t.raw.String(), t.content)
		}
		return out
	}
	if t.jsonCalls {
		if len(msg.ToolCalls) > 0 || t.content != "" || jsonCallProgress(msg.Content, t.tools) == jsonCallText {
			t.jsonCalls = false // decided: not a call written as JSON
		} else if !done {
			return out // held back while it may be one
		} else {
			c, ok := jsonAnswerCall(msg.Content, t.tools)
			if !ok && cut {
				c, ok = jsonCutCall(msg.Content, t.tools)
			}
			if ok {
				t.addCall(&out, c)
				return out
			}
		}
	}
	if cut && len(msg.ToolCalls) == 0 && len(t.calls) == 0 && t.forced && len(t.tools) == 1 {
		// A forced call cut before its name was written: the name is
		// known all the same, and the arguments are empty so far.
		t.addCall(&out, envelopeCall{Name: t.tools[0].Name})
		return out
	}
	if strings.HasPrefix(msg.Content, t.content) {
		out.Text = msg.Content[len(t.content):]
		t.content = msg.Content
	}
	for i, c := range msg.ToolCalls {
		if c.Function.Name == "" {
			break
		}
		if i >= len(t.calls) {
			id := c.ID
			if id == "" {
				id = newCallID()
			}
			t.calls = append(t.calls, sentCall{id: id, name: c.Function.Name, args: c.Function.Arguments})
			out.ToolCalls = append(out.ToolCalls, inference.ToolCallDelta{Index: i, ID: id, Name: c.Function.Name, Arguments: c.Function.Arguments})
			continue
		}
		sc := &t.calls[i]
		if len(c.Function.Arguments) > len(sc.args) && strings.HasPrefix(c.Function.Arguments, sc.args) {
			out.ToolCalls = append(out.ToolCalls, inference.ToolCallDelta{Index: i, Arguments: c.Function.Arguments[len(sc.args):]})
			sc.args = c.Function.Arguments
		}
	}
	return out
}

// readGeneric decides from the first characters whether the output is the
// envelope (held back and parsed at the end) or text (sent as it comes).
func (t *toolReader) readGeneric(done bool) inference.Event {
	var out inference.Event
	raw := t.raw.String()
	if t.mode == modeUndecided {
		lead := strings.TrimLeft(raw, " \t\r\n")
		if strings.HasPrefix(lead, "{") {
			lead = "{" + strings.TrimLeft(lead[1:], " \t\r\n")
		}
		switch {
		case t.forced:
			// The grammar holds a forced answer to the envelope from the
			// first token on, however soon it is cut.
			t.mode = modeEnvelope
		case len(lead) >= len(genericEnvelope) && strings.HasPrefix(lead, genericEnvelope):
			t.mode = modeEnvelope
		case strings.HasPrefix(genericEnvelope, lead) && !done:
			return out // could still become the envelope
		case strings.HasPrefix(genericEnvelope, lead) && len(lead) >= len(`{"t`) && t.finish == inference.FinishLength:
			// Cut short while starting the envelope: a call was coming.
			t.mode = modeEnvelope
		default:
			t.mode = modeText
		}
	}
	if t.mode == modeText {
		out.Text = raw[t.sent:]
		t.sent = len(raw)
		return out
	}
	if !done {
		return out
	}
	calls, tail := envelopeCalls(raw)
	if tail == nil && len(calls) == 0 {
		// Cut before the first call's object: the envelope still says a
		// call was coming.
		tail = &partialCall{}
	}
	if tail != nil && t.finish == inference.FinishLength {
		// Cut short by max_tokens inside a call: the call with the
		// arguments written so far (possibly not whole JSON), as OpenAI
		// answers a call cut short, when its function is known.
		if name := t.resolve(tail.name, tail.nameWhole); name != "" {
			calls = append(calls, envelopeCall{Name: name, partial: tail.arguments})
		}
	}
	if len(calls) == 0 {
		if t.finish == inference.FinishLength {
			// Cut before even the function's name was known: no call,
			// and no envelope text either, which is this server's format
			// rather than the model's answer.
			return out
		}
		// Not a call after all: the text is all there is.
		out.Text = raw
		return out
	}
	for _, c := range calls {
		t.addCall(&out, c)
	}
	return out
}

// resolve names the function a call cut short was calling: its name when
// whole, else the one tool offered whose name starts with the part written
// (the grammar allows only the tools' names); "" when that is not one.
func (t *toolReader) resolve(name string, whole bool) string {
	if whole {
		return name
	}
	found := ""
	for _, tool := range t.tools {
		if strings.HasPrefix(tool.Name, name) {
			if found != "" {
				return ""
			}
			found = tool.Name
		}
	}
	return found
}

// addCall sends a whole call (or, cut short, one with the arguments
// written so far) as call number len(t.calls).
func (t *toolReader) addCall(out *inference.Event, c envelopeCall) {
	id := newCallID()
	args := c.partial
	if c.Arguments != nil {
		args = "{}"
		if len(c.Arguments) > 0 {
			args = compactJSON(c.Arguments)
		}
	}
	out.ToolCalls = append(out.ToolCalls, inference.ToolCallDelta{Index: len(t.calls), ID: id, Name: c.Name, Arguments: args})
	t.calls = append(t.calls, sentCall{id: id, name: c.Name, args: args})
}

// envelopeCall is one call of the generic envelope: Arguments when whole,
// partial (the text written so far) when cut short.
type envelopeCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	partial   string
}

// partialCall is the call an envelope cut short was writing: its name, or
// as much of it as was written, and the text of its arguments so far.
type partialCall struct {
	name      string
	nameWhole bool
	arguments string
}

// envelopeCalls reads the calls of a generic envelope, in order, as far as
// they are whole (a model may repeat calls until max_tokens), and the call
// after them that was cut short, if any. Reading stops at the first call
// that is not whole or names no function.
func envelopeCalls(raw string) ([]envelopeCall, *partialCall) {
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil
	}
	if tok, err := dec.Token(); err != nil || tok != "tool_calls" {
		return nil, nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, nil
	}
	var calls []envelopeCall
	for dec.More() {
		at := dec.InputOffset()
		var c envelopeCall
		if err := dec.Decode(&c); err != nil {
			tail, _ := cutCallKeys(raw[at:], []string{"arguments"})
			return calls, tail
		}
		if c.Name == "" {
			break
		}
		if c.Arguments == nil {
			c.Arguments = json.RawMessage{}
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// cutCallKeys reads a call object that ends early: s starts at the object
// (after any separator) and holds "name", then the arguments under one of
// argKeys, in the order the grammar (and models) write them. It returns
// the call as far as it is written — nil before its object starts, an
// empty name not whole until the name's value is — and whether s is still
// the start of such an object (the arguments' own text is not checked).
func cutCallKeys(s string, argKeys []string) (*partialCall, bool) {
	s = strings.TrimLeft(s, " \t\r\n,")
	if s == "" {
		return nil, true
	}
	rest, ok := strings.CutPrefix(s, "{")
	if !ok {
		return nil, false
	}
	c := &partialCall{}
	rest = skipSpace(rest)
	if rest == "" {
		return c, true
	}
	key, after, whole := jsonString(rest)
	if !whole {
		return c, strings.HasPrefix(`"name"`, rest)
	}
	if key != "name" {
		return c, false
	}
	if rest = skipSpace(after); rest == "" {
		return c, true
	}
	if rest, ok = strings.CutPrefix(rest, ":"); !ok {
		return c, false
	}
	if rest = skipSpace(rest); rest == "" {
		return c, true
	}
	if rest[0] != '"' {
		return c, false
	}
	c.name, after, c.nameWhole = jsonString(rest)
	if !c.nameWhole {
		return c, true
	}
	if rest = skipSpace(after); rest == "" {
		return c, true
	}
	if rest, ok = strings.CutPrefix(rest, ","); !ok {
		return c, false
	}
	if rest = skipSpace(rest); rest == "" {
		return c, true
	}
	key, after, whole = jsonString(rest)
	if !whole {
		for _, k := range argKeys {
			if strings.HasPrefix(`"`+k+`"`, rest) {
				return c, true
			}
		}
		return c, false
	}
	if !slices.Contains(argKeys, key) {
		return c, false
	}
	if rest = skipSpace(after); rest == "" {
		return c, true
	}
	if rest, ok = strings.CutPrefix(rest, ":"); !ok {
		return c, false
	}
	c.arguments = skipSpace(rest)
	// Arguments that are whole (the cut came after them) read as JSON.
	if a := strings.TrimRight(c.arguments, " \t\r\n"); a != "" && json.Valid([]byte(a)) {
		c.arguments = compactJSON(json.RawMessage(a))
	}
	return c, true
}

func skipSpace(s string) string { return strings.TrimLeft(s, " \t\r\n") }

// jsonString reads the JSON string s starts with: its value, the text
// after it, and whether it was whole; a string cut short gives the part
// written so far (an escape cut in the middle left out).
func jsonString(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			var v string
			if json.Unmarshal([]byte(s[:i+1]), &v) != nil {
				return "", s, false
			}
			return v, s[i+1:], true
		}
	}
	// Cut short: decode what is whole of it.
	part := s
	for len(part) > 1 {
		var v string
		if json.Unmarshal([]byte(part+`"`), &v) == nil {
			return v, "", false
		}
		part = part[:len(part)-1]
	}
	return "", "", false
}

// dropLeadingLiteral removes the literal lit from the start of the root
// rule of grammar g. llama.cpp's tool-call grammars start with the
// template's generation prompt (e.g. "<|im_start|>assistant\n"), which the
// prompt already ends with; llama-server feeds its tokens to the grammar
// before sampling, which only works when they tokenize as the grammar
// spells them (a SentencePiece vocabulary writes a space before
// "assistant" after a special token). Without the literal the grammar
// starts where the answer does.
func dropLeadingLiteral(g, lit string) (string, bool) {
	if lit == "" {
		return g, true
	}
	esc := strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", "\\n", "\r", "\\r").Replace(lit)
	head := "root ::= \"" + esc + "\" "
	lines := strings.Split(g, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, head) {
			lines[i] = "root ::= " + strings.TrimPrefix(l, head)
			return strings.Join(lines, "\n"), true
		}
	}
	return g, false
}

// freeText is the optional text a llama.cpp tool-call grammar lets a model
// write before its calls (until-N matches anything up to the call marker).
var freeText = regexp.MustCompile(`(?m)^root ::= ((?:space )?)until-\d+\? `)

// dropFreeText makes a call the first thing the model writes: tool_choice
// "required" (or a named function) forces a call, while llama.cpp's grammar
// allows any text before one, which a model may write until max_tokens.
func dropFreeText(g string) string {
	return freeText.ReplaceAllString(g, "root ::= $1")
}
