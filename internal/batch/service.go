package batch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
)

// Config configures a Service.
type Config struct {
	Store Store
	// Events publishes batch.completed|failed|cancelled|expired to the
	// batch's team (nil: none).
	Events events.TeamPublisher
	// MaxLine bounds one line of an input file, in bytes: the API's
	// request body limit (default 8 MiB).
	MaxLine int
	// MaxFileBytes bounds an input file (default MaxFileBytes).
	MaxFileBytes int64
	// Concurrency bounds the lines this server runs at a time, across its
	// batches (default 4: a local model's slots).
	Concurrency int
	// Run runs the lines (nil: SetRun gives it later; batches wait).
	Run Run
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service serves files and batches and runs batches.
type Service struct {
	store  Store
	events events.TeamPublisher
	log    *slog.Logger
	now    func() time.Time
	scan   ScanOptions

	engine *durable.Engine
	// lines bounds the lines running on this server.
	lines chan struct{}

	mu     sync.Mutex
	invoke Run
	ready  chan struct{} // closed once invoke is set

	// stepLines bounds the lines one durable step runs; poll is how often
	// a running batch looks for a cancel.
	stepLines int
	poll      time.Duration
}

// New returns a Service. Register it on the durable engine before the
// engine launches, and give it the generation service (SetRun) to run lines.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	s := &Service{store: cfg.Store, events: cfg.Events, log: cfg.Log, now: cfg.Now, scan: ScanOptions{MaxLine: cfg.MaxLine, MaxBytes: cfg.MaxFileBytes},
		lines: make(chan struct{}, cfg.Concurrency), ready: make(chan struct{}), stepLines: 1024, poll: time.Second}
	s.scan.defaults()
	if cfg.Run != nil {
		s.SetRun(cfg.Run)
	}
	return s
}

// ---------------------------------------------------------------- files

// Upload stores an input file of purpose "batch" for team, streaming r to
// the store in pieces while checking it line by line (Scan), so that a
// 200 MB file never sits in memory. Errors: a 400 (param "file") naming
// the first bad line, *TooLargeError, or r's or the store's.
func (s *Service) Upload(ctx context.Context, teamID, filename string, r io.Reader) (File, error) {
	f := File{ID: newID("file-"), TeamID: teamID, Filename: cleanFilename(filename), Purpose: PurposeBatch, Status: FileUploading,
		CreatedAt: s.now().UTC()}
	if err := s.store.CreateFile(ctx, f); err != nil {
		return f, err
	}
	w := &partWriter{ctx: ctx, store: s.store, id: f.ID, buf: make([]byte, 0, partSize)}
	size, n, err := Scan(io.TeeReader(r, w), s.scan, nil)
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		if derr := s.store.DeleteFile(context.WithoutCancel(ctx), f.ID); derr != nil {
			s.log.Warn("batch: removing a failed upload", "file", f.ID, "err", derr)
		}
		var lp *LineProblem
		if errors.As(err, &lp) {
			// The line problem stays the cause, for errors.As.
			return f, &apierr.Error{Code: apierr.InvalidRequest, Param: "file", Message: lp.Error(), Err: lp}
		}
		return f, err
	}
	if err := s.store.FinishFile(ctx, f.ID, size, n); err != nil {
		return f, err
	}
	f.Status, f.Bytes, f.Lines = FileProcessed, size, n
	return f, nil
}

// cleanFilename keeps a file name's last element, at most 255 bytes.
func cleanFilename(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" || name == "" {
		name = "upload.jsonl"
	}
	for len(name) > 255 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// partWriter stores what is written to it in pieces of partSize.
type partWriter struct {
	ctx   context.Context
	store Store
	id    string
	buf   []byte
	n     int
}

func (w *partWriter) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		k := min(partSize-len(w.buf), len(p))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == partSize {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return written, nil
}

func (w *partWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.n++
	if err := w.store.AddFilePart(w.ctx, w.id, w.n, w.buf); err != nil {
		return err
	}
	w.buf = w.buf[:0]
	return nil
}

