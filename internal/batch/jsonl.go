package batch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Request is one line of a batch input file: {custom_id, method, url,
// body}.
type Request struct {
	CustomID string
	Method   string
	URL      string
	Body     json.RawMessage
}

// ParseLine parses and checks one line of a batch input file: a JSON
// object with exactly the fields custom_id (a non-empty string of at most
// MaxCustomID bytes), method ("POST"), url (one of Endpoints) and body (a
// JSON object that does not ask for a stream). The error says what is
// wrong, without the line number.
func ParseLine(b []byte) (Request, error) {
	var r Request
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return r, errors.New("not a JSON object")
	}
	if !utf8.Valid(b) {
		return r, errors.New("not valid UTF-8")
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&fields); err != nil {
		return r, fmt.Errorf("not a JSON object: %s", jsonProblem(err))
	}
	if dec.More() {
		return r, errors.New("more than one JSON value on the line")
	}
	if _, err := dec.Token(); err != io.EOF {
		return r, errors.New("more than one JSON value on the line")
	}
	for k := range fields {
		switch k {
		case "custom_id", "method", "url", "body":
		default:
			return r, fmt.Errorf("unknown field %q (a line has custom_id, method, url and body)", k)
		}
	}
	str := func(name string) (string, error) {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return "", fmt.Errorf("'%s' is missing", name)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("'%s' must be a string", name)
		}
		return s, nil
	}
	var err error
	if r.CustomID, err = str("custom_id"); err != nil {
		return r, err
	}
	if r.CustomID == "" {
		return r, errors.New("'custom_id' must not be empty")
	}
	if len(r.CustomID) > MaxCustomID {
		return r, fmt.Errorf("'custom_id' is longer than %d bytes", MaxCustomID)
	}
	if r.Method, err = str("method"); err != nil {
		return r, err
	}
	if r.Method != "POST" {
		return r, fmt.Errorf("'method' must be \"POST\", not %q", r.Method)
	}
	if r.URL, err = str("url"); err != nil {
		return r, err
	}
	if !slices.Contains(Endpoints, r.URL) {
		return r, fmt.Errorf("'url' %q is not one of %s", r.URL, strings.Join(Endpoints, ", "))
	}
	body, ok := fields["body"]
	if !ok || string(body) == "null" {
		return r, errors.New("'body' is missing")
	}
	var obj map[string]json.RawMessage
	if body[0] != '{' || json.Unmarshal(body, &obj) != nil {
		return r, errors.New("'body' must be a JSON object")
	}
	if s, ok := obj["stream"]; ok && string(s) == "true" {
		return r, errors.New("'body.stream' must not be true: a batch's answers are not streamed")
	}
	r.Body = body
	return r, nil
}

// jsonProblem is a JSON error without Go's type names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "not an object"
	}
	return err.Error()
}

// LineProblem is a line of an input file that is not a valid request.
type LineProblem struct {
	Line    int // from 1
	Message string
}

func (e *LineProblem) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Message) }

// ScanOptions bound what Scan accepts (0: the package's limits).
type ScanOptions struct {
	MaxBytes int64 // the file (default MaxFileBytes)
	MaxLine  int   // one line, in bytes (default 8 MiB)
	MaxLines int   // requests (default MaxLines)
}

func (o *ScanOptions) defaults() {
	if o.MaxBytes <= 0 {
		o.MaxBytes = MaxFileBytes
	}
	if o.MaxLine <= 0 {
		o.MaxLine = 8 << 20
	}
	if o.MaxLines <= 0 {
		o.MaxLines = MaxLines
	}
}

// Scan reads a batch input file from r line by line, checks every line
// with ParseLine and that no custom_id repeats, and calls each with every
// request in order (nil: none). Blank lines are skipped; line numbers
// count them. It returns the file's size and number of requests. Errors:
// *TooLargeError past o.MaxBytes, *LineProblem for the first bad line (or
// a file that holds no request, Line 0), each's error, or r's.
func Scan(r io.Reader, o ScanOptions, each func(line int, req Request) error) (size int64, n int, err error) {
	o.defaults()
	cr := &countingReader{r: r, max: o.MaxBytes}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 0, min(64<<10, o.MaxLine+1)), o.MaxLine+1)
	// A custom_id is remembered by a 128-bit digest with its line: a file
	// of 50,000 requests costs about 2 MB however long the ids.
	seen := map[[16]byte]int{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		req, err := ParseLine(b)
		if err != nil {
			if cr.n > cr.max {
				// The scanner hands out the line the limit cut in two.
				return cr.n, n, &TooLargeError{Limit: o.MaxBytes}
			}
			return cr.n, n, &LineProblem{Line: line, Message: err.Error()}
		}
		d := sha256.Sum256([]byte(req.CustomID))
		var k [16]byte
		copy(k[:], d[:16])
		if first, dup := seen[k]; dup {
			return cr.n, n, &LineProblem{Line: line, Message: fmt.Sprintf("custom_id %q is used by line %d already; each line needs its own", req.CustomID, first)}
		}
		seen[k] = line
		n++
		if n > o.MaxLines {
			return cr.n, n, &LineProblem{Line: line, Message: fmt.Sprintf("a batch file holds at most %d requests", o.MaxLines)}
		}
		if each != nil {
			if err := each(line, req); err != nil {
				return cr.n, n, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			return cr.n, n, &LineProblem{Line: line + 1, Message: fmt.Sprintf("longer than %d bytes, the most a request may have", o.MaxLine)}
		case errors.Is(err, errTooLarge):
			return cr.n, n, &TooLargeError{Limit: o.MaxBytes}
		}
		return cr.n, n, err
	}
	if n == 0 {
		return cr.n, 0, &LineProblem{Message: "the file holds no request (a JSONL file: one JSON object a line)"}
	}
	return cr.n, n, nil
}

var errTooLarge = errors.New("file too large")

// TooLargeError is a batch input file over its size limit (a 413, not a
// problem of the line the limit happened to cut).
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the file is larger than %d bytes, the most a batch input file may have", e.Limit)
}

// APIError is a 413 request_too_large naming the file: the limit is the
// file's, not the request body's.
func (e *TooLargeError) APIError() *apierr.Error {
	return &apierr.Error{Code: apierr.BodyTooLarge, Param: "file", Message: e.Error()}
}

// countingReader counts what it reads and fails past max bytes.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	if c.n > c.max {
		return k, errTooLarge
	}
	return k, err
}
