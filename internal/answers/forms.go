package answers

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// form is how a model family is asked to answer from sources: a system
// message, the last user message with the sources as context and the
// question last, how each source is written, and how many sources and
// tokens an answer gets. Small instruct models answer a plain "Context: …
// Question: …" prompt far better than numbered sources with a request for
// markers, which they copy instead of answering (measured in
// bench/answers); markers are Sovereign's job (package citation).
type form struct {
	System     string `json:"system"`
	User       string `json:"user"`
	Source     string `json:"source"`
	Separator  string `json:"separator"`
	MaxSources int    `json:"max_sources"`
	MaxTokens  int    `json:"max_tokens"`
	// Stop ends the answer where a family goes on past it (a base model
	// writing the next question); added to the caller's stop strings.
	Stop []string `json:"stop"`
	// BestLast lists the best source last, next to the question, where a
	// small model reads most closely.
	BestLast bool `json:"best_last"`
}

//go:embed forms.json
var formsJSON []byte

// forms are the forms by family; "default" serves the families it lacks,
// and a family's form takes the default's value for each field it leaves
// empty.
var forms = func() map[string]form {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(formsJSON, &raw); err != nil {
		panic("answers: forms.json: " + err.Error())
	}
	var def form
	if err := json.Unmarshal(raw["default"], &def); err != nil || def.User == "" || def.MaxSources <= 0 {
		panic("answers: forms.json needs a complete \"default\" form")
	}
	out := map[string]form{"default": def}
	for name, r := range raw {
		if strings.HasPrefix(name, "_") || name == "default" {
			continue
		}
		f := def // the family's fields override the default's
		if err := json.Unmarshal(r, &f); err != nil {
			panic("answers: forms.json: " + name + ": " + err.Error())
		}
		out[name] = f
	}
	return out
}()

// formFor returns the form of a model family.
func formFor(family string) form {
	if f, ok := forms[strings.ToLower(family)]; ok {
		return f
	}
	return forms["default"]
}

// maxPromptSourceChars bounds each source's text in the prompt.
const maxPromptSourceChars = 4000

// request returns chat asked in this form from srcs: the sources in its
// messages, the form's default length and stop strings.
func (f form) request(chat inference.CompletionRequest, srcs []citation.Source, abstain string) inference.CompletionRequest {
	chat.Messages = f.apply(chat.Messages, srcs, abstain)
	if chat.MaxTokens == 0 {
		chat.MaxTokens = f.MaxTokens
	}
	chat.Stop = slices.Clone(chat.Stop)
	for _, stop := range f.Stop {
		if len(chat.Stop) < maxStops && !slices.Contains(chat.Stop, stop) {
			chat.Stop = append(chat.Stop, stop)
		}
	}
	return chat
}

// focused returns the second try at an answer: the same request with each
// source cut to its sentences about the question (citation.Relevant); nil
// when no source has any, or none was cut (the same prompt would get the
// same answer).
func (f form) focused(chat inference.CompletionRequest, srcs []citation.Source, abstain, question string) *inference.CompletionRequest {
	var cut []citation.Source
	shorter := false
	for _, s := range srcs {
		t := citation.Relevant(question, s.Text)
		if t == "" {
			shorter = true
			continue
		}
		shorter = shorter || len(t) < len(strings.TrimSpace(s.Text))
		s.Text = t
		cut = append(cut, s)
	}
	if len(cut) == 0 || !shorter {
		return nil
	}
	r := f.request(chat, cut, abstain)
	return &r
}

// apply puts the sources into the conversation: the form's system message
// (before the caller's own), and the last user message rewritten as the
// context and then its question. Earlier turns stay as they are.
func (f form) apply(msgs []inference.Message, srcs []citation.Source, abstain string) []inference.Message {
	parts := make([]string, 0, len(srcs))
	if f.BestLast {
		srcs = slices.Clone(srcs)
		slices.Reverse(srcs)
	}
	for _, s := range srcs {
		title := strings.Join(strings.Fields(s.Title), " ")
		text := citation.Truncate(strings.TrimSpace(s.Text), maxPromptSourceChars)
		p := strings.NewReplacer("{title}", title, "{text}", text).Replace(f.Source)
		parts = append(parts, strings.TrimSpace(p))
	}
	context := strings.Join(parts, f.Separator)
	out := append([]inference.Message(nil), msgs...)
	last := -1
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			last = i
			break
		}
	}
	if last >= 0 {
		out[last].Content = strings.NewReplacer("{context}", context, "{question}", strings.TrimSpace(out[last].Content)).Replace(f.User)
	}
	if system := strings.ReplaceAll(f.System, "{abstain}", abstain); system != "" {
		if len(out) > 0 && out[0].Role == "system" {
			out[0].Content = system + "\n\n" + out[0].Content
		} else {
			out = append([]inference.Message{{Role: "system", Content: system}}, out...)
		}
	}
	return out
}
