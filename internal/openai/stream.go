package openai

import (
	"errors"
	"io"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/citation"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// ChatStream renders native events as chat.completion.chunk objects.
type ChatStream struct {
	ID           string
	Model        string
	Created      int64
	IncludeUsage bool
	Logprobs     bool
	// Legacy sends calls in the legacy shape (delta.function_call,
	// finish_reason "function_call"), for a request that used functions.
	Legacy bool
}

// NewChatStream starts a chat stream for model.
func NewChatStream(model string, includeUsage, logprobs bool) *ChatStream {
	return &ChatStream{ID: NewID("chatcmpl-"), Model: model, Created: Now().Unix(), IncludeUsage: includeUsage, Logprobs: logprobs}
}

func (c *ChatStream) chunk(choices []ChunkChoice) ChatChunk {
	return ChatChunk{ID: c.ID, Object: "chat.completion.chunk", Created: c.Created, Model: c.Model, SystemFingerprint: Fingerprint, Choices: choices}
}

// First is the opening chunk of choice index, carrying the assistant role.
func (c *ChatStream) First(index int) ChatChunk {
	empty := ""
	return c.chunk([]ChunkChoice{{Index: index, Delta: Delta{Role: "assistant", Content: &empty}}})
}

// Chunks renders one native event of choice index: a content chunk, and a
// final chunk with the finish reason.
func (c *ChatStream) Chunks(ev inference.Event, index int) []ChatChunk {
	var out []ChatChunk
	if ev.Text != "" || len(ev.Logprobs) > 0 {
		text := ev.Text
		ch := ChunkChoice{Index: index, Delta: Delta{Content: &text}}
		if c.Logprobs {
			ch.Logprobs = &Logprobs{Content: NewLogprobs(ev.Logprobs)}
		}
		out = append(out, c.chunk([]ChunkChoice{ch}))
	}
	if len(ev.ToolCalls) > 0 && !c.Legacy {
		out = append(out, c.chunk([]ChunkChoice{{Index: index, Delta: Delta{ToolCalls: toolCallDeltas(ev.ToolCalls)}}}))
	}
	for _, d := range ev.ToolCalls {
		// A legacy answer is one call; the model is held to one.
		if c.Legacy && d.Index == 0 {
			out = append(out, c.chunk([]ChunkChoice{{Index: index, Delta: Delta{FunctionCall: &FunctionDelta{Name: d.Name, Arguments: d.Arguments}}}}))
		}
	}
	if ev.Done {
		fr := ev.FinishReason
		if c.Legacy && fr == inference.FinishToolCalls {
			fr = FinishFunctionCall
		}
		out = append(out, c.chunk([]ChunkChoice{{Index: index, Delta: Delta{}, FinishReason: &fr}}))
	}
	return out
}

// toolCallDeltas renders native tool-call pieces: the first piece of a
// call has its id, type and name, as OpenAI streams them.
func toolCallDeltas(ds []inference.ToolCallDelta) []ToolCallDelta {
	out := make([]ToolCallDelta, len(ds))
	for i, d := range ds {
		out[i].Index, out[i].ID = d.Index, d.ID
		if d.ID != "" {
			out[i].Type = "function"
		}
		out[i].Function.Name, out[i].Function.Arguments = d.Name, d.Arguments
	}
	return out
}

// addToolCalls folds tool-call pieces into whole calls.
func addToolCalls(calls []ToolCallParam, ds []inference.ToolCallDelta) []ToolCallParam {
	for _, d := range ds {
		for len(calls) <= d.Index {
			calls = append(calls, ToolCallParam{Type: "function"})
		}
		c := &calls[d.Index]
		if d.ID != "" {
			c.ID = d.ID
		}
		if d.Name != "" {
			c.Function.Name = d.Name
		}
		c.Function.Arguments += d.Arguments
	}
	return calls
}

// CitationsChunk returns the chunk that carries an answer's citations.
func (c *ChatStream) CitationsChunk(cits []citation.Citation, unsupported []citation.Span) CitationsChunk {
	return CitationsChunk{ChatChunk: c.chunk([]ChunkChoice{}), Citations: cits, Unsupported: unsupported}
}

// UsageChunk is the final chunk (with include_usage) holding the usage of
// all choices and no choices of its own.
func (c *ChatStream) UsageChunk(u *Usage) ChatChunk {
	ch := c.chunk([]ChunkChoice{})
	ch.Usage = u
	return ch
}

// SumUsage adds the usage of several choices of one request: the prompt is
// counted once, completions add up.
func SumUsage(us []*inference.Usage) *Usage {
	var total inference.Usage
	for i, u := range us {
		if u == nil {
			continue
		}
		if i == 0 || total.PromptTokens == 0 {
			total.PromptTokens = u.PromptTokens
			total.CachedTokens = u.CachedTokens
		}
		total.CompletionTokens += u.CompletionTokens
	}
	return NewUsage(&total)
}

// CollectChat reads whole native streams, one per choice, into a chat
// completion.
func CollectChat(streams []inference.Stream, model string, logprobs bool) (ChatCompletion, error) {
	out := ChatCompletion{ID: NewID("chatcmpl-"), Object: "chat.completion", Created: Now().Unix(), Model: model, SystemFingerprint: Fingerprint}
	usages := make([]*inference.Usage, len(streams))
	for i, s := range streams {
		ch, u, err := collectChoice(s, logprobs)
		if err != nil {
			return out, err
		}
		ch.Index = i
		out.Choices = append(out.Choices, ch)
		usages[i] = u
	}
	out.Usage = SumUsage(usages)
	return out, nil
}

func collectChoice(s inference.Stream, logprobs bool) (ChatChoice, *inference.Usage, error) {
	var sb strings.Builder
	var lps []inference.TokenLogprob
	var calls []ToolCallParam
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return ChatChoice{}, nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return ChatChoice{}, nil, err
		}
		sb.WriteString(ev.Text)
		lps = append(lps, ev.Logprobs...)
		calls = addToolCalls(calls, ev.ToolCalls)
		if ev.Done {
			ch := ChatChoice{Message: AssistantMessage{Role: "assistant", Content: sb.String(), ToolCalls: calls}, FinishReason: ev.FinishReason}
			if logprobs {
				ch.Logprobs = &Logprobs{Content: NewLogprobs(lps)}
			}
			return ch, ev.Usage, nil
		}
	}
}

