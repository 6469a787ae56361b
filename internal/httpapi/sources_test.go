package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// memSources is a function-field-free in-memory Sources for routing tests.
// Its errors are worded as the SQL store's, which handlers pass on.
type memSources struct {
	cols map[string]sources.Collection
	docs map[string]sources.Document
}

func (m *memSources) CreateCollection(_ context.Context, c sources.Collection) (sources.Collection, error) {
	for _, o := range m.cols {
		if o.TeamID == c.TeamID && o.Name == c.Name {
			return c, apierr.Wrapf(sources.ErrConflict, "your team already has a collection named %q", c.Name)
		}
	}
	c.ID = sources.NewID("col_")
	m.cols[c.ID] = c
	return c, nil
}
func (m *memSources) Collection(_ context.Context, team, id string) (sources.Collection, error) {
	c, ok := m.cols[id]
	if !ok || c.TeamID != team {
		return c, apierr.Wrapf(sources.ErrNotFound, "no collection %q", id)
	}
	return c, nil
}
func (m *memSources) ListCollections(_ context.Context, team string) ([]sources.Collection, error) {
	var out []sources.Collection
	for _, c := range m.cols {
		if c.TeamID == team {
			out = append(out, c)
		}
	}
	return out, nil
}
func (m *memSources) DeleteCollection(_ context.Context, id string) error {
	delete(m.cols, id)
	return nil
}
func (m *memSources) Ingest(_ context.Context, c sources.Collection, d sources.Document) (sources.Document, error) {
	d.ID, d.CollectionID, d.Status = sources.NewID("doc_"), c.ID, sources.StatusProcessing
	m.docs[d.ID] = d
	return d, nil
}
func (m *memSources) Document(_ context.Context, c sources.Collection, id string) (sources.Document, error) {
	d, ok := m.docs[id]
	if !ok || d.CollectionID != c.ID {
		return d, apierr.Wrapf(sources.ErrNotFound, "no document %q", id)
	}
	return d, nil
}
func (m *memSources) ListDocuments(context.Context, string) ([]sources.Document, error) {
	return nil, nil
}
func (m *memSources) DeleteDocument(_ context.Context, d sources.Document) error {
	delete(m.docs, d.ID)
	return nil
}
func (m *memSources) Search(_ context.Context, cols []sources.Collection, q string, o sources.SearchOptions) ([]sources.Hit, error) {
	return []sources.Hit{{Chunk: sources.Chunk{ID: 7, DocumentID: "doc_x", CollectionID: cols[0].ID, Text: "t", Start: 0, End: 1}, Score: 0.5}}, nil
}

func (m *memSources) RecordLinks(context.Context, []sources.SourceLink) error { return nil }
func (m *memSources) SourceLinks(context.Context, sources.LinkFilter) ([]sources.SourceLink, bool, error) {
	return nil, false, nil
}

