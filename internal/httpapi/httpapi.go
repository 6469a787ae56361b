// Package httpapi is Sovereign's HTTP API: routing, request limits, the
// OpenAI-compatible inference endpoints and model listing. Handlers return
// errors; one adapter (handle) renders them as OpenAI error envelopes via
// package apierr. Translation to and from OpenAI shapes is package openai's.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/models"
)

// Catalog lists installed models.
type Catalog interface {
	List() ([]models.Manifest, error)
	Get(id string) (models.Manifest, error)
}

// Server holds the API's dependencies.
type Server struct {
	Backend inference.Backend
	Models  Catalog
	// Status reports runtime state of models (loaded, failed); optional.
	Status func() []engine.ModelStatus
	Log    *slog.Logger
	// MaxBody bounds request bodies (default 8 MiB).
	MaxBody int64
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.MaxBody <= 0 {
		s.MaxBody = 8 << 20
	}
	mux := http.NewServeMux()
	route := func(pattern string, h handlerFunc) { mux.Handle(pattern, s.handle(h)) }
	route("GET /healthz", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	route("GET /v1/models", s.listModels)
	route("GET /v1/models/{id...}", s.getModel)
	route("POST /v1/chat/completions", s.chatCompletions)
	route("POST /v1/completions", s.completions)
	route("POST /v1/embeddings", s.embeddings)
	route("POST /v1/tokenize", s.tokenize)
	route("POST /v1/detokenize", s.detokenize)
	route("/", s.notFound)
	return mux
}

var versionPath = regexp.MustCompile(`^/v(\d+)(/|$)`)

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	if m := versionPath.FindStringSubmatch(r.URL.Path); m != nil && m[1] != "1" {
		return apierr.New(apierr.UnsupportedAPIVersion, fmt.Sprintf("API version v%s is not supported; this server serves /v1", m[1]))
	}
	return apierr.New(apierr.NotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
}

// handle adapts a handlerFunc: it bounds the body, turns a returned error
// or a panic into an OpenAI envelope, and logs server errors.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
		rw := &trackingWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Log.Error("panic in handler", "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !rw.wrote {
					apierr.Write(rw, apierr.New(apierr.Internal, "internal server error"))
				}
			}
		}()
		err := h(rw, r)
		if err == nil {
			return
		}
		if rw.wrote {
			// Streaming already started; the handler reported in-band.
			s.Log.Warn("request failed after response started", "path", r.URL.Path, "err", err)
			return
		}
		e := apierr.Write(rw, err)
		switch {
		case e.Status() == http.StatusServiceUnavailable:
			s.Log.Warn("request refused", "path", r.URL.Path, "code", e.Code, "err", e.Err)
		case e.Status() >= 500:
			s.Log.Error("request failed", "path", r.URL.Path, "code", e.Code, "err", e.Err)
		}
	})
}

// trackingWriter records whether the response has started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Flush passes through to the underlying writer.
func (t *trackingWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// model looks up id and checks it offers capability.
func (s *Server) model(id, capability string) (models.Manifest, error) {
	m, err := s.Models.Get(id)
	if errors.Is(err, models.ErrNotFound) {
		return m, &apierr.Error{Code: apierr.ModelNotFound, Param: "model", Message: fmt.Sprintf("the model %q does not exist; GET /v1/models lists the installed models", id)}
	}
	if err != nil {
		return m, err
	}
	if capability != "" && !m.Has(capability) {
		return m, apierr.Invalid("model", fmt.Sprintf("the model %q does not support %s (it supports: %v)", id, capability, m.Capabilities))
	}
	return m, nil
}

// sse writes Server-Sent Events the way OpenAI does.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) done() error {
	if _, err := fmt.Fprint(s.w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

// fail reports an error inside a started stream as an error event, which
// OpenAI's clients raise as an APIError.
func (s *sse) fail(err error) error {
	e := apierr.From(err)
	s.send(e.Envelope())
	return err
}

// streamTimeout bounds one generation, so a stuck request cannot hold a slot
// forever.
const streamTimeout = 30 * time.Minute

func withTimeout(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), streamTimeout)
}
