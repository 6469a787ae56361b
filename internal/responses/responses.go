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

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
)

// ErrNotFound is returned for a response that does not exist or is
// another team's. It is an API error (internal/apierr): the store wraps
// it naming the response, Kept with the reason a client may not find one
// (apierr.Wrapf).
var ErrNotFound = apierr.New(apierr.NotFound, "response not found")

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

// Kept serves stored responses to API callers: its methods take the
// caller and keep to its team themselves (another team's response is
// ErrNotFound, exactly as one that does not exist).
type Kept struct {
	Store Store
}

// Put stores r as the caller's team's.
func (k Kept) Put(ctx context.Context, caller auth.Key, r Stored) error {
	r.TeamID = caller.TeamID
	return k.Store.PutResponse(ctx, r)
}

// Get returns the caller's team's response id. Errors: ErrNotFound,
// wrapped as notFound's.
func (k Kept) Get(ctx context.Context, caller auth.Key, id string) (Stored, error) {
	st, err := k.Store.GetResponse(ctx, caller.TeamID, id)
	return st, notFound(err, id)
}

// Delete removes the caller's team's response id. Errors: ErrNotFound,
// wrapped as notFound's.
func (k Kept) Delete(ctx context.Context, caller auth.Key, id string) error {
	return notFound(k.Store.DeleteResponse(ctx, caller.TeamID, id), id)
}

// notFound words ErrNotFound for a caller: a response it cannot find may
// exist, unstored or another team's, and the message says why it cannot
// be had. Other errors pass as they are.
func notFound(err error, id string) error {
	if errors.Is(err, ErrNotFound) {
		return apierr.Wrapf(ErrNotFound, "no response %q (responses are kept only with \"store\": true, for the team that made them)", id)
	}
	return err
}
