// Package wire is what stays of HTTP-only concerns once the API's routes
// are written: answers as JSON and as Server-Sent Events, strict request
// bodies, the list routes' query parameters, the client's address and an
// in-memory response. It knows nothing of the API's domain; package httpapi
// (routes: decode, call a service, render) uses it.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// JSON writes v as the JSON answer with status. A known length lets the
// response be complete for the client before the handler's deferred work
// (settling limits) is done.
func JSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}

// SSE writes Server-Sent Events the way OpenAI does.
type SSE struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

// StartSSE starts an event stream on w (status 200, no caching, no proxy
// buffering).
func StartSSE(w http.ResponseWriter) *SSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &SSE{w: w, rc: http.NewResponseController(w)}
}

// Send writes one event and flushes it to the client.
func (s *SSE) Send(v any) error {
	if err := s.Write(v); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Write writes one event without flushing; Flush sends what was written.
func (s *SSE) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.buf = append(s.buf[:0], "data: "...)
	s.buf = append(s.buf, b...)
	s.buf = append(s.buf, "\n\n"...)
	_, err = s.w.Write(s.buf)
	return err
}

// Flush sends what was written.
func (s *SSE) Flush() error { return s.rc.Flush() }

// Raw writes one event as an upstream sent it (event is its "event:"
// field, empty for none) and flushes it.
func (s *SSE) Raw(event string, data []byte) error {
	s.buf = s.buf[:0]
	if event != "" {
		s.buf = append(append(append(s.buf, "event: "...), event...), '\n')
	}
	s.buf = append(append(append(s.buf, "data: "...), data...), "\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Event writes one event — "id:", "event:" and "data:" lines — without
// flushing. Errors: the client is gone.
func (s *SSE) Event(id, typ string, data []byte) error {
	s.buf = append(append(append(s.buf[:0], "id: "...), id...), '\n')
	s.buf = append(append(append(s.buf, "event: "...), typ...), '\n')
	s.buf = append(append(append(s.buf, "data: "...), data...), "\n\n"...)
	_, err := s.w.Write(s.buf)
	return err
}

// Comment writes an SSE comment line and flushes it.
func (s *SSE) Comment(text string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Done ends an OpenAI stream ("data: [DONE]").
func (s *SSE) Done() error {
	if _, err := fmt.Fprint(s.w, "data: [DONE]\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Fail reports an error inside a started stream as an error event, which
// OpenAI's clients raise as an APIError, and returns err.
func (s *SSE) Fail(err error) error {
	e := apierr.From(err)
	s.Send(e.Envelope())
	return err
}

// DecodeStrict reads an admin request body like openai.Decode, refusing
// members the object does not declare (at any depth) with a 400 naming
// the member: a misspelt limit or rule field must not be ignored.
func DecodeStrict(r io.Reader, v any) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return openai.Decode(bytes.NewReader(body), v)
	}
	if err := openai.Decode(bytes.NewReader(body), v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return apierr.Invalid(name, fmt.Sprintf("unknown field %q", name))
		}
		return apierr.Invalid("", err.Error())
	}
	return nil
}

// ListPage is the list object of a cursor-paged route: data, has_more and
// the ids of its first and last items (null when empty), as OpenAI's lists.
func ListPage[T any](data []T, more bool, id func(T) string) map[string]any {
	page := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		page["first_id"], page["last_id"] = id(data[0]), id(data[len(data)-1])
	}
	return page
}

// Bound is a list route's time filter: the query parameter Name in unix
// seconds, read into *Dst.
type Bound struct {
	Name string
	Dst  *time.Time
}

// ListParams reads what the list routes share: 'limit' (1 to 100, into
// *limit when given) and time bounds in unix seconds. Errors name the
// parameter.
func ListParams(q url.Values, limit *int, bounds ...Bound) error {
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return apierr.Invalid("limit", "'limit' must be an integer from 1 to 100")
		}
		*limit = n
	}
	for _, b := range bounds {
		if v := q.Get(b.Name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return apierr.Invalid(b.Name, fmt.Sprintf("'%s' must be a Unix time in seconds", b.Name))
			}
			*b.Dst = time.Unix(n, 0).UTC()
		}
	}
	return nil
}

// ClientIP is the address the request came from (the peer's: headers a
// client can set are not trusted without a configured proxy).
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Buffer is the ResponseWriter of an in-process call: it keeps the whole
// answer (a streamed one too).
type Buffer struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

// NewBuffer returns an empty Buffer.
func NewBuffer() *Buffer { return &Buffer{header: http.Header{}} }

// Header returns the answer's header.
func (b *Buffer) Header() http.Header { return b.header }

// WriteHeader keeps the first status written.
func (b *Buffer) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// Write appends to the body (status 200 when none was written).
func (b *Buffer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.buf.Write(p)
}

// Flush does nothing: the answer is kept whole.
func (b *Buffer) Flush() {}

// Status is the answer's status (200 when the handler wrote nothing).
func (b *Buffer) Status() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}

// Bytes is the answer's body.
func (b *Buffer) Bytes() []byte { return b.buf.Bytes() }
