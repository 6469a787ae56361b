package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/idempotency"
)

// IdempotencyService runs the Idempotency-Key protocol (package
// idempotency).
type IdempotencyService interface {
	Begin(ctx context.Context, caller, key, method, path, contentType string, body io.Reader) (*idempotency.Attempt, *idempotency.Replay, error)
}

// idempotent makes a create route honour an Idempotency-Key header: the
// first final answer is stored and sent again to every repeat of the same
// request by the same API key (docs/idempotency.md). Without the header,
// or without a service, the route runs as it is.
func (s *Server) idempotent(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || s.Idempotency == nil {
			return h(w, r)
		}
		if !validIdempotencyKey(key) {
			return apierr.Invalid("Idempotency-Key", "the Idempotency-Key header must be 1 to 255 printable ASCII characters")
		}
		k, _ := KeyFrom(r.Context())
		attempt, replay, err := s.Idempotency.Begin(r.Context(), k.ID, key, r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Body)
		switch {
		case errors.Is(err, idempotency.ErrInUse):
			return &apierr.Error{Code: apierr.IdempotencyKeyInUse, Message: err.Error(), Param: "Idempotency-Key", RetryAfter: time.Second}
		case errors.Is(err, idempotency.ErrReused):
			return &apierr.Error{Code: apierr.IdempotencyKeyReused, Message: err.Error(), Param: "Idempotency-Key"}
		case err != nil:
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				return apierr.New(apierr.BodyTooLarge, fmt.Sprintf("the request body exceeds the limit of %d bytes", maxErr.Limit))
			}
			return err
		case replay != nil:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(replay.Status)
			_, err := w.Write(replay.Body)
			return err
		}
		ctx := r.Context()
		defer attempt.Release(ctx) // a panic: the retry runs again (no-op after Finish)
		r.Body = struct {
			io.Reader
			io.Closer
		}{attempt.Body(), r.Body}
		rec := &recordingWriter{ResponseWriter: w}
		err = h(rec, r)
		if err != nil && !rec.wrote {
			// handle renders the error the same way (apierr.Write).
			e := apierr.From(err)
			b, _ := json.Marshal(e.Envelope())
			attempt.Finish(ctx, e.Status(), append(b, '\n'))
			return err
		}
		if rec.over {
			attempt.Release(ctx)
			return err
		}
		status := rec.status
		if !rec.wrote {
			status = http.StatusOK
		}
		attempt.Finish(ctx, status, rec.body.Bytes())
		return err
	}
}

func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > idempotency.MaxKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// recordingWriter keeps the status and (up to idempotency.MaxBody) the
// body of a response as it is written.
type recordingWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	over   bool
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	if !w.over {
		if w.body.Len()+len(b) > idempotency.MaxBody {
			w.over = true
		} else {
			w.body.Write(b)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