func TestCollectionsAreTeamScoped(t *testing.T) {
	fakeModels = append(fakeModels, catalog.Model{ID: "all-minilm-l6-v2", Capabilities: []string{"embeddings"}})
	defer func() { fakeModels = fakeModels[:len(fakeModels)-1] }()
	teams := map[string]string{"sk-sov-a": "team_a", "sk-sov-b": "team_b"}
	s := &Server{Models: fakeCatalog{}, Ops: &Ops{Sources: &memSources{cols: map[string]sources.Collection{}, docs: map[string]sources.Document{}}},
		DefaultEmbeddingModel: "all-minilm-l6-v2",
		Auth: fakeAuth{authenticate: func(_ context.Context, secret string) (auth.Key, error) {
			if t, ok := teams[secret]; ok {
				return auth.Key{ID: "k_" + t, TeamID: t, Scopes: []auth.Scope{auth.ScopeInference}}, nil
			}
			return auth.Key{}, auth.ErrInvalidKey
		}}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	resp, col := do(t, srv, "POST", "/v1/collections", "sk-sov-a", `{"name":"facts"}`)
	if resp.StatusCode != 201 || col["embedding_model"] != "all-minilm-l6-v2" || col["object"] != "collection" {
		t.Fatalf("create: %d %v", resp.StatusCode, col)
	}
	id := col["id"].(string)
	if resp, body := do(t, srv, "POST", "/v1/collections", "sk-sov-a", `{"name":" facts "}`); resp.StatusCode != 409 ||
		envelopeMessage(body) != `your team already has a collection named "facts"` {
		t.Fatalf("duplicate: %d %v", resp.StatusCode, body)
	}
	if resp, body := do(t, srv, "POST", "/v1/collections", "sk-sov-a", `{"name":"x","embedding_model":"chat"}`); resp.StatusCode != 400 || errCode(body) != "invalid_request_error" {
		t.Fatalf("chat model as embedder: %d %v", resp.StatusCode, body)
	}
	resp, doc := do(t, srv, "POST", "/v1/collections/"+id+"/documents", "sk-sov-a", `{"title":"T","text":"hello"}`)
	if resp.StatusCode != 202 || doc["status"] != "processing" {
		t.Fatalf("document: %d %v", resp.StatusCode, doc)
	}
	docID := doc["id"].(string)
	if resp, _ := do(t, srv, "POST", "/v1/collections/"+id+"/documents", "sk-sov-a", `{"text":"  "}`); resp.StatusCode != 400 {
		t.Fatalf("empty text: %d", resp.StatusCode)
	}
	if resp, _ := do(t, srv, "POST", "/v1/collections/"+id+"/search", "sk-sov-a", `{"query":"hello","top_k":3}`); resp.StatusCode != 200 {
		t.Fatalf("search: %d", resp.StatusCode)
	}
	// A deployment without a default rerank model: rerank true must name one.
	if resp, body := do(t, srv, "POST", "/v1/collections/"+id+"/search", "sk-sov-a", `{"query":"hello","rerank":true}`); resp.StatusCode != 400 || body["error"].(map[string]any)["param"] != "rerank" {
		t.Fatalf("rerank without a default model: %d %v", resp.StatusCode, body)
	}
	// Team B sees none of it: every route answers 404, and its list is empty.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/collections/" + id, ""},
		{"DELETE", "/v1/collections/" + id, ""},
		{"POST", "/v1/collections/" + id + "/search", `{"query":"hello"}`},
		{"POST", "/v1/collections/" + id + "/documents", `{"text":"x"}`},
		{"GET", "/v1/collections/" + id + "/documents", ""},
		{"GET", "/v1/collections/" + id + "/documents/" + docID, ""},
		{"DELETE", "/v1/collections/" + id + "/documents/" + docID, ""},
	} {
		if resp, body := do(t, srv, c.method, c.path, "sk-sov-b", c.body); resp.StatusCode != 404 || errCode(body) != "not_found" ||
			envelopeMessage(body) != fmt.Sprintf("no collection %q", id) {
			t.Errorf("team B %s %s: %d %v", c.method, c.path, resp.StatusCode, body)
		}
	}
	if _, list := do(t, srv, "GET", "/v1/collections", "sk-sov-b", ""); len(list["data"].([]any)) != 0 {
		t.Fatalf("team B list: %v", list)
	}
	// A document id from another collection is not found under this one.
	_, other := do(t, srv, "POST", "/v1/collections", "sk-sov-a", `{"name":"other"}`)
	if resp, body := do(t, srv, "GET", "/v1/collections/"+other["id"].(string)+"/documents/"+docID, "sk-sov-a", ""); resp.StatusCode != 404 ||
		envelopeMessage(body) != fmt.Sprintf("no document %q", docID) {
		t.Fatalf("document through another collection: %d %v", resp.StatusCode, body)
	}
}

// TestUploadKeepsExtractorStatus: an extractor's own API error (413 for a
// file over its limits) reaches the client as it is; any other extractor
// error is a 400 naming the file.
func TestUploadKeepsExtractorStatus(t *testing.T) {
	fakeModels = append(fakeModels, catalog.Model{ID: "all-minilm-l6-v2", Capabilities: []string{"embeddings"}})
	defer func() { fakeModels = fakeModels[:len(fakeModels)-1] }()
	s := &Server{Models: fakeCatalog{}, Ops: &Ops{Sources: &memSources{cols: map[string]sources.Collection{}, docs: map[string]sources.Document{}}},
		DefaultEmbeddingModel: "all-minilm-l6-v2",
		Extract: func(_ context.Context, name, _ string, _ []byte) (string, string, string, error) {
			if name == "huge.pdf" {
				return "", "", "", apierr.New(apierr.BodyTooLarge, "the PDF has more than 2000 pages")
			}
			return "", "", "", errors.New("the file is not a PDF")
		},
		Auth: fakeAuth{authenticate: func(context.Context, string) (auth.Key, error) {
			return auth.Key{ID: "k", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeInference}}, nil
		}}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	_, col := do(t, srv, "POST", "/v1/collections", "sk-sov-a", `{"name":"facts"}`)
	for name, want := range map[string]int{"huge.pdf": 413, "bad.pdf": 400} {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", name)
		fw.Write([]byte("%PDF-1.4"))
		mw.Close()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/collections/"+col["id"].(string)+"/documents", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer sk-sov-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s: %d %v, want %d", name, resp.StatusCode, body, want)
		}
		if want == 400 && body["error"].(map[string]any)["param"] != "file" {
			t.Fatalf("%s: %v", name, body)
		}
	}
}

// envelopeMessage is the message of an error envelope.
func envelopeMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}
