package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
)

// invokedCtx carries the key an in-process call runs as (Invoke). A
// context value cannot come from the network, so no HTTP client can claim
// a key this way.
const invokedCtx ctxKey = 100

// Invoked is the answer to an in-process call.
type Invoked struct {
	Status int
	Header http.Header
	Body   []byte
}

// Err is the call's error when its status is not 2xx: the API error of the
// body's envelope, with its status.
func (v Invoked) Err() error {
	if v.Status >= 200 && v.Status < 300 {
		return nil
	}
	return apierr.FromBody(v.Status, v.Body)
}

// Invoke runs one API request in-process as the key keyID, through the
// same route, scopes, limits, policies and request log as the request
// made over HTTP (so a workflow step's or a batch line's model call is
// governed and recorded like any other); the record's client address is
// empty. The key must still be active: revoking a key stops the work that
// runs as it. body is JSON (nil for none).
func (s *Server) Invoke(ctx context.Context, keyID, method, path string, body []byte) (Invoked, error) {
	if s.handler == nil {
		return Invoked{}, errors.New("httpapi: Invoke before Handler")
	}
	key, err := s.Keys.GetKey(ctx, keyID)
	if err != nil {
		return Invoked{}, fmt.Errorf("httpapi: the key %s: %w", keyID, err)
	}
	if !key.Active(time.Now()) {
		return Invoked{}, &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key " + keyID + " this work runs as has been revoked or has expired."}
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, invokedCtx, key), method, path, bytes.NewReader(body))
	if err != nil {
		return Invoked{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = ""
	w := wire.NewBuffer()
	s.handler.ServeHTTP(w, req)
	return Invoked{Status: w.Status(), Header: w.Header(), Body: w.Bytes()}, nil
}

// invokedKey is the key of an in-process call, if r is one.
func invokedKey(r *http.Request) (auth.Key, bool) {
	k, ok := r.Context().Value(invokedCtx).(auth.Key)
	return k, ok
}

// ServeAs serves r through the API as the key keyID, writing the answer
// (a streamed one as it is produced) onto w: the streaming counterpart of
// Invoke, for in-process callers that relay a live response (the web
// console's chat playground and run events). r's Authorization and Cookie
// headers are dropped; its path, query and body are the API request's, its
// remote address is kept for the request log. Errors (before anything is
// written): the key cannot be read, or it is revoked or expired
// (apierr.InvalidAPIKey).
func (s *Server) ServeAs(w http.ResponseWriter, r *http.Request, keyID string) error {
	if s.handler == nil {
		return errors.New("httpapi: ServeAs before Handler")
	}
	key, err := s.Keys.GetKey(r.Context(), keyID)
	if err != nil {
		return fmt.Errorf("httpapi: the key %s: %w", keyID, err)
	}
	if !key.Active(time.Now()) {
		return &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key " + keyID + " has been revoked or has expired."}
	}
	r = r.Clone(context.WithValue(r.Context(), invokedCtx, key))
	r.Header.Del("Authorization")
	r.Header.Del("Cookie")
	s.handler.ServeHTTP(w, r)
	return nil
}
