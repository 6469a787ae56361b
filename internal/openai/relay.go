package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
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
	Tools               []json.RawMessage
	// PartKinds lists the content part types other than text that the
	// request carries (image_url, input_audio, file, input_image, …), and
	// PartParams where each first appears (messages[0].content).
	PartKinds, PartParams []string
	// Prompt is the request's text, for counting tokens when an upstream
	// reports no usage.
	Prompt string
}

// PeekRequest reads a Peek from an inference request body: chat
// (messages), completions (prompt), embeddings (input) or responses
// (input, instructions). Malformed JSON and wrong types of the fields it
// reads are errors, as for Decode.
func PeekRequest(body []byte) (Peek, error) {
	var raw struct {
		Peek
		Tools        []json.RawMessage `json:"tools"`
		Messages     []peekItem        `json:"messages"`
		Prompt       json.RawMessage   `json:"prompt"`
		Input        json.RawMessage   `json:"input"`
		Instructions json.RawMessage   `json:"instructions"`
	}
	if err := Decode(bytes.NewReader(body), &raw); err != nil {
		return Peek{}, err
	}
	p := raw.Peek
	p.Tools = raw.Tools
	var sb strings.Builder
	for i, m := range raw.Messages {
		m.collect(&sb, &p, fmt.Sprintf("messages[%d]", i))
	}
	peekValue(raw.Instructions, &sb, &p, "instructions")
	peekValue(raw.Prompt, &sb, &p, "prompt")
	peekValue(raw.Input, &sb, &p, "input")
	p.Prompt = sb.String()
	return p, nil
}

func (p *Peek) addKind(kind, param string) {
	if !slices.Contains(p.PartKinds, kind) {
		p.PartKinds = append(p.PartKinds, kind)
		p.PartParams = append(p.PartParams, param)
	}
}

// peekItem is a chat message or a Responses input item.
type peekItem struct {
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

func (m peekItem) collect(sb *strings.Builder, p *Peek, at string) {
	peekValue(m.Content, sb, p, at+".content")
	peekValue(m.Output, sb, p, at+".output")
}

// peekValue adds the text of a string, an array of strings, or an array
// of content parts or items to sb, and the part types other than text to
// p's kinds; at is v's place in the request.
func peekValue(v json.RawMessage, sb *strings.Builder, p *Peek, at string) {
	v = bytes.TrimSpace(v)
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
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return
		}
		for i, it := range items {
			it = bytes.TrimSpace(it)
			if len(it) == 0 || it[0] != '{' {
				peekValue(it, sb, p, at)
				continue
			}
			var part struct {
				Type string `json:"type"`
				Text string `json:"text"`
				peekItem
			}
			if json.Unmarshal(it, &part) != nil {
				continue
			}
			switch part.Type {
			case "text", "input_text", "output_text", "":
				sb.WriteString(part.Text)
				sb.WriteByte('\n')
			case "message", "function_call", "function_call_output", "reasoning", "item_reference":
				// Responses input items, not content parts
			default:
				p.addKind(part.Type, at)
			}
			part.collect(sb, p, fmt.Sprintf("%s[%d]", at, i))
		}
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
