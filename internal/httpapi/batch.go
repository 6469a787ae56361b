package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/batch"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// OpenAI's Files and Batch APIs: /v1/files and /v1/batches (package
// batch). Every route needs the inference scope; a team sees only its own
// files and batches (another team's id answers 404). A batch's lines run
// as the key that created it (Server.Invoke).

// BatchService is what the files and batches routes need (batch.Service).
type BatchService interface {
	Upload(ctx context.Context, teamID, filename string, r io.Reader) (batch.File, error)
	File(ctx context.Context, teamID, id string) (batch.File, error)
	Files(ctx context.Context, f batch.FileFilter) ([]batch.File, bool, error)
	DeleteFile(ctx context.Context, teamID, id string) error
	Content(ctx context.Context, teamID, id string, w io.Writer) error
	Create(ctx context.Context, teamID, keyID string, req batch.CreateRequest) (batch.Batch, error)
	Get(ctx context.Context, teamID, id string) (batch.Batch, error)
	List(ctx context.Context, teamID, after string, limit int) ([]batch.Batch, bool, error)
	Cancel(ctx context.Context, teamID, id string) (batch.Batch, error)
}

// maxUploadBody bounds POST /v1/files's body: a 200 MB file and its
// multipart framing. The route reads it as a stream (see uploadFile).
const maxUploadBody = batch.MaxFileBytes + 1<<20

// bodyLimit is the body limit of r's route: MaxBody, or the upload's.
func (s *Server) bodyLimit(r *http.Request) int64 {
	if r.Pattern == "POST /v1/files" && s.MaxBody < maxUploadBody {
		return maxUploadBody
	}
	return s.MaxBody
}

func (s *Server) batchesOn() error {
	if s.Batches == nil {
		return apierr.New(apierr.NotFound, "files and batches are not available on this server")
	}
	return nil
}

// uploadError is err, or a 413 naming the limit when the request body was
// cut off at it: http.MaxBytesError is this layer's (bodyLimit), not the
// batch service's, so it is classified here.
func uploadError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return apierr.New(apierr.BodyTooLarge, fmt.Sprintf("the upload is larger than %d bytes", maxErr.Limit))
	}
	return err
}

// uploadFile is POST /v1/files: multipart/form-data with a "file" part and
// a "purpose" field ("batch"). The file streams to the store while each
// line is checked; the first bad line fails the upload with a 400 naming
// it ("line 17: …"), and nothing is kept.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return apierr.Invalid("file", "POST /v1/files takes multipart/form-data with a 'file' part and a 'purpose' field")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return apierr.Invalid("file", "the multipart body could not be read: "+err.Error())
	}
	team := teamOf(r)
	var (
		purpose string
		f       batch.File
		stored  bool
	)
	// drop removes a stored file the request turns out not to want.
	drop := func() {
		if stored {
			if err := s.Batches.DeleteFile(context.WithoutCancel(r.Context()), team, f.ID); err != nil {
				s.Log.Warn("removing a refused upload", "file", f.ID, "err", err)
			}
		}
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			drop()
			if errors.As(err, new(*http.MaxBytesError)) {
				return uploadError(err)
			}
			return apierr.Invalid("file", "the multipart body could not be read: "+err.Error())
		}
		switch name := part.FormName(); name {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(part, 256))
			if err != nil {
				drop()
				return uploadError(err)
			}
			purpose = strings.TrimSpace(string(b))
			if purpose != batch.PurposeBatch {
				drop()
				return apierr.Invalid("purpose", fmt.Sprintf("'purpose' must be %q: this server keeps files for the Batch API only", batch.PurposeBatch))
			}
		case "file":
			if stored {
				drop()
				return apierr.Invalid("file", "the multipart body has more than one 'file' part")
			}
			if f, err = s.Batches.Upload(r.Context(), team, part.FileName(), part); err != nil {
				return uploadError(err)
			}
			stored = true
		default:
			drop()
			return apierr.Invalid(name, fmt.Sprintf("unknown field %q (POST /v1/files takes 'file' and 'purpose')", name))
		}
		part.Close()
	}
	switch {
	case !stored:
		return apierr.Invalid("file", "the multipart body has no 'file' part")
	case purpose == "":
		drop()
		return apierr.Invalid("purpose", "'purpose' is required (\"batch\")")
	}
	return wire.JSON(w, http.StatusOK, f.Object())
}

// listFiles is GET /v1/files: the team's files, newest first (order=asc:
// oldest first), optionally of one purpose, limit 1 to 10,000 (default
// 10,000), after a file id.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	q := r.URL.Query()
	f := batch.FileFilter{TeamID: teamOf(r), Purpose: q.Get("purpose"), After: q.Get("after"), Limit: 10_000}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10_000 {
			return apierr.Invalid("limit", "'limit' must be an integer from 1 to 10000")
		}
		f.Limit = n
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		f.Ascending = true
	default:
		return apierr.Invalid("order", "'order' is asc or desc")
	}
	files, more, err := s.Batches.Files(r.Context(), f)
	if err != nil {
		return err
	}
	data := make([]batch.FileObject, len(files))
	for i, f := range files {
		data[i] = f.Object()
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(o batch.FileObject) string { return o.ID }))
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	f, err := s.Batches.File(r.Context(), teamOf(r), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, f.Object())
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.Batches.DeleteFile(r.Context(), teamOf(r), id); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
}

// fileContent is GET /v1/files/{id}/content: the file's bytes, streamed
// from the store.
func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	f, err := s.Batches.File(r.Context(), teamOf(r), id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(f.Bytes, 10))
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(f.Filename))
	w.WriteHeader(http.StatusOK)
	if err := s.Batches.Content(r.Context(), teamOf(r), id, w); err != nil {
		// The status is sent; the short body tells the client.
		s.Log.Warn("file content ended early", "file", id, "err", err)
	}
	return nil
}

type createBatchRequest struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
}

// createBatch is POST /v1/batches.
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	var req createBatchRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	k, _ := KeyFrom(r.Context())
	b, err := s.Batches.Create(r.Context(), k.TeamID, k.ID, batch.CreateRequest{InputFileID: req.InputFileID, Endpoint: req.Endpoint,
		CompletionWindow: req.CompletionWindow, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, b.Object())
}

// listBatches is GET /v1/batches: the team's batches newest first, limit 1
// to 100 (default 20), after a batch id.
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	limit := 20
	if err := wire.ListParams(r.URL.Query(), &limit); err != nil {
		return err
	}
	list, more, err := s.Batches.List(r.Context(), teamOf(r), r.URL.Query().Get("after"), limit)
	if err != nil {
		return err
	}
	data := make([]batch.Object, len(list))
	for i, b := range list {
		data[i] = b.Object()
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(o batch.Object) string { return o.ID }))
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	b, err := s.Batches.Get(r.Context(), teamOf(r), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, b.Object())
}

// cancelBatch is POST /v1/batches/{id}/cancel.
func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) error {
	if err := s.batchesOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	b, err := s.Batches.Cancel(r.Context(), teamOf(r), id)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, b.Object())
}
