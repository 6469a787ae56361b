package inference

import "context"

// Priority is how urgently a request wants a slot of a local model.
// Interactive requests (the zero value) are admitted first; background
// work (batch lines) takes only slots that interactive requests leave idle.
type Priority int

const (
	// PriorityInteractive is a request a client is waiting for.
	PriorityInteractive Priority = iota
	// PriorityBackground is work nobody waits on line by line (a batch
	// line): the engine admits it only into a free slot, never queues it
	// ahead of interactive requests, and never answers it 503 for a full
	// queue (it waits instead).
	PriorityBackground
)

type priorityKey struct{}

// WithPriority returns ctx carrying p; a backend reads it where a request
// enters its queue. A context value cannot come from the network, so no
// client can ask for it.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority ctx carries (PriorityInteractive when
// none).
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}
