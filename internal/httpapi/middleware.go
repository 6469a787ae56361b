package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// Authenticator resolves a bearer secret to its key.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (auth.Key, error)
}

type ctxKey int

const (
	keyCtx ctxKey = iota
	requestIDCtx
	infoCtx
)

// requestInfo carries what inner handlers learn back to the access log
// and the request record.
type requestInfo struct {
	key *auth.Key
	// failed is the error that ended a response after it had started (a
	// stream that broke): the status says 200, the log says what happened.
	failed error

	mu                      sync.Mutex
	errorCode               string
	model, backend, user    string
	replica                 string
	promptTokens, completed int
	firstToken              time.Time
	// tickets are the request's admissions under the limits, settled
	// when it ends.
	tickets []*limits.Ticket
	// output, when set, is the output stage of the request's policies
	// (policyWriter applies it to the answer).
	output *outputPolicy
	// capture says the team keeps prompts and outputs in its records;
	// prompt and answer are the texts kept (redacted by its policies).
	capture        bool
	prompt, answer string
}

// info returns the request's info (a throwaway one outside observe).
func info(ctx context.Context) *requestInfo {
	if i, ok := ctx.Value(infoCtx).(*requestInfo); ok {
		return i
	}
	return &requestInfo{}
}

// noteModel records the request's resolved model and backend.
func (i *requestInfo) noteModel(id, backend string) {
	i.mu.Lock()
	i.model, i.backend = id, backend
	i.mu.Unlock()
}

// noteReplica records the upstream replica that answered.
func (i *requestInfo) noteReplica(base string) {
	i.mu.Lock()
	i.replica = base
	i.mu.Unlock()
}

// noteUsage adds a generation's tokens and its first token's time.
func (i *requestInfo) noteUsage(prompt, completion int, first time.Time) {
	i.mu.Lock()
	i.promptTokens += prompt
	i.completed += completion
	if !first.IsZero() && (i.firstToken.IsZero() || first.Before(i.firstToken)) {
		i.firstToken = first
	}
	i.mu.Unlock()
}

// noteError records the error code a request ended with.
func (i *requestInfo) noteError(err error) {
	i.mu.Lock()
	i.errorCode = string(apierr.From(err).Code)
	i.mu.Unlock()
}

// KeyFrom returns the authenticated key of the request, if any.
func KeyFrom(ctx context.Context) (auth.Key, bool) {
	k, ok := ctx.Value(keyCtx).(auth.Key)
	return k, ok
}

// RequestID returns the request's id.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDCtx).(string)
	return id
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// statusWriter records the response status for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush passes through to the underlying writer.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observe assigns the request id (keeping a well-formed incoming
// x-request-id), and logs and measures every request once it ends.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		info := &requestInfo{}
		ctx := context.WithValue(context.WithValue(r.Context(), requestIDCtx, id), infoCtx, info)
		sw := &statusWriter{ResponseWriter: w}
		inner := r.WithContext(ctx)
		next.ServeHTTP(sw, inner)
		// The reservation becomes the real usage before the next request
		// of this client can be admitted (a lease must not outlive it).
		// A response of known length is flushed first, so that the client
		// has it whole while the limits store is told.
		if info.governed() {
			if sw.Header().Get("Content-Length") != "" {
				sw.Flush()
			}
			info.settle(ctx)
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		d := time.Since(start)
		route := inner.Pattern
		if route == "" {
			route = "unmatched"
		}
		if s.Metrics != nil {
			s.Metrics.ObserveRequest(route, r.Method, sw.status, d)
		}
		if s.Records != nil && (strings.Contains(route, " /v1/") || strings.Contains(route, " /v2/")) {
			s.Records.Log(s.requestRecord(inner, id, route, sw.status, start, d, info))
		}
		attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration_ms", d.Milliseconds()}
		if k := info.key; k != nil {
			attrs = append(attrs, "key_id", k.ID, "team_id", k.TeamID)
		}
		if info.failed != nil {
			attrs = append(attrs, "outcome", "failed_after_start", "error", info.failed.Error())
			s.Log.Warn("request", attrs...)
			return
		}
		s.Log.Info("request", attrs...)
	})
}

// requestRecord is the record of a finished API call.
func (s *Server) requestRecord(r *http.Request, id, route string, status int, start time.Time, d time.Duration, info *requestInfo) records.Record {
	info.mu.Lock()
	defer info.mu.Unlock()
	rec := records.Record{ID: id, Time: start, Method: r.Method, Route: route, Status: status, ErrorCode: info.errorCode,
		LatencyMs: float64(d.Microseconds()) / 1000, Model: info.model, Backend: info.backend, Replica: info.replica, User: info.user,
		PromptTokens: info.promptTokens, CompletionTokens: info.completed, ClientIP: clientIP(r)}
	if info.capture {
		rec.Prompt, rec.Output = records.Truncate(info.prompt), records.Truncate(info.answer)
	}
	if k := info.key; k != nil {
		rec.TeamID, rec.KeyID = k.TeamID, k.ID
	}
	if !info.firstToken.IsZero() {
		ms := float64(info.firstToken.Sub(start).Microseconds()) / 1000
		rec.TTFTMs = &ms
	}
	if info.failed != nil && rec.ErrorCode == "" {
		rec.ErrorCode = string(apierr.From(info.failed).Code)
	}
	return rec
}

// clientIP is the address the request came from (the peer's: headers a
// client can set are not trusted without a configured proxy).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// authenticate checks the bearer key and the route's scope. It returns the
// request with the key in its context.
func (s *Server) authenticate(r *http.Request, scope auth.Scope) (*http.Request, error) {
	if key, ok := invokedKey(r); ok {
		// An in-process call (Invoke): the key was looked up by id and
		// checked active; its scopes still decide.
		return authorize(r, key, scope)
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return r, apierr.New(apierr.MissingAPIKey, "You didn't provide an API key. Send it in the Authorization header as 'Bearer sk-sov-…'.")
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return r, apierr.New(apierr.InvalidAPIKey, "The Authorization header must be 'Bearer <API key>'.")
	}
	key, err := s.Auth.Authenticate(r.Context(), strings.TrimSpace(secret))
	switch {
	case errors.Is(err, auth.ErrMissingKey):
		return r, apierr.New(apierr.MissingAPIKey, "You didn't provide an API key. Send it in the Authorization header as 'Bearer sk-sov-…'.")
	case errors.Is(err, auth.ErrRevokedKey):
		return r, apierr.New(apierr.InvalidAPIKey, "This API key has been revoked.")
	case errors.Is(err, auth.ErrExpiredKey):
		return r, apierr.New(apierr.InvalidAPIKey, "This API key has expired.")
	case errors.Is(err, auth.ErrInvalidKey):
		return r, apierr.New(apierr.InvalidAPIKey, "Incorrect API key provided.")
	case err != nil:
		return r, err
	}
	return authorize(r, key, scope)
}

// authorize checks an authenticated key's scope. The request's record
// names the key either way: a refusal is the key's call too, and must be
// found by its team and key id.
func authorize(r *http.Request, key auth.Key, scope auth.Scope) (*http.Request, error) {
	if info, ok := r.Context().Value(infoCtx).(*requestInfo); ok {
		info.key = &key
	}
	if !auth.HasScope(key, scope) {
		return r, &apierr.Error{Code: apierr.PermissionDenied, Message: "This API key lacks the '" + string(scope) + "' scope this operation needs."}
	}
	return r.WithContext(context.WithValue(r.Context(), keyCtx, key)), nil
}