// File returns the team's file id. Errors: ErrNotFound, wrapped as
// `no file "id"` (also for another team's file, or one still uploading,
// exactly as one that does not exist).
func (s *Service) File(ctx context.Context, teamID, id string) (File, error) {
	f, err := s.store.GetFile(ctx, id)
	if err != nil {
		return f, err
	}
	if f.TeamID != teamID || f.Status != FileProcessed {
		return File{}, apierr.Wrapf(ErrNotFound, "no file %q", id)
	}
	return f, nil
}

// Files lists f.TeamID's files.
func (s *Service) Files(ctx context.Context, f FileFilter) ([]File, bool, error) {
	return s.store.ListFiles(ctx, f)
}

// DeleteFile deletes the team's file id. A batch's output or error file
// goes; the batch's lines stay with the batch. Errors: ErrNotFound.
func (s *Service) DeleteFile(ctx context.Context, teamID, id string) error {
	if _, err := s.File(ctx, teamID, id); err != nil {
		return err
	}
	return s.store.DeleteFile(ctx, id)
}

// Content writes the team's file id to w: an upload as it was sent, a
// batch's output or error file as JSONL, one line per request in input
// order. Errors: ErrNotFound, w's or the store's.
func (s *Service) Content(ctx context.Context, teamID, id string, w io.Writer) error {
	f, err := s.File(ctx, teamID, id)
	if err != nil {
		return err
	}
	if f.BatchID != "" {
		return s.writeResults(ctx, f.BatchID, f.Kind, w)
	}
	return s.readParts(ctx, f.ID, func(b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

// readParts calls fn with every piece of a file's content, in order.
func (s *Service) readParts(ctx context.Context, id string, fn func([]byte) error) error {
	for after := 0; ; {
		parts, err := s.store.FileParts(ctx, id, after, 8)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if err := fn(p); err != nil {
				return err
			}
		}
		if len(parts) < 8 {
			return nil
		}
		after += len(parts)
	}
}

func (s *Service) writeResults(ctx context.Context, batchID, kind string, w io.Writer) error {
	buf := make([]byte, 0, 64<<10)
	for after := -1; ; {
		lines, last, err := s.store.ResultLines(ctx, batchID, kind, after, 500)
		if err != nil {
			return err
		}
		for _, l := range lines {
			buf = append(append(buf, l...), '\n')
			if len(buf) >= 64<<10 {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		if len(lines) < 500 {
			break
		}
		after = last
	}
	if len(buf) > 0 {
		_, err := w.Write(buf)
		return err
	}
	return nil
}

// fileReader reads a stored file's content as one stream.
type fileReader struct {
	ctx   context.Context
	s     *Service
	id    string
	parts [][]byte
	next  int // pieces read so far
	done  bool
}

func (r *fileReader) Read(p []byte) (int, error) {
	for len(r.parts) == 0 {
		if r.done {
			return 0, io.EOF
		}
		parts, err := r.s.store.FileParts(r.ctx, r.id, r.next, 4)
		if err != nil {
			return 0, err
		}
		r.next += len(parts)
		r.done = len(parts) < 4
		r.parts = parts
	}
	n := copy(p, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	if len(r.parts[0]) == 0 {
		r.parts = r.parts[1:]
	}
	return n, nil
}

// ---------------------------------------------------------------- batches

// CreateRequest is POST /v1/batches's body.
type CreateRequest struct {
	InputFileID      string
	Endpoint         string
	CompletionWindow string
	Metadata         map[string]string
}

// Create creates a batch of the team's input file that runs as keyID, and
// starts it. Errors: a 400 naming the parameter (an unknown
// endpoint or window, a file that is not the team's batch input file, bad
// metadata), or the store's and the engine's.
func (s *Service) Create(ctx context.Context, teamID, keyID string, req CreateRequest) (Batch, error) {
	if req.InputFileID == "" {
		return Batch{}, invalid("input_file_id", "'input_file_id' is required")
	}
	if !slices.Contains(Endpoints, req.Endpoint) {
		return Batch{}, invalid("endpoint", "'endpoint' must be one of %s", strings.Join(Endpoints, ", "))
	}
	if req.CompletionWindow != CompletionWindow {
		return Batch{}, invalid("completion_window", "'completion_window' must be %q", CompletionWindow)
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return Batch{}, err
	}
	f, err := s.File(ctx, teamID, req.InputFileID)
	if errors.Is(err, ErrNotFound) {
		return Batch{}, invalid("input_file_id", "no file %q", req.InputFileID)
	}
	if err != nil {
		return Batch{}, err
	}
	if f.Purpose != PurposeBatch || f.BatchID != "" {
		return Batch{}, invalid("input_file_id", "the file %q has purpose %q; a batch's input file is uploaded with purpose \"batch\"", f.ID, f.Purpose)
	}
	now := s.now().UTC()
	b := Batch{ID: newID("batch_"), TeamID: teamID, KeyID: keyID, Endpoint: req.Endpoint, InputFileID: f.ID, CompletionWindow: req.CompletionWindow,
		Status: StatusValidating, Metadata: req.Metadata, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if err := s.store.CreateBatch(ctx, b); err != nil {
		return Batch{}, err
	}
	// A start that fails here is made again at the next server start
	// (Resume): the batch is stored.
	if err := s.start(ctx, b.ID); err != nil {
		return Batch{}, err
	}
	return b, nil
}

// checkMetadata holds metadata to OpenAI's rules: at most 16 pairs, keys
// up to 64 characters, values up to 512.
func checkMetadata(m map[string]string) error {
	if len(m) > 16 {
		return invalid("metadata", "'metadata' has %d keys; at most 16 are allowed", len(m))
	}
	for k, v := range m {
		if k == "" || utf8.RuneCountInString(k) > 64 {
			return invalid("metadata", "metadata keys are 1 to 64 characters long (%q)", k)
		}
		if utf8.RuneCountInString(v) > 512 {
			return invalid("metadata", "the metadata value of %q is longer than 512 characters", k)
		}
	}
	return nil
}

// Get returns the team's batch id. Errors: ErrNotFound, wrapped as
// `no batch "id"` (also for another team's).
func (s *Service) Get(ctx context.Context, teamID, id string) (Batch, error) {
	b, err := s.store.GetBatch(ctx, id)
	if err != nil {
		return b, err
	}
	if b.TeamID != teamID {
		return Batch{}, apierr.Wrapf(ErrNotFound, "no batch %q", id)
	}
	return b, nil
}

// List lists the team's batches newest first.
func (s *Service) List(ctx context.Context, teamID, after string, limit int) ([]Batch, bool, error) {
	return s.store.ListBatches(ctx, teamID, after, limit)
}

// Cancel asks the team's batch id to stop: it becomes cancelling, its
// lines running now end, no other starts, and it becomes cancelled with
// what it finished in its output file and the rest in its error file
// (batch_cancelled). Cancelling a batch cancelling or cancelled already
// changes nothing. Errors: ErrNotFound; ErrConflict, wrapped with the
// batch's status, for a batch that ended otherwise.
func (s *Service) Cancel(ctx context.Context, teamID, id string) (Batch, error) {
	b, err := s.Get(ctx, teamID, id)
	if err != nil {
		return b, err
	}
	for {
		switch b.Status {
		case StatusCancelling, StatusCancelled:
			return b, nil
		case StatusValidating, StatusInProgress:
		default:
			return b, apierr.Wrapf(ErrConflict, "the batch %s is %s: only a validating or in_progress batch can be cancelled", id, b.Status)
		}
		ok, err := s.store.TransitionBatch(ctx, id, Transition{From: []string{StatusValidating, StatusInProgress}, To: StatusCancelling, At: s.now().UTC()})
		if err != nil {
			return b, err
		}
		if b, err = s.store.GetBatch(ctx, id); err != nil || ok {
			return b, err
		}
	}
}
