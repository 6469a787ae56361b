package httpapi

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
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

// info returns the request's account (a throwaway one outside observe):
// the generation service's Call, which the request's steps note what they
// learn on and which its request record is built from.
func info(ctx context.Context) *generate.Call {
	if i, ok := ctx.Value(infoCtx).(*generate.Call); ok {
		return i
	}
	return &generate.Call{}
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

func newRequestID() string { return generate.NewID() }

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
		call := &generate.Call{ID: id, Method: r.Method, Path: r.URL.Path, ClientIP: wire.ClientIP(r), Start: start}
		ctx := context.WithValue(context.WithValue(r.Context(), requestIDCtx, id), infoCtx, call)
		sw := &statusWriter{ResponseWriter: w}
		inner := r.WithContext(ctx)
		next.ServeHTTP(sw, inner)
		// A response of known length is flushed now, so that the client
		// has it whole while the work after it runs — settling with the
		// limits store, metrics, the request record, the log line — rather
		// than when the server flushes after this middleware returns, with
		// that work in every answer's latency.
		if sw.Header().Get("Content-Length") != "" {
			sw.Flush()
		}
		// The reservation becomes the real usage before the next request
		// of this client can be admitted (a lease must not outlive it).
		s.Gen.Settle(ctx, call)
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
		if strings.Contains(route, " /v1/") || strings.Contains(route, " /v2/") {
			call.Route = route
			s.Gen.Log(call, sw.status)
		}
		attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration_ms", d.Milliseconds()}
		if k, ok := call.Key(); ok {
			attrs = append(attrs, "key_id", k.ID, "team_id", k.TeamID)
		}
		if failed := call.Failed(); failed != nil {
			attrs = append(attrs, "outcome", "failed_after_start", "error", failed.Error())
			s.Log.Warn("request", attrs...)
			return
		}
		s.Log.Info("request", attrs...)
	})
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
		return r, auth.ErrMissingKey
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return r, apierr.New(apierr.InvalidAPIKey, "The Authorization header must be 'Bearer <API key>'.")
	}
	key, err := s.Auth.Authenticate(r.Context(), strings.TrimSpace(secret))
	if err != nil {
		// auth's refusals are the 401 answers themselves; a store failure
		// is a 500, not a verdict on the key.
		return r, err
	}
	return authorize(r, key, scope)
}

// authorize checks an authenticated key's scope. The request's record
// names the key either way: a refusal is the key's call too, and must be
// found by its team and key id.
func authorize(r *http.Request, key auth.Key, scope auth.Scope) (*http.Request, error) {
	if call, ok := r.Context().Value(infoCtx).(*generate.Call); ok {
		call.SetKey(key)
	}
	if scope != anyKey && !auth.HasScope(key, scope) {
		return r, &apierr.Error{Code: apierr.PermissionDenied, Message: "This API key lacks the '" + string(scope) + "' scope this operation needs."}
	}
	return r.WithContext(context.WithValue(r.Context(), keyCtx, key)), nil
}
