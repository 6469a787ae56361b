package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// facts are made-up, so only retrieval can know them.
var facts = map[string]string{
	"zorblat": "Field notes on engines.\n\nThe zorblat engine runs on purple coolant and was first built in the harbour town of Qarth in 1872.",
	"garden":  "Gardening log.\n\nQuantum tomatoes ripen only in complete darkness, and their seeds hum softly at dawn.",
	"ships":   "Aviation history.\n\nThe sky ships of Veloria float on warm helium and are steered by singing captains.",
}

func (e *env) json(method, path string, body any, want int) map[string]any {
	e.t.Helper()
	return e.jsonWith(e.key, method, path, body, want)
}

// jsonWith is json with another key.
func (e *env) jsonWith(key, method, path string, body any, want int) map[string]any {
	e.t.Helper()
	resp := e.request(key, method, path, body)
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: %d (want %d) %v", method, path, resp.StatusCode, want, out)
	}
	return out
}

func (e *env) upload(path, name, ctype string, data []byte) (*http.Response, map[string]any) {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="file"; filename="` + name + `"`}
	h["Content-Type"] = []string{ctype}
	part, _ := mw.CreatePart(h)
	part.Write(data)
	mw.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func (e *env) waitReady(colID, docID string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d := e.json("GET", "/v1/collections/"+colID+"/documents/"+docID, nil, 200)
		switch d["status"] {
		case "ready":
			return d
		case "failed":
			e.t.Fatalf("document %s failed: %v", docID, d["error"])
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("document %s still %v", docID, d["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCollectionsIngestSearchDelete runs the sources pipeline with the
// default embedding model: made-up facts are found by meaning, uploads of
// each text format work, bad files are refused with nothing stored, and a
// deleted document is no longer found.
func TestCollectionsIngestSearchDelete(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 512})
	col := e.json("POST", "/v1/collections", map[string]any{"name": "facts"}, 201)
	id := col["id"].(string)
	docs := map[string]string{}
	for title, text := range facts {
		d := e.json("POST", "/v1/collections/"+id+"/documents", map[string]any{"title": title, "url": "https://example.test/" + title, "text": text}, 202)
		docs[title] = d["id"].(string)
	}
	for _, d := range docs {
		if got := e.waitReady(id, d); got["chunk_count"].(float64) < 1 || got["progress"].(float64) != 1 {
			t.Fatalf("ready document: %v", got)
		}
	}
	search := func(q string) []any {
		out := e.json("POST", "/v1/collections/"+id+"/search", map[string]any{"query": q, "top_k": 3}, 200)
		return out["data"].([]any)
	}
	for q, want := range map[string]string{
		"What fuel does the zorblat engine use?":    "zorblat",
		"when do quantum tomatoes become ripe":      "garden",
		"How are the Velorian airships kept aloft?": "ships",
	} {
		hits := search(q)
		if len(hits) == 0 {
			t.Fatalf("%q: no hits", q)
		}
		top := hits[0].(map[string]any)
		if top["document_id"] != docs[want] || top["title"] != want || top["url"] != "https://example.test/"+want {
			t.Fatalf("%q: top hit %v, want document %s", q, top, want)
		}
		text, start, end := top["text"].(string), int(top["start"].(float64)), int(top["end"].(float64))
		if src := []rune(facts[want]); end > len(src) || string(src[start:end]) != text {
			t.Fatalf("%q: offsets [%d,%d) do not slice %q out of the document", q, start, end, text)
		}
	}

	// Reranked by the chat model (query-likelihood): the fact's chunk stays
	// first, every hit has a rerank score in [0, 1], best first.
	reranked := e.json("POST", "/v1/collections/"+id+"/search", map[string]any{"query": "What fuel does the zorblat engine use?", "top_k": 3, "rerank": "gemma3-270m"}, 200)["data"].([]any)
	prev := 2.0
	for i, h := range reranked {
		hit := h.(map[string]any)
		sc, ok := hit["rerank_score"].(float64)
		if !ok || sc < 0 || sc > 1 || sc > prev || hit["score"] != sc {
			t.Fatalf("reranked hit %d: %v", i, hit)
		}
		prev = sc
	}
	if len(reranked) != 3 || reranked[0].(map[string]any)["document_id"] != docs["zorblat"] {
		t.Fatalf("reranked search: %v", reranked)
	}
	for _, mode := range []string{"vector", "keyword"} {
		hits := e.json("POST", "/v1/collections/"+id+"/search", map[string]any{"query": "zorblat engine coolant", "top_k": 3, "mode": mode}, 200)["data"].([]any)
		if len(hits) == 0 || hits[0].(map[string]any)["document_id"] != docs["zorblat"] {
			t.Fatalf("%s search: %v", mode, hits)
		}
		first := hits[0].(map[string]any)
		if (mode == "vector") != (first["keyword_score"] == nil) || (mode == "keyword") != (first["vector_score"] == nil) {
			t.Fatalf("%s search used the other retriever: %v", mode, first)
		}
	}

	// Uploads of each text format; bad files are 400 and store nothing.
	for _, f := range []struct{ name, ctype, body, title string }{
		{"notes.txt", "text/plain", "Plain notes about the glass bridge of Ostra.", "notes.txt"},
		{"guide.md", "text/markdown", "# Ostra guide\n\nThe glass bridge of Ostra sings in the wind.", "Ostra guide"},
		{"page.html", "text/html", "<html><head><title>Ostra page</title><script>x()</script></head><body><p>The glass bridge &amp; its bells.</p></body></html>", "Ostra page"},
	} {
		resp, d := e.upload("/v1/collections/"+id+"/documents", f.name, f.ctype, []byte(f.body))
		if resp.StatusCode != 202 || d["title"] != f.title {
			t.Fatalf("upload %s: %d %v", f.name, resp.StatusCode, d)
		}
		e.waitReady(id, d["id"].(string))
	}
	before := len(e.json("GET", "/v1/collections/"+id+"/documents", nil, 200)["data"].([]any))
	for _, f := range []struct{ name, ctype, body string }{
		{"broken.pdf", "application/pdf", "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> garbage"},
		{"empty.txt", "text/plain", ""},
		{"blank.md", "text/markdown", "  \n\n "},
		{"data.bin", "application/octet-stream", "\x00\x01\x02"},
	} {
		resp, out := e.upload("/v1/collections/"+id+"/documents", f.name, f.ctype, []byte(f.body))
		if env, _ := out["error"].(map[string]any); resp.StatusCode != 400 || env["param"] != "file" || env["message"] == "" {
			t.Fatalf("bad upload %s: %d %v", f.name, resp.StatusCode, out)
		}
	}
	if after := len(e.json("GET", "/v1/collections/"+id+"/documents", nil, 200)["data"].([]any)); after != before {
		t.Fatalf("bad uploads stored documents: %d → %d", before, after)
	}

	// Deleting the zorblat document: it is no longer found.
	e.json("DELETE", "/v1/collections/"+id+"/documents/"+docs["zorblat"], nil, 200)
	for _, h := range search("zorblat engine purple coolant Qarth") {
		if h.(map[string]any)["document_id"] == docs["zorblat"] {
			t.Fatalf("deleted document still found: %v", h)
		}
	}
	if c := e.json("GET", "/v1/collections/"+id, nil, 200); int(c["document_count"].(float64)) != len(facts)-1+3 {
		t.Fatalf("collection counts: %v", c)
	}
	// Deleting the collection.
	e.json("DELETE", "/v1/collections/"+id, nil, 200)
	e.json("GET", "/v1/collections/"+id, nil, 404)
	if !strings.HasPrefix(id, "col_") {
		t.Fatalf("id %q", id)
	}
}
