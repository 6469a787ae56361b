package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/rawjson"
)

// ReadBody reads a request body whole, with Decode's errors for a body
// that is too large or cannot be read.
func ReadBody(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, decodeError(err)
	}
	return body, nil
}

// Peek is what Sovereign reads of an inference request before it knows
// the model's backend, and all it reads of one it relays to an upstream:
// the fields it acts on (model, stream, limits, capabilities, usage), with
// the rest left to the upstream as sent.
type Peek struct {
	Model               string         `json:"model"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	MaxOutputTokens     *int           `json:"max_output_tokens"`
	User                string         `json:"user"`
	Tools               []json.RawMessage
	// PartKinds lists the content part types other than text that the
	// request carries (image_url, input_audio, file, input_image, …), and
	// PartParams where each first appears (messages[0].content).
	PartKinds, PartParams []string
	// Prompt is the request's text, for counting tokens when an upstream
	// reports no usage.
	Prompt string
	// Grounded says the request asks for an answer from sources
	// (Sovereign's citations or sources fields), which Sovereign answers
	// itself; HasMessages that it has messages (a completion's other
	// grounded form).
	Grounded, HasMessages bool
}

// PeekRequest reads a Peek from an inference request body: chat
// (messages), completions (prompt), embeddings (input) or responses
// (input, instructions). Malformed JSON and wrong types of the fields it
// reads are errors, as for Decode.
//
// It runs on every relayed request, so it scans the body (one validity
// pass, then rawjson's scanner over the members it wants) rather than
// decoding it; the values it keeps are decoded alone.
func PeekRequest(body []byte) (Peek, error) {
	decodes.Add(1)
	var p Peek
	if !json.Valid(body) {
		return p, strictPeek(body)
	}
	var sb strings.Builder
	var bad bool
	err := rawjson.Members(body, func(k, v []byte) bool {
		var err error
		switch string(k) {
		case "model":
			err = json.Unmarshal(v, &p.Model)
		case "stream":
			err = json.Unmarshal(v, &p.Stream)
		case "stream_options":
			err = json.Unmarshal(v, &p.StreamOptions)
		case "max_tokens":
			err = json.Unmarshal(v, &p.MaxTokens)
		case "max_completion_tokens":
			err = json.Unmarshal(v, &p.MaxCompletionTokens)
		case "max_output_tokens":
			err = json.Unmarshal(v, &p.MaxOutputTokens)
		case "user":
			err = json.Unmarshal(v, &p.User)
		case "tools":
			if v[0] != '[' && v[0] != 'n' {
				bad = true
				return false
			}
			err = rawjson.Elements(v, func(t []byte) bool {
				p.Tools = append(p.Tools, json.RawMessage(t))
				return true
			})
		case "citations", "sources":
			p.Grounded = p.Grounded || v[0] != 'n'
		case "messages":
			if v[0] != '[' && v[0] != 'n' {
				bad = true
				return false
			}
			p.HasMessages = v[0] == '['
			i := 0
			err = rawjson.Elements(v, func(m []byte) bool {
				peekItem(m, &sb, &p, "messages["+strconv.Itoa(i)+"]")
				i++
				return true
			})
		case "instructions", "prompt", "input":
			peekValue(v, &sb, &p, string(k))
		}
		bad = err != nil
		return !bad
	})
	if err != nil || bad {
		// Not an object, or a field of the wrong type: the decoder says
		// which, as for any request.
		return Peek{}, strictPeek(body)
	}
	p.Prompt = sb.String()
	return p, nil
}

// strictPeek decodes the fields a Peek reads with encoding/json, for its
// error: the field and the type expected.
func strictPeek(body []byte) error {
	var raw struct {
		Peek
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := Decode(bytes.NewReader(body), &raw); err != nil {
		return err
	}
	return apierr.New(apierr.InvalidJSON, "the request body could not be read")
}

func (p *Peek) addKind(kind, param string) {
	if !slices.Contains(p.PartKinds, kind) {
		p.PartKinds = append(p.PartKinds, kind)
		p.PartParams = append(p.PartParams, param)
	}
}

// peekItem reads a chat message or a Responses input item: its content
// (or a function call's output).
func peekItem(item []byte, sb *strings.Builder, p *Peek, at string) {
	rawjson.Members(item, func(k, v []byte) bool {
		switch string(k) {
		case "content", "output":
			peekValue(v, sb, p, at+"."+string(k))
		}
		return true
	})
}

// peekValue adds the text of a string, an array of strings, or an array
// of content parts or items to sb, and the part types other than text to
// p's kinds; at is v's place in the request.
func peekValue(v []byte, sb *strings.Builder, p *Peek, at string) {
	if len(v) == 0 {
		return
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			sb.WriteString(s)
			sb.WriteByte('\n')
		}
	case '[':
		i := 0
		rawjson.Elements(v, func(it []byte) bool {
			defer func() { i++ }()
			if it[0] != '{' {
				peekValue(it, sb, p, at)
				return true
			}
			var typ, text []byte
			rawjson.Members(it, func(k, v []byte) bool {
				switch string(k) {
				case "type":
					typ = v
				case "text":
					text = v
				}
				return true
			})
			kind := ""
			if len(typ) > 0 {
				json.Unmarshal(typ, &kind)
			}
			switch kind {
			case "text", "input_text", "output_text", "":
				peekValue(text, sb, p, at)
			case "message", "function_call", "function_call_output", "reasoning", "item_reference":
				// Responses input items, not content parts
			default:
				p.addKind(kind, at)
			}
			peekItem(it, sb, p, at+"["+strconv.Itoa(i)+"]")
			return true
		})
	}
}

// MaxOutput is the output limit the request sets (0: none) and the field
// that sets it.
func (p Peek) MaxOutput() (int, string) {
	switch {
	case p.MaxCompletionTokens != nil:
		return *p.MaxCompletionTokens, "max_completion_tokens"
	case p.MaxTokens != nil:
		return *p.MaxTokens, "max_tokens"
	case p.MaxOutputTokens != nil:
		return *p.MaxOutputTokens, "max_output_tokens"
	}
	return 0, ""
}
