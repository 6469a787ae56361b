package llamacpp

/*
#cgo CXXFLAGS: -std=c++17
#include <stdlib.h>
#include "chat_shim.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Chat renders chat requests with a model's Jinja chat template through
// llama.cpp's chat code (common/chat.h, its own Jinja engine): the prompt,
// and for requests with tools the grammar that keeps tool calls parseable
// and the parser that reads them back. Safe for concurrent use.
type Chat struct {
	c *C.sov_chat
}

// ErrNoTemplate is returned by NewChat for a model whose GGUF has no chat
// template.
var ErrNoTemplate = errors.New("llamacpp: the model has no chat template")

// NewChat loads the chat template of m (tokenizer.chat_template, and a
// tool_use variant when the GGUF has one).
func NewChat(m *Model) (*Chat, error) {
	if m.ChatTemplate() == "" {
		return nil, ErrNoTemplate
	}
	return newChat(m.m, "", "", "")
}

// NewChatTemplate loads a template given as Jinja source, with the text of
// the BOS and EOS tokens it may print (for tests and template overrides).
func NewChatTemplate(src, bos, eos string) (*Chat, error) {
	return newChat(nil, src, bos, eos)
}

func newChat(m *C.struct_llama_model, src, bos, eos string) (*Chat, error) {
	csrc, cbos, ceos := C.CString(src), C.CString(bos), C.CString(eos)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cbos))
	defer C.free(unsafe.Pointer(ceos))
	var cerr *C.char
	c := C.sov_chat_new(m, csrc, cbos, ceos, &cerr)
	if c == nil {
		return nil, fmt.Errorf("loading the chat template: %s", takeString(cerr))
	}
	ch := &Chat{c: c}
	runtime.SetFinalizer(ch, (*Chat).Free)
	return ch, nil
}

// Free releases the templates. The Chat must not be used afterwards.
func (ch *Chat) Free() {
	if ch.c != nil {
		C.sov_chat_free(ch.c)
		ch.c = nil
	}
}

// Source is the Jinja source of the default template.
func (ch *Chat) Source() string { return takeString(C.sov_chat_source(ch.c)) }

// ChatRequest is what a chat template renders: OpenAI-shaped messages
// (role, content as text or parts, tool_calls, tool_call_id, name) and
// function tools.
type ChatRequest struct {
	Messages            []map[string]any `json:"messages"`
	Tools               []map[string]any `json:"tools,omitempty"`
	ToolChoice          string           `json:"tool_choice,omitempty"` // auto, required or none
	ParallelToolCalls   bool             `json:"parallel_tool_calls"`
	AddGenerationPrompt bool             `json:"add_generation_prompt"`
	EnableThinking      bool             `json:"enable_thinking"`
	// Now, in Unix seconds, is the date llama.cpp's own chat formats print
	// (0: the clock's); a template's strftime_now reads the clock.
	Now int64 `json:"now,omitempty"`
}

// ChatPrompt is a rendered request.
type ChatPrompt struct {
	Prompt string `json:"prompt"`
	// GenerationPrompt is the end of Prompt that starts the answer (e.g.
	// "<|im_start|>assistant\n"); a non-lazy Grammar starts with it, so
	// it is fed to the grammar before sampling (Sampler.PrefillGrammar).
	GenerationPrompt string `json:"generation_prompt"`
	// Format names the output format llama.cpp expects (e.g. "peg-native").
	Format string `json:"format"`
	// Grammar (GBNF) constrains the output when tools are given; with
	// GrammarLazy it applies only from the first trigger on.
	Grammar         string           `json:"grammar"`
	GrammarLazy     bool             `json:"grammar_lazy"`
	GrammarTriggers []GrammarTrigger `json:"grammar_triggers"`
	// PreservedTokens are special tokens the output may contain as text.
	PreservedTokens []string `json:"preserved_tokens"`
	// AdditionalStops end generation besides the request's stop sequences.
	AdditionalStops []string `json:"additional_stops"`
	// Parse configures NewChatParser for this request's output.
	Parse json.RawMessage `json:"parse"`
}

// GrammarTrigger starts a lazy grammar: Type is llama.cpp's
// common_grammar_trigger_type (0 token, 1 word, 2 pattern, 3 full pattern).
type GrammarTrigger struct {
	Type  int    `json:"type"`
	Value string `json:"value"`
	Token int    `json:"token"`
}

// Apply renders req.
func (ch *Chat) Apply(req ChatRequest) (*ChatPrompt, error) {
	if req.Messages == nil {
		req.Messages = []map[string]any{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	cbody := C.CString(string(body))
	defer C.free(unsafe.Pointer(cbody))
	var cerr *C.char
	out := C.sov_chat_apply(ch.c, cbody, &cerr)
	if out == nil {
		return nil, &TemplateError{Msg: takeString(cerr)}
	}
	var p ChatPrompt
	if err := json.Unmarshal([]byte(takeString(out)), &p); err != nil {
		return nil, fmt.Errorf("llamacpp: reading the rendered chat: %w", err)
	}
	return &p, nil
}

// TemplateError is a chat template that failed to render a request, with
// llama.cpp's reason (often the template's own raise_exception message).
type TemplateError struct{ Msg string }

func (e *TemplateError) Error() string { return "the chat template failed: " + e.Msg }

// ChatParser reads a model's output back into an assistant message.
type ChatParser struct {
	p *C.sov_chat_parser
}

// NewChatParser prepares a parser for the output of a rendered request.
func NewChatParser(p *ChatPrompt) (*ChatParser, error) {
	params := p.Parse
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	cparams := C.CString(string(params))
	defer C.free(unsafe.Pointer(cparams))
	var cerr *C.char
	cp := C.sov_chat_parser_new(cparams, &cerr)
	if cp == nil {
		return nil, fmt.Errorf("llamacpp: loading the output parser: %s", takeString(cerr))
	}
	pr := &ChatParser{p: cp}
	runtime.SetFinalizer(pr, (*ChatParser).Free)
	return pr, nil
}

// Free releases the parser.
func (pr *ChatParser) Free() {
	if pr.p != nil {
		C.sov_chat_parser_free(pr.p)
		pr.p = nil
	}
}

// ParsedMessage is an assistant message read from generated text.
type ParsedMessage struct {
	Content          string           `json:"content"`
	ReasoningContent string           `json:"reasoning_content"`
	ToolCalls        []ParsedToolCall `json:"tool_calls"`
}

// ParsedToolCall is one tool call of a ParsedMessage.
type ParsedToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Parse reads text; partial says more text is still to come (a stream),
// in which case an unfinished tool call is left out or cut where it is
// still valid.
func (pr *ChatParser) Parse(text string, partial bool) (*ParsedMessage, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	p := C.int(0)
	if partial {
		p = 1
	}
	var cerr *C.char
	out := C.sov_chat_parse(pr.p, ctext, p, &cerr)
	if out == nil {
		return nil, fmt.Errorf("llamacpp: parsing the output: %s", takeString(cerr))
	}
	var m ParsedMessage
	if err := json.Unmarshal([]byte(takeString(out)), &m); err != nil {
		return nil, fmt.Errorf("llamacpp: reading the parsed message: %w", err)
	}
	return &m, nil
}

// takeString copies a malloc'd C string and frees it.
func takeString(s *C.char) string {
	if s == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s)
}
