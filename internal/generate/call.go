// Package generate is the generation service: the one place a model call
// is governed, whoever makes it — an HTTP handler, a workflow step, a
// batch line, the console. It takes a typed request and the caller's
// identity, resolves the model once, runs the input policies, admits the
// call under the limits, runs the backend, applies the output policies to
// the native event stream, observes usage and settles the reservation,
// and writes the call's request record. HTTP decodes and renders around
// it; in-process callers use it with typed requests and never go back
// through HTTP.
package generate

import (
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// Call is one governed call's account: who made it, what its model
// resolved to, what it used, what the policies armed and what the team
// keeps of it. The steps of a call note what they learn here, and the
// call's request record is built from it when the call ends (Finish).
// It is safe for concurrent use: a call's generations report from their
// own goroutines.
type Call struct {
	// ID is the call's request id (x-request-id); Method and Route the
	// API route it counts as ("POST", "POST /v1/chat/completions"), for
	// records; Path the path policies see ("/v1/chat/completions").
	ID, Method, Route, Path string
	// ClientIP is the caller's address ("" in-process).
	ClientIP string
	// Start is when the call began.
	Start time.Time

	mu  sync.Mutex
	key *auth.Key
	// failed is the error that ended a response after it had started (a
	// stream that broke): the status says 200, the record says what
	// happened.
	failed                  error
	errorCode               string
	model, backend, user    string
	replica                 string
	promptTokens, completed int
	firstToken              time.Time
	// tickets are the call's admissions under the limits, settled when it
	// ends.
	tickets []*limits.Ticket
	// output is the output stage of the call's policies, when any applies
	// (armed by Admit).
	output *outputPolicy
	// capture says the team keeps prompts and outputs in its records;
	// prompt and answer are the texts kept (redacted by its policies).
	capture        bool
	prompt, answer string
}

// SetKey records the key the call runs as: once known, a refusal is the
// key's call too, and its record names the key and team.
func (c *Call) SetKey(k auth.Key) {
	c.mu.Lock()
	c.key = &k
	c.mu.Unlock()
}

// Key is the key the call runs as, if known.
func (c *Call) Key() (auth.Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == nil {
		return auth.Key{}, false
	}
	return *c.key, true
}

// SetUser records the end user the request names (OpenAI's "user").
func (c *Call) SetUser(u string) {
	c.mu.Lock()
	c.user = u
	c.mu.Unlock()
}

// User is the end user the request names.
func (c *Call) User() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// NoteModel records the call's resolved model and backend.
func (c *Call) NoteModel(id, backend string) {
	c.mu.Lock()
	c.model, c.backend = id, backend
	c.mu.Unlock()
}

// NoteReplica records the upstream replica that answered.
func (c *Call) NoteReplica(base string) {
	c.mu.Lock()
	c.replica = base
	c.mu.Unlock()
}

// NoteUsage adds a generation's tokens and its first token's time.
func (c *Call) NoteUsage(prompt, completion int, first time.Time) {
	c.mu.Lock()
	c.promptTokens += prompt
	c.completed += completion
	if !first.IsZero() && (c.firstToken.IsZero() || first.Before(c.firstToken)) {
		c.firstToken = first
	}
	c.mu.Unlock()
}

// Usage is the tokens counted so far.
func (c *Call) Usage() (prompt, completion int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.promptTokens, c.completed
}

// NoteError records the error code the call ended with.
func (c *Call) NoteError(err error) {
	code := string(apierr.From(err).Code)
	c.mu.Lock()
	c.errorCode = code
	c.mu.Unlock()
}

// Fail records the error that ended a response after it had started.
func (c *Call) Fail(err error) {
	c.mu.Lock()
	c.failed = err
	c.mu.Unlock()
}

// Failed is the error that ended a started response, if any.
func (c *Call) Failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Keep hands the answer's text, as sent, to the record (when the team
// keeps its outputs).
func (c *Call) Keep(text string) {
	c.mu.Lock()
	if c.capture {
		c.answer = text
	}
	c.mu.Unlock()
}

// Fork is a part of the call governed on its own — one model of a
// comparison: the same caller and request, its own admission (limits and
// output stage) and usage, which Join adds back to the call.
func (c *Call) Fork() *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &Call{ID: c.ID, Method: c.Method, Route: c.Route, Path: c.Path, ClientIP: c.ClientIP, Start: c.Start, key: c.key, user: c.user}
}

// Join adds a forked part's reservations, usage and kept texts to the
// call (the parts' answers one after another).
func (c *Call) Join(part *Call) {
	part.mu.Lock()
	tickets, prompt, completed, first := part.tickets, part.promptTokens, part.completed, part.firstToken
	capture, promptText, answer := part.capture, part.prompt, part.answer
	part.tickets = nil
	part.mu.Unlock()
	c.mu.Lock()
	c.tickets = append(c.tickets, tickets...)
	if capture {
		c.capture, c.prompt = true, promptText
		if c.answer != "" && answer != "" {
			c.answer += "\n"
		}
		c.answer += answer
	}
	c.mu.Unlock()
	c.NoteUsage(prompt, completed, first)
}

// Record is the call's request record once it ended with status after d.
func (c *Call) Record(status int, d time.Duration) records.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := records.Record{ID: c.ID, Time: c.Start, Method: c.Method, Route: c.Route, Status: status, ErrorCode: c.errorCode,
		LatencyMs: float64(d.Microseconds()) / 1000, Model: c.model, Backend: c.backend, Replica: c.replica, User: c.user,
		PromptTokens: c.promptTokens, CompletionTokens: c.completed, ClientIP: c.ClientIP}
	if c.capture {
		rec.Prompt, rec.Output = records.Truncate(c.prompt), records.Truncate(c.answer)
	}
	if k := c.key; k != nil {
		rec.TeamID, rec.KeyID, rec.UserID = k.TeamID, k.ID, k.OwnerUserID
	}
	if !c.firstToken.IsZero() {
		ms := float64(c.firstToken.Sub(c.Start).Microseconds()) / 1000
		rec.TTFTMs = &ms
	}
	if c.failed != nil && rec.ErrorCode == "" {
		rec.ErrorCode = string(apierr.From(c.failed).Code)
	}
	return rec
}