// TextStream renders native events as text_completion chunks.
type TextStream struct {
	ID           string
	Model        string
	Created      int64
	IncludeUsage bool
	Logprobs     bool
	offsets      map[int]*int // text offset of each choice, for logprobs
}

// NewTextStream starts a text completion stream.
func NewTextStream(model string, includeUsage, logprobs bool) *TextStream {
	return &TextStream{ID: NewID("cmpl-"), Model: model, Created: Now().Unix(), IncludeUsage: includeUsage, Logprobs: logprobs}
}

func (t *TextStream) chunk(choices []TextChoice) TextCompletion {
	return TextCompletion{ID: t.ID, Object: "text_completion", Created: t.Created, Model: t.Model, SystemFingerprint: Fingerprint, Choices: choices}
}

// Chunks renders one native event.
func (t *TextStream) Chunks(ev inference.Event) []TextCompletion {
	out := t.ChoiceChunks(ev, 0)
	if ev.Done && t.IncludeUsage {
		u := t.chunk([]TextChoice{})
		u.Usage = NewUsage(ev.Usage)
		out = append(out, u)
	}
	return out
}

// ChoiceChunks renders one native event of choice index (a stream of
// several prompts or n > 1; the usage chunk is the caller's).
func (t *TextStream) ChoiceChunks(ev inference.Event, index int) []TextCompletion {
	var out []TextCompletion
	var fr *string
	if ev.Done {
		r := ev.FinishReason
		fr = &r
	}
	if ev.Text != "" || ev.Done {
		ch := TextChoice{Index: index, Text: ev.Text, FinishReason: fr}
		if t.Logprobs {
			if t.offsets == nil {
				t.offsets = map[int]*int{}
			}
			if t.offsets[index] == nil {
				t.offsets[index] = new(int)
			}
			ch.Logprobs = textLogprobs(ev.Logprobs, t.offsets[index])
		}
		out = append(out, t.chunk([]TextChoice{ch}))
	}
	return out
}

// UsageChunk is a chunk holding usage and no choices.
func (t *TextStream) UsageChunk(u *Usage) TextCompletion {
	ch := t.chunk([]TextChoice{})
	ch.Usage = u
	return ch
}

// CitationsChunk returns the chunk that carries an answer's citations.
func (t *TextStream) CitationsChunk(cits []citation.Citation, unsupported []citation.Span) CitedTextCompletion {
	return CitedTextCompletion{TextCompletion: t.chunk([]TextChoice{}), Citations: cits, Unsupported: unsupported}
}

func textLogprobs(lps []inference.TokenLogprob, offset *int) *TextLogprobs {
	out := &TextLogprobs{Tokens: []string{}, TokenLogprobs: []*float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, l := range lps {
		out.Tokens = append(out.Tokens, l.Token)
		if l.NoLogprob {
			out.TokenLogprobs = append(out.TokenLogprobs, nil)
			out.TopLogprobs = append(out.TopLogprobs, nil)
		} else {
			lp := l.Logprob
			out.TokenLogprobs = append(out.TokenLogprobs, &lp)
			top := map[string]float32{}
			for _, a := range l.Top {
				top[a.Token] = a.Logprob
			}
			out.TopLogprobs = append(out.TopLogprobs, top)
		}
		out.TextOffset = append(out.TextOffset, *offset)
		*offset += len(l.Token)
	}
	return out
}

// CollectText reads a whole native stream into a text completion.
func CollectText(s inference.Stream, model string, logprobs bool) (TextCompletion, error) {
	return CollectTexts([]inference.Stream{s}, 1, model, logprobs)
}

// CollectTexts reads whole native streams into one text completion: the
// streams of prompt k are k*n … k*n+n-1, and so are their choice indexes.
// Usage counts each prompt once and every completion.
func CollectTexts(streams []inference.Stream, n int, model string, logprobs bool) (TextCompletion, error) {
	t := NewTextStream(model, false, logprobs)
	out := t.chunk(nil)
	var total inference.Usage
	for i, s := range streams {
		var sb strings.Builder
		var lps []inference.TokenLogprob
		for {
			ev, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return out, io.ErrUnexpectedEOF
			}
			if err != nil {
				return out, err
			}
			sb.WriteString(ev.Text)
			lps = append(lps, ev.Logprobs...)
			if !ev.Done {
				continue
			}
			fr := ev.FinishReason
			ch := TextChoice{Index: i, Text: sb.String(), FinishReason: &fr}
			if logprobs {
				off := 0
				ch.Logprobs = textLogprobs(lps, &off)
			}
			out.Choices = append(out.Choices, ch)
			if u := ev.Usage; u != nil {
				if i%n == 0 {
					total.PromptTokens += u.PromptTokens
					total.CachedTokens += u.CachedTokens
				}
				total.CompletionTokens += u.CompletionTokens
			}
			break
		}
	}
	out.Usage = NewUsage(&total)
	return out, nil
}
