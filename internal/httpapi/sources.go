package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// Sources is what the collection routes need of the sources service.
type Sources interface {
	CreateCollection(ctx context.Context, c sources.Collection) (sources.Collection, error)
	Collection(ctx context.Context, teamID, id string) (sources.Collection, error)
	ListCollections(ctx context.Context, teamID string) ([]sources.Collection, error)
	DeleteCollection(ctx context.Context, id string) error
	Ingest(ctx context.Context, c sources.Collection, d sources.Document) (sources.Document, error)
	Document(ctx context.Context, c sources.Collection, id string) (sources.Document, error)
	ListDocuments(ctx context.Context, collectionID string) ([]sources.Document, error)
	DeleteDocument(ctx context.Context, d sources.Document) error
	Search(ctx context.Context, cols []sources.Collection, query string, o sources.SearchOptions) ([]sources.Hit, error)
	RecordLinks(ctx context.Context, links []sources.SourceLink) error
	SourceLinks(ctx context.Context, f sources.LinkFilter) ([]sources.SourceLink, bool, error)
}

// Extractor turns an uploaded file into text: its title (if it has one)
// and format. Errors should say plainly why a file cannot be read; they
// become 400s. ctx is the upload's: a client that leaves ends the work.
type Extractor func(ctx context.Context, name, contentType string, data []byte) (text, title, format string, err error)

// CollectionObject is the API's collection.
type CollectionObject struct {
	ID             string         `json:"id"`
	Object         string         `json:"object"`
	Name           string         `json:"name"`
	Description    string         `json:"description"`
	EmbeddingModel string         `json:"embedding_model"`
	Metadata       map[string]any `json:"metadata"`
	CreatedAt      int64          `json:"created_at"`
	DocumentCount  int            `json:"document_count"`
	ChunkCount     int            `json:"chunk_count"`
}

func collectionObject(c sources.Collection) CollectionObject {
	m := c.Metadata
	if m == nil {
		m = map[string]any{}
	}
	return CollectionObject{ID: c.ID, Object: "collection", Name: c.Name, Description: c.Description, EmbeddingModel: c.EmbeddingModel,
		Metadata: m, CreatedAt: c.CreatedAt.Unix(), DocumentCount: c.DocumentCount, ChunkCount: c.ChunkCount}
}

// DocumentObject is the API's document (without its text).
type DocumentObject struct {
	ID           string         `json:"id"`
	Object       string         `json:"object"`
	CollectionID string         `json:"collection_id"`
	Title        string         `json:"title"`
	URL          string         `json:"url"`
	Metadata     map[string]any `json:"metadata"`
	Format       string         `json:"format"`
	Status       string         `json:"status"`
	Progress     float64        `json:"progress"`
	Error        *string        `json:"error"`
	Chars        int            `json:"chars"`
	ChunkCount   int            `json:"chunk_count"`
	CreatedAt    int64          `json:"created_at"`
	UpdatedAt    int64          `json:"updated_at"`
}

func documentObject(d sources.Document) DocumentObject {
	m := d.Metadata
	if m == nil {
		m = map[string]any{}
	}
	o := DocumentObject{ID: d.ID, Object: "document", CollectionID: d.CollectionID, Title: d.Title, URL: d.URL, Metadata: m, Format: d.Format,
		Status: d.Status, Progress: d.Progress, Chars: d.Chars, ChunkCount: d.ChunkCount, CreatedAt: d.CreatedAt.Unix(), UpdatedAt: d.UpdatedAt.Unix()}
	if d.Error != "" {
		e := d.Error
		o.Error = &e
	}
	return o
}

func teamOf(r *http.Request) string {
	k, _ := KeyFrom(r.Context())
	return k.TeamID
}

// collection returns the path's collection when it belongs to the
// caller's team (the sources service checks).
func (s *Server) collection(r *http.Request) (sources.Collection, error) {
	if err := s.sourcesOn(); err != nil {
		return sources.Collection{}, err
	}
	return s.Sources.Collection(r.Context(), teamOf(r), r.PathValue("id"))
}

const maxMetadataKeys = 32

type createCollectionRequest struct {
	Name           string         `json:"name"`
	Description    string         `json:"description"`
	EmbeddingModel string         `json:"embedding_model"`
	Metadata       map[string]any `json:"metadata"`
}

// sourcesOn reports a 404 when the server has no sources service.
func (s *Ops) sourcesOn() error {
	if s.Sources == nil {
		return apierr.New(apierr.NotFound, "collections are not available on this server")
	}
	return nil
}

