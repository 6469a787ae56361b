// Package responses keeps the Responses API's stored responses: each one a
// team's, holding the response object as answered, the input items of its
// request, and the conversation it ends (the items a response that
// continues it with previous_response_id starts from).
package responses

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned for a response that does not exist or is
// another team's.
var ErrNotFound = errors.New("response not found")

// Stored is one stored response.
type Stored struct {
	ID        string
	TeamID    string
	Model     string
	CreatedAt time.Time
	// Response is the response object (JSON) as it was answered.
	Response json.RawMessage
	// InputItems are the request's own input items (JSON array).
	InputItems json.RawMessage
	// Conversation is every item up to and including this response's
	// output (JSON array of input items), without instructions, which do
	// not carry over.
	Conversation json.RawMessage
}

// Store keeps stored responses.
type Store interface {
	PutResponse(ctx context.Context, r Stored) error
	// GetResponse returns the team's response id; ErrNotFound otherwise.
	GetResponse(ctx context.Context, teamID, id string) (Stored, error)
	// DeleteResponse removes the team's response id; ErrNotFound otherwise.
	DeleteResponse(ctx context.Context, teamID, id string) error
}
