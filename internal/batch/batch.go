// Package batch is OpenAI's Batch API on Sovereign: files uploaded with
// purpose "batch" (JSONL, one request a line, checked line by line as they
// stream in), batches that run every line of such a file through the same
// route, scopes, limits, policies and request log as an API call made by
// the key that created the batch, and the output and error files that
// hold their answers.
//
// A batch runs as one durable workflow ("batch.run", id "batch:<id>"):
// its lines are copied into rows of their own when it starts, each line's
// answer is written to its row the moment it arrives, and the workflow
// only loops over the rows still pending. A server killed in the middle
// resumes the batch at its next start (or, on PostgreSQL, another server
// takes it over) without running a finished line again. Lines run at
// background priority (inference.PriorityBackground): on a local model
// they take only slots interactive requests leave idle. See docs/batch.md.
package batch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Purposes of files.
const (
	// PurposeBatch is an uploaded batch input file.
	PurposeBatch = "batch"
	// PurposeBatchOutput is a batch's output or error file.
	PurposeBatchOutput = "batch_output"
)

// File statuses. Only processed files are visible through the API.
const (
	// FileUploading is a file whose upload has not ended (or failed: its
	// row and parts are removed then, or at the next start after a crash).
	FileUploading = "uploading"
	// FileProcessed is a complete, validated file.
	FileProcessed = "processed"
)

// Kinds of batch result files and of finished lines.
const (
	KindOutput = "output" // answered 2xx: the output file
	KindError  = "error"  // any other outcome: the error file
)

// Batch statuses, as OpenAI names them.
const (
	StatusValidating = "validating"
	StatusFailed     = "failed"
	StatusInProgress = "in_progress"
	StatusFinalizing = "finalizing"
	StatusCompleted  = "completed"
	StatusExpired    = "expired"
	StatusCancelling = "cancelling"
	StatusCancelled  = "cancelled"
)

// Line statuses (batch_items.status).
const (
	LinePending   = "pending"
	LineCompleted = "completed" // answered 2xx
	LineFailed    = "failed"    // answered with an error, or could not be sent
	LineExpired   = "expired"   // not run before the completion window ended
	LineCancelled = "cancelled" // not run before the batch was cancelled
)