func (s *Server) createCollection(w http.ResponseWriter, r *http.Request) error {
	if err := s.sourcesOn(); err != nil {
		return err
	}
	var req createCollectionRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > 128 {
		return apierr.Invalid("name", "'name' must be 1 to 128 characters")
	}
	if len(req.Metadata) > maxMetadataKeys {
		return apierr.Invalid("metadata", fmt.Sprintf("'metadata' may hold at most %d keys", maxMetadataKeys))
	}
	model := req.EmbeddingModel
	if model == "" {
		model = s.DefaultEmbeddingModel
	}
	m, err := s.Models.Resolve(r.Context(), model)
	if err != nil {
		return apierr.Invalid("embedding_model", fmt.Sprintf("the embedding model %q does not exist; GET /v1/models lists the models", model))
	}
	if !m.Has("embeddings") {
		return apierr.Invalid("embedding_model", fmt.Sprintf("the model %q does not produce embeddings", m.ID))
	}
	c, err := s.Sources.CreateCollection(r.Context(), sources.Collection{TeamID: teamOf(r), Name: req.Name, Description: req.Description, EmbeddingModel: m.ID, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, collectionObject(c))
}

func (s *Server) listCollections(w http.ResponseWriter, r *http.Request) error {
	if err := s.sourcesOn(); err != nil {
		return err
	}
	list, err := s.Sources.ListCollections(r.Context(), teamOf(r))
	if err != nil {
		return err
	}
	data := make([]CollectionObject, len(list))
	for i, c := range list {
		data[i] = collectionObject(c)
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getCollection(w http.ResponseWriter, r *http.Request) error {
	c, err := s.collection(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, collectionObject(c))
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request) error {
	c, err := s.collection(r)
	if err != nil {
		return err
	}
	if err := s.Sources.DeleteCollection(r.Context(), c.ID); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": c.ID, "object": "collection", "deleted": true})
}

type createDocumentRequest struct {
	Title    string         `json:"title"`
	URL      string         `json:"url"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata"`
}

// createDocument adds a document: a JSON body with its text, or a
// multipart upload (a "file" part, with optional title, url and metadata
// parts). Ingestion continues in the background (202).
func (s *Server) createDocument(w http.ResponseWriter, r *http.Request) error {
	c, err := s.collection(r)
	if err != nil {
		return err
	}
	var d sources.Document
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		if d, err = s.uploadedDocument(r); err != nil {
			return err
		}
	} else {
		var req createDocumentRequest
		if err := openai.Decode(r.Body, &req); err != nil {
			return err
		}
		if strings.TrimSpace(req.Text) == "" {
			return apierr.Invalid("text", "'text' must be a non-empty string (or upload a file as multipart/form-data)")
		}
		d = sources.Document{Title: req.Title, URL: req.URL, Metadata: req.Metadata, Format: "text", Text: req.Text}
	}
	if len(d.Metadata) > maxMetadataKeys {
		return apierr.Invalid("metadata", fmt.Sprintf("'metadata' may hold at most %d keys", maxMetadataKeys))
	}
	out, err := s.Sources.Ingest(r.Context(), c, d)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusAccepted, documentObject(out))
}

func (s *Server) uploadedDocument(r *http.Request) (sources.Document, error) {
	var d sources.Document
	if s.Extract == nil {
		return d, apierr.Invalid("file", "file uploads are not available on this server; send JSON with 'text'")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return d, apierr.Invalid("file", "the multipart body could not be read: "+err.Error())
	}
	var data []byte
	var name, ctype string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				return d, apierr.New(apierr.BodyTooLarge, fmt.Sprintf("the upload exceeds the limit of %d bytes", maxErr.Limit))
			}
			return d, apierr.Invalid("file", "the multipart body could not be read: "+err.Error())
		}
		b, err := io.ReadAll(p)
		if err != nil {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				return d, apierr.New(apierr.BodyTooLarge, fmt.Sprintf("the upload exceeds the limit of %d bytes", maxErr.Limit))
			}
			return d, apierr.Invalid("file", "the upload could not be read: "+err.Error())
		}
		switch p.FormName() {
		case "file":
			data, name, ctype = b, p.FileName(), p.Header.Get("Content-Type")
		case "title":
			d.Title = string(b)
		case "url":
			d.URL = string(b)
		case "metadata":
			if err := openai.Decode(strings.NewReader(string(b)), &d.Metadata); err != nil {
				return d, apierr.Invalid("metadata", "'metadata' must be a JSON object")
			}
		}
	}
	if data == nil {
		return d, apierr.Invalid("file", "the multipart body has no 'file' part")
	}
	text, title, format, err := s.Extract(r.Context(), name, ctype, data)
	if err != nil {
		if e := (*apierr.Error)(nil); errors.As(err, &e) {
			return d, err // the extractor's own status (413 for a file over its limits)
		}
		return d, apierr.Invalid("file", err.Error())
	}
	d.Text, d.Format = text, format
	if d.Title == "" {
		d.Title = title
	}
	if d.Title == "" {
		d.Title = name
	}
	return d, nil
}

