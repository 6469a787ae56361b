package inference

import "context"

// Relayer is a backend that takes OpenAI request bodies as the client sent
// them: an upstream server. The gateway hands such a backend the body
// unchanged but for the model name, so every field Sovereign does not act
// on (tools, content parts, vendor extensions) reaches the upstream, and
// every field of the answer reaches the client.
type Relayer interface {
	Relay(ctx context.Context, req RelayRequest) (Relay, error)
}

// RelayRequest is one OpenAI request to pass on.
type RelayRequest struct {
	// Path is the OpenAI path after /v1: /chat/completions, /completions,
	// /embeddings, /responses.
	Path string
	// Body is the client's JSON body, valid JSON (the caller checked); the
	// relayer sets its "model" to the name the upstream knows.
	Body []byte
	// Stream says the answer is a server-sent event stream.
	Stream bool
	// Prompt is the request's text, to count prompt tokens when the
	// upstream reports no usage.
	Prompt string
	// MaxInputTokens, when set, bounds the prompt: a relayer that can
	// count tokens refuses a longer one.
	MaxInputTokens int
}

// RelayEvent is one server-sent event of a relayed stream (Event is its
// "event:" field, empty for OpenAI's chat and text streams), or the whole
// body of a relayed answer that is not streamed. Data keeps the
// upstream's bytes, with the model name mapped back to Sovereign's.
// Output says the event carries generated text or a tool call (the first
// such event is the time to first token).
type RelayEvent struct {
	Event  string
	Data   []byte
	Output bool
}

// Relay is a relayed answer. Next returns its events in order (one for an
// answer that is not streamed) and io.EOF after the last; Usage is known
// once Next has returned io.EOF. Close ends the
// request, cancelling it upstream if unfinished.
type Relay interface {
	Next() (RelayEvent, error)
	Usage() Usage
	// Replica names the upstream replica that answered (its base URL).
	Replica() string
	Close() error
}