// Final reports whether a batch in status s will not change again.
func Final(s string) bool {
	switch s {
	case StatusFailed, StatusCompleted, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Endpoints are the routes a batch may run, as OpenAI lists them (those
// Sovereign serves).
var Endpoints = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses"}

// CompletionWindow is the one completion window OpenAI accepts.
const CompletionWindow = "24h"

// Limits of an input file (OpenAI's).
const (
	// MaxFileBytes bounds an uploaded file (200 MB).
	MaxFileBytes = 200 << 20
	// MaxLines bounds the requests of a batch.
	MaxLines = 50_000
	// MaxCustomID bounds a custom_id, in bytes.
	MaxCustomID = 1024
)

// partSize is the size of the pieces a file's content is stored in.
const partSize = 1 << 20

// File is an uploaded file, or a batch's output or error file (BatchID and
// Kind set: its content is the batch's finished lines of that kind, in
// input order, read from the batch's rows rather than stored twice).
type File struct {
	ID        string // "file-" + 24 hex characters
	TeamID    string
	Filename  string
	Purpose   string
	Status    string
	Bytes     int64
	Lines     int
	BatchID   string
	Kind      string
	CreatedAt time.Time
}

// LineError is one of a failed batch's errors (OpenAI's BatchError).
type LineError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

// Batch is a batch and its progress.
type Batch struct {
	ID               string // "batch_" + 24 hex characters
	TeamID           string
	KeyID            string // the key its lines run as
	Endpoint         string
	InputFileID      string
	CompletionWindow string
	Status           string
	// Model is the first line's model (informative).
	Model        string
	Errors       []LineError
	OutputFileID string
	ErrorFileID  string
	Metadata     map[string]string
	CreatedAt    time.Time
	ExpiresAt    time.Time
	// Times of the transitions (nil: not yet).
	InProgressAt, FinalizingAt, CompletedAt, FailedAt, ExpiredAt, CancellingAt, CancelledAt *time.Time
	// Total lines; Completed answered 2xx; Failed every other finished
	// line (errors, and lines expired or cancelled before they ran).
	Total, Completed, Failed int
	// OutputBytes/ErrorBytes and OutputLines/ErrorLines measure the
	// output and error files as they grow.
	OutputBytes, ErrorBytes int64
	OutputLines, ErrorLines int
	// InputTokens and OutputTokens add up the answered lines' usage.
	InputTokens, OutputTokens int64
}

// Item is one line of a batch.
type Item struct {
	Index    int // position among the file's requests, from 0
	Line     int // line number in the input file, from 1
	CustomID string
	Body     json.RawMessage
}

// Result is how a line ended: its status, the file it goes to and that
// file's line (JSON, no newline), and the tokens it used.
type Result struct {
	Index        int
	Status       string
	Kind         string
	Line         string
	InputTokens  int
	OutputTokens int
}

// Transition moves a batch from one of From to To, stamping To's time
// column with At (unless zero), and sets the fields given with it.
type Transition struct {
	From []string
	To   string
	At   time.Time
	// Total, when set, is the number of lines.
	Total *int
	// Model, when not "", is the batch's model.
	Model string
	// Errors, when set, are the reasons of a failed batch.
	Errors []LineError
	// OutputFileID and ErrorFileID, when not "", are the result files.
	OutputFileID, ErrorFileID string
}

// FileFilter selects files to list.
type FileFilter struct {
	TeamID  string
	Purpose string // "": any
	// After is the id of the last file of the previous page ("": first).
	After string
	Limit int
	// Ascending lists oldest first (default: newest first).
	Ascending bool
}

// Store keeps files, batches and their lines. internal/sqlstore implements
// it on SQLite and PostgreSQL.
type Store interface {
	// CreateFile stores f (Status FileUploading for an upload in progress).
	// Errors: ErrConflict when the id is taken.
	CreateFile(ctx context.Context, f File) error
	// AddFilePart stores the n-th piece (from 1) of a file's content.
	AddFilePart(ctx context.Context, fileID string, n int, data []byte) error
	// FinishFile marks an upload complete (FileProcessed) with its size
	// and line count. Errors: ErrNotFound.
	FinishFile(ctx context.Context, fileID string, bytes int64, lines int) error
	// GetFile returns the file id whatever its status. Errors:
	// ErrNotFound.
	GetFile(ctx context.Context, id string) (File, error)
	// ListFiles returns f's processed files, a page at a time, and whether
	// more follow.
	ListFiles(ctx context.Context, f FileFilter) ([]File, bool, error)
	// DeleteFile removes a file and its content. Errors: ErrNotFound.
	DeleteFile(ctx context.Context, id string) error
	// FileParts returns up to limit pieces of a file's content after piece
	// number after (0: from the start), in order.
	FileParts(ctx context.Context, fileID string, after, limit int) ([][]byte, error)
	// PurgeUploads removes files still uploading that were created before
	// before (uploads a crash interrupted) and returns how many.
	PurgeUploads(ctx context.Context, before time.Time) (int, error)

	// CreateBatch stores b. Errors: ErrConflict when the id is taken.
	CreateBatch(ctx context.Context, b Batch) error
	// GetBatch returns the batch id. Errors: ErrNotFound.
	GetBatch(ctx context.Context, id string) (Batch, error)
	// ListBatches returns a team's batches newest first, after the batch
	// after ("": from the newest), up to limit, and whether more follow.
	ListBatches(ctx context.Context, teamID, after string, limit int) ([]Batch, bool, error)
	// OpenBatches returns the ids of the batches not in a final status.
	OpenBatches(ctx context.Context) ([]string, error)
	// TransitionBatch applies t to the batch id when its status is one of
	// t.From, and reports whether it did. Errors: ErrNotFound.
	TransitionBatch(ctx context.Context, id string, t Transition) (bool, error)

	// AddItems stores a batch's lines; lines stored already (by index) are
	// left as they are, so that a repeated call stores nothing twice.
	AddItems(ctx context.Context, batchID string, items []Item) error
	// PendingItems returns up to limit lines of the batch still pending
	// with an index above after, in order.
	PendingItems(ctx context.Context, batchID string, after, limit int) ([]Item, error)
	// FinishItems records how lines ended, each only if it is still
	// pending, and adds them to the batch's counts, in one transaction;
	// it returns how many it recorded.
	FinishItems(ctx context.Context, batchID string, rs []Result) (int, error)
	// ResultLines returns up to limit finished lines' file lines of kind,
	// with an index above after, in order, and the last one's index.
	ResultLines(ctx context.Context, batchID, kind string, after, limit int) ([]string, int, error)
}

// Errors. They are API errors (internal/apierr): what the service and
// the store return wraps them with a message naming the file or batch
// (apierr.Wrapf), which is what the client reads; errors.Is finds them.
var (
	// ErrNotFound: no file or batch of that id (or not the caller's team's).
	ErrNotFound = apierr.New(apierr.NotFound, "file or batch not found")
	// ErrConflict: an id is taken, or a batch cannot make the change asked
	// in its status.
	ErrConflict = apierr.New(apierr.Conflict, "the batch cannot make this change")
)

// invalid is a request the API refuses with 400, naming the parameter.
func invalid(param, format string, args ...any) error {
	return apierr.Invalid(param, fmt.Sprintf(format, args...))
}

// newID returns prefix followed by 24 random hex characters.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// derivedID returns prefix followed by 24 hex characters derived from
// parts: the same every time, so that a repeated step names the same
// thing.
func derivedID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return prefix + hex.EncodeToString(h.Sum(nil)[:12])
}

// OutputFileID and ErrorFileID are the ids of a batch's result files.
func OutputFileID(batchID string) string { return derivedID("file-", batchID, KindOutput) }

// ErrorFileID is the id of a batch's error file.
func ErrorFileID(batchID string) string { return derivedID("file-", batchID, KindError) }

// RequestID is the id of a batch's line in its output and error files
// ("batch_req_…").
func RequestID(batchID string, index int) string {
	return derivedID("batch_req_", batchID, strconv.Itoa(index))
}