// document returns the path's document when it is in the path's
// collection of the caller's team (the sources service checks).
func (s *Server) document(r *http.Request) (sources.Document, error) {
	c, err := s.collection(r)
	if err != nil {
		return sources.Document{}, err
	}
	return s.Sources.Document(r.Context(), c, r.PathValue("doc"))
}

func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request) error {
	c, err := s.collection(r)
	if err != nil {
		return err
	}
	list, err := s.Sources.ListDocuments(r.Context(), c.ID)
	if err != nil {
		return err
	}
	data := make([]DocumentObject, len(list))
	for i, d := range list {
		data[i] = documentObject(d)
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) error {
	d, err := s.document(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, documentObject(d))
}

func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) error {
	d, err := s.document(r)
	if err != nil {
		return err
	}
	if err := s.Sources.DeleteDocument(r.Context(), d); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": d.ID, "object": "document", "deleted": true})
}

type searchRequest struct {
	Query string `json:"query"`
	TopK  *int   `json:"top_k"`
	// Mode is hybrid (default), vector or keyword.
	Mode string `json:"mode"`
	// Rerank is true (the deployment's default reranker), false, or a
	// rerank model's id.
	Rerank json.RawMessage `json:"rerank"`
}

// searchOptions validates the retrieval parameters shared by search and
// completions with sources.
func (s *Ops) searchOptions(ctx context.Context, h http.Header, topK *int, mode string, rerank json.RawMessage) (sources.SearchOptions, error) {
	o := sources.SearchOptions{TopK: 10, Mode: mode}
	if topK != nil {
		if *topK < 1 || *topK > maxTopK {
			return o, apierr.Invalid("top_k", fmt.Sprintf("'top_k' must be between 1 and %d", maxTopK))
		}
		o.TopK = *topK
	}
	switch mode {
	case "", sources.ModeHybrid, sources.ModeVector, sources.ModeKeyword:
	default:
		return o, apierr.Invalid("mode", "'mode' must be one of hybrid, vector, keyword")
	}
	model := ""
	switch v := strings.TrimSpace(string(rerank)); {
	case v == "" || v == "null" || v == "false":
	case v == "true":
		if s.DefaultRerankModel == "" {
			return o, apierr.Invalid("rerank", "this deployment has no rerank model; name one, or leave 'rerank' out")
		}
		model = s.DefaultRerankModel
	default:
		if err := json.Unmarshal(rerank, &model); err != nil || model == "" {
			return o, apierr.Invalid("rerank", "'rerank' must be a boolean or the id of a rerank model")
		}
	}
	if model != "" {
		m, err := s.modelFor(ctx, h, model, "rerank")
		if err != nil {
			if apierr.From(err).Param == "model" {
				return o, apierr.WithParam(err, "rerank")
			}
			return o, err
		}
		o.RerankModel = m.ID
	}
	return o, nil
}

const maxTopK = 100

func (s *Server) searchCollection(w http.ResponseWriter, r *http.Request) error {
	c, err := s.collection(r)
	if err != nil {
		return err
	}
	var req searchRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Query) == "" {
		return apierr.Invalid("query", "'query' must be a non-empty string")
	}
	o, err := s.searchOptions(r.Context(), w.Header(), req.TopK, req.Mode, req.Rerank)
	if err != nil {
		return err
	}
	start := time.Now()
	hits, err := s.Sources.Search(r.Context(), []sources.Collection{c}, req.Query, o)
	if err != nil {
		return err
	}
	data := make([]sources.Result, len(hits))
	for i, h := range hits {
		data[i] = h.Result()
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "search_ms": float64(time.Since(start).Microseconds()) / 1000})
}

// scope for the sources routes: a key with inference can use its team's
// collections.
const sourcesScope = auth.ScopeInference
