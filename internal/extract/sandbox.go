package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"time"
)

// A PDF reader follows the structure the file declares: object streams
// that extend themselves, names hidden behind #-escapes, nesting and counts
// no real file has. preflightPDF and the bounds of extractPDF refuse the
// hostile files known so far, but a pattern check is one escape away from
// the next loop, and a goroutine cannot be stopped: one upload would pin a
// core for ever and hold shutdown. So a PDF is read in a child process
// under a budget it cannot escape — wall time (the child is killed),
// memory (RLIMIT_AS and the Go memory limit) and CPU seconds (RLIMIT_CPU) —
// and the request's context (a client that leaves, a server that shuts
// down) kills it too. Text and HTML are read in process: their parsers are
// linear and bounded by Options.

// Budget bounds one extraction in a child process. A zero field takes its
// default.
type Budget struct {
	// Time is the wall time the child may take (default 30 s).
	Time time.Duration
	// Memory is the address space the child may map, in bytes (default
	// 2 GiB).
	Memory int64
}

// Default budget of a sandboxed extraction.
const (
	DefaultBudgetTime   = 30 * time.Second
	DefaultBudgetMemory = 2 << 30
)

func (b Budget) withDefaults() Budget {
	if b.Time <= 0 {
		b.Time = DefaultBudgetTime
	}
	if b.Memory <= 0 {
		b.Memory = DefaultBudgetMemory
	}
	return b
}

// Sandbox extracts files, PDFs in a child process under a Budget.
type Sandbox struct {
	// Command is the child's argv: a program that runs ServeChild on its
	// standard input and output (`sovereign extract`). Empty: PDFs are
	// read in process, as Options.Extract does.
	Command []string
	Options Options
	Budget  Budget
}

// childRequest is the first line the child reads; the file's bytes follow.
type childRequest struct {
	Name        string  `json:"name"`
	ContentType string  `json:"content_type"`
	Options     Options `json:"options"`
	Memory      int64   `json:"memory"`
	CPUSeconds  int64   `json:"cpu_seconds"`
}

// childResult is what the child writes: the document, or the error's kind
// and message.
type childResult struct {
	Text   string      `json:"text"`
	Title  string      `json:"title"`
	Format string      `json:"format"`
	Error  *childError `json:"error,omitempty"`
}

// childError is an extraction error as the child reports it: its kind
// (a key of kinds) and its message.
type childError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

var kinds = map[string]error{"empty": ErrEmpty, "unsupported": ErrUnsupported, "malformed": ErrMalformed, "too_large": ErrTooLarge}

// Extract returns the text of the file as Options.Extract does, reading a
// PDF in the child process. ctx ends the child early (its error is then
// ctx's). A child that runs out of its budget is an *Error wrapping
// ErrMalformed that names the budget.
func (s Sandbox) Extract(ctx context.Context, name, contentType string, data []byte) (Document, error) {
	o := s.Options.withDefaults()
	// Checked here too: a file over the limit starts no child.
	if err := o.checkSize(data); err != nil {
		return Document{}, err
	}
	if len(s.Command) == 0 || len(data) == 0 || detect(name, contentType, data) != FormatPDF {
		return o.Extract(name, contentType, data)
	}
	b := s.Budget.withDefaults()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, b.Time)
	defer cancel()
	head, err := json.Marshal(childRequest{Name: name, ContentType: contentType, Options: o, Memory: b.Memory,
		CPUSeconds: int64(b.Time/time.Second) + 1})
	if err != nil {
		return Document{}, err
	}
	cmd := exec.CommandContext(ctx, s.Command[0], s.Command[1:]...)
	cmd.Stdin = io.MultiReader(bytes.NewReader(head), bytes.NewReader([]byte("\n")), bytes.NewReader(data))
	var out, stderr limitedBuffer
	out.max, stderr.max = o.MaxTextBytes*2+1<<20, 4<<10
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.WaitDelay = time.Second
	dieWithParent(cmd)
	runErr := cmd.Run()
	if err := parent.Err(); err != nil {
		return Document{}, err
	}
	if ctx.Err() != nil {
		return Document{}, errorf(ErrMalformed, "the PDF could not be read within the time budget of %s", b.Time)
	}
	var res childResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || out.over {
		if runErr != nil {
			// Killed by RLIMIT_CPU, or the Go runtime out of memory.
			return Document{}, errorf(ErrMalformed, "the PDF could not be read within the budget of %s of memory and %s (the reader stopped: %v)",
				sizeString(int(b.Memory)), b.Time, runErr)
		}
		return Document{}, fmt.Errorf("extracting %s in a child process: unreadable result: %v (%s)", name, err, stderr.String())
	}
	if res.Error != nil {
		kind := kinds[res.Error.Kind]
		if kind == nil {
			kind = ErrMalformed
		}
		return Document{}, &Error{Kind: kind, Msg: res.Error.Message}
	}
	return Document{Text: res.Text, Title: res.Title, Format: res.Format}, nil
}

// limitedBuffer keeps at most max bytes and notes whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(0, room)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// ServeChild is the child's side of Sandbox.Extract: it reads the request
// line and the file from r, puts itself under the budget the request
// names, extracts, and writes the result as JSON to w.
func ServeChild(r io.Reader, w io.Writer) error {
	br := bufio.NewReader(r)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("extract: reading the request: %w", err)
	}
	var req childRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("extract: the request: %w", err)
	}
	if req.Memory > 0 {
		// The Go heap is kept well inside the address space, so that the
		// collector works hard before the kernel refuses a mapping.
		debug.SetMemoryLimit(req.Memory / 2)
	}
	if err := limitSelf(req.Memory, req.CPUSeconds); err != nil {
		return fmt.Errorf("extract: setting the budget: %w", err)
	}
	o := req.Options.withDefaults()
	data, err := io.ReadAll(io.LimitReader(br, int64(o.MaxBytes)+1))
	if err != nil {
		return fmt.Errorf("extract: reading the file: %w", err)
	}
	doc, err := o.Extract(req.Name, req.ContentType, data)
	res := childResult{Text: doc.Text, Title: doc.Title, Format: doc.Format}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Kind: ErrMalformed, Msg: err.Error()}
		}
		res = childResult{Error: &childError{Kind: "malformed", Message: e.Msg}}
		for k, v := range kinds {
			if errors.Is(e.Kind, v) {
				res.Error.Kind = k
			}
		}
	}
	return json.NewEncoder(w).Encode(res)
}
