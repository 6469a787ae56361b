package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// sourcesOperations are the operations of the Sources tag that
// TestOpenAPISourcesResponsesMatch checks live (completions with sources
// and citations are createCompletion's, covered there too).
var sourcesOperations = []string{
	"createCollection", "listCollections", "retrieveCollection", "deleteCollection",
	"createDocument", "listDocuments", "retrieveDocument", "deleteDocument",
	"searchCollection", "listSourceLinks",
}

func init() {
	// TestOpenAPIInferenceResponsesMatch runs on a tiny generated model
	// without collections; the sources operations are checked below.
	pendingLiveChecks = append(pendingLiveChecks, sourcesOperations...)
}

// TestOpenAPISourcesResponsesMatch checks collections, documents (JSON and
// multipart uploads), search, completions with sources and citations
// (plain and streamed, messages and prompt forms) and source links live
// against the document, on the default models, with their error responses.
func TestOpenAPISourcesResponsesMatch(t *testing.T) {
	doc := loadSpec(t)
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	c := newSpecChecker(t, doc, e)
	// A streamed completion with sources is made of chat or text chunks and
	// a citations chunk: CompletionChunk describes them all.
	saved := sseChunkSchema["createCompletion"]
	sseChunkSchema["createCompletion"] = "CompletionChunk"
	t.Cleanup(func() { sseChunkSchema["createCompletion"] = saved })
	other := teamKey(t, e, "outsiders")
	// as runs f with the checker sending key.
	as := func(key string, f func()) {
		saved := c.key
		defer func() { c.key = saved }()
		c.key = key
		f()
	}
	var colID string
	docs := map[string]string{}

	t.Run("collections", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/collections", map[string]any{"name": "default", "description": "made-up facts", "metadata": map[string]any{"owner": "docs", "rank": 1}})
		expectStatus(t, x, 201)
		col := x.json(t)
		colID, _ = col["id"].(string)
		if col["embedding_model"] != "all-minilm-l6-v2" || col["document_count"] != 0.0 || col["metadata"].(map[string]any)["owner"] != "docs" {
			t.Fatalf("created collection: %v", col)
		}
		expectError(t, c.call("POST", "/v1/collections", map[string]any{"name": "default"}), 409, "conflict")
		if e := expectError(t, c.call("POST", "/v1/collections", map[string]any{"name": "  "}), 400, "invalid_request_error"); e["param"] != "name" {
			t.Fatalf("param %v, want name", e["param"])
		}
		if e := expectError(t, c.call("POST", "/v1/collections", map[string]any{"name": "x", "embedding_model": "no-such-model"}), 400, "invalid_request_error"); e["param"] != "embedding_model" {
			t.Fatalf("param %v, want embedding_model", e["param"])
		}
		expectError(t, c.callRaw("POST", "/v1/collections", []byte(`{"name": `)), 400, "invalid_json")
		x = c.call("GET", "/v1/collections", nil)
		expectStatus(t, x, 200)
		if d := x.json(t)["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != colID {
			t.Fatalf("collections %v", d)
		}
		expectStatus(t, c.call("GET", "/v1/collections/"+colID, nil), 200)
		expectError(t, c.call("GET", "/v1/collections/col_doesnotexist", nil), 404, "not_found")
		as(other, func() {
			expectError(t, c.call("GET", "/v1/collections/"+colID, nil), 404, "not_found")
			x := c.call("GET", "/v1/collections", nil)
			expectStatus(t, x, 200)
			if d := x.json(t)["data"].([]any); len(d) != 0 {
				t.Fatalf("another team lists %v", d)
			}
		})
	})

	t.Run("documents", func(t *testing.T) {
		c.t = t
		path := "/v1/collections/" + colID + "/documents"
		for title, text := range facts {
			x := c.call("POST", path, map[string]any{"title": title, "url": "https://example.test/" + title, "text": text, "metadata": map[string]any{"kind": "fact"}})
			expectStatus(t, x, 202)
			d := x.json(t)
			if d["status"] != "processing" || d["format"] != "text" || d["error"] != nil {
				t.Fatalf("accepted document: %v", d)
			}
			docs[title] = d["id"].(string)
		}
		// A multipart upload, checked against the document like the rest.
		body, ctype := multipartBody(t, "guide.md", "text/markdown", "# Ostra guide\n\nThe glass bridge of Ostra sings in the wind.",
			map[string]string{"url": "https://example.test/ostra", "metadata": `{"kind": "guide"}`})
		req := c.newRequest("POST", path, body)
		req.Header.Set("Content-Type", ctype)
		x := c.send(req, body, true)
		expectStatus(t, x, 202)
		if d := x.json(t); d["title"] != "Ostra guide" || d["format"] != "md" || d["url"] != "https://example.test/ostra" || d["metadata"].(map[string]any)["kind"] != "guide" {
			t.Fatalf("uploaded document: %v", d)
		} else {
			docs["ostra"] = d["id"].(string)
		}
		for _, id := range docs {
			waitDocument(t, c, colID, id)
		}
		x = c.call("GET", path, nil)
		expectStatus(t, x, 200)
		if d := x.json(t)["data"].([]any); len(d) != len(docs) {
			t.Fatalf("%d documents listed, want %d", len(d), len(docs))
		}
		// Errors: empty text, an upload without a file or with a bad one,
		// unknown ids, another team.
		if e := expectError(t, c.callRaw("POST", path, []byte(`{"title": "x", "text": " "}`)), 400, "invalid_request_error"); e["param"] != "text" {
			t.Fatalf("param %v, want text", e["param"])
		}
		for _, f := range []struct{ name, body string }{{"", ""}, {"data.bin", "\x00\x01\x02"}} {
			var body []byte
			var ctype string
			if f.name == "" {
				body, ctype = multipartBody(t, "", "", "", map[string]string{"title": "no file"})
			} else {
				body, ctype = multipartBody(t, f.name, "application/octet-stream", f.body, nil)
			}
			req := c.newRequest("POST", path, body)
			req.Header.Set("Content-Type", ctype)
			if e := expectError(t, c.send(req, body, false), 400, "invalid_request_error"); e["param"] != "file" {
				t.Fatalf("upload %q: param %v, want file", f.name, e["param"])
			}
		}
		expectError(t, c.call("POST", "/v1/collections/col_doesnotexist/documents", map[string]any{"text": "x"}), 404, "not_found")
		expectError(t, c.call("GET", path+"/doc_doesnotexist", nil), 404, "not_found")
		as(other, func() {
			expectError(t, c.call("GET", path, nil), 404, "not_found")
			expectError(t, c.call("GET", path+"/"+docs["zorblat"], nil), 404, "not_found")
		})
	})

	t.Run("search", func(t *testing.T) {
		c.t = t
		path := "/v1/collections/" + colID + "/search"
		x := c.call("POST", path, map[string]any{"query": "What fuel does the zorblat engine use?", "top_k": 3})
		expectStatus(t, x, 200)
		hits := x.json(t)["data"].([]any)
		if len(hits) == 0 || len(hits) > 3 || hits[0].(map[string]any)["document_id"] != docs["zorblat"] {
			t.Fatalf("hybrid search: %v", hits)
		}
		for _, mode := range []string{"hybrid", "vector", "keyword"} {
			x := c.call("POST", path, map[string]any{"query": "quantum tomatoes ripen in darkness", "top_k": 2, "mode": mode, "rerank": false})
			expectStatus(t, x, 200)
			h := x.json(t)["data"].([]any)
			if len(h) == 0 || h[0].(map[string]any)["document_id"] != docs["garden"] {
				t.Fatalf("%s search: %v", mode, h)
			}
			top := h[0].(map[string]any)
			if (mode == "keyword") != (top["vector_score"] == nil) || (mode == "vector") != (top["keyword_score"] == nil) {
				t.Fatalf("%s search scores: %v", mode, top)
			}
		}
		for _, bad := range []struct{ body, param string }{
			{`{"query": "zorblat", "top_k": 0}`, "top_k"},
			{`{"query": "zorblat", "top_k": 101}`, "top_k"},
			{`{"query": "zorblat", "mode": "psychic"}`, "mode"},
			{`{"query": ""}`, "query"},
		} {
			if e := expectError(t, c.callRaw("POST", path, []byte(bad.body)), 400, "invalid_request_error"); e["param"] != bad.param {
				t.Fatalf("%s: param %v, want %s", bad.body, e["param"], bad.param)
			}
		}
		// The default rerank model, as serve picks it: the smallest known
		// chat model installed (gemma3-270m among the test models), by
		// query likelihood, when no cross-encoder is installed.
		x = c.call("POST", path, map[string]any{"query": "zorblat", "rerank": true, "top_k": 2})
		expectStatus(t, x, 200)
		if first := x.json(t)["data"].([]any)[0].(map[string]any); first["rerank_score"] == nil || first["title"] != "zorblat" {
			t.Fatalf("rerank true: %v", first)
		}
		if e := expectError(t, c.call("POST", path, map[string]any{"query": "zorblat", "rerank": "no-such-model"}), 404, "model_not_found"); e["param"] != "rerank" {
			t.Fatalf("unknown rerank model: param %v, want rerank", e["param"])
		}
		expectError(t, c.call("POST", "/v1/collections/col_doesnotexist/search", map[string]any{"query": "zorblat"}), 404, "not_found")
		as(other, func() {
			expectError(t, c.call("POST", path, map[string]any{"query": "zorblat"}), 404, "not_found")
		})
	})

	var cited citedAnswer
	t.Run("completions with citations", func(t *testing.T) {
		c.t = t
		q := "What coolant does the zorblat engine run on?"
		msgs := []map[string]any{{"role": "user", "content": q}}
		// Messages, the team's default collection: a chat completion.
		x := c.call("POST", "/v1/completions", map[string]any{"model": "gemma3-270m", "messages": msgs, "citations": true, "max_tokens": 60, "temperature": 0})
		expectStatus(t, x, 200)
		if err := c.validateSchema("CitedChatCompletion", x.json(t)); err != nil {
			t.Fatalf("not a CitedChatCompletion: %v", err)
		}
		if err := json.Unmarshal(x.body, &cited); err != nil {
			t.Fatal(err)
		}
		if len(cited.Citations) == 0 || cited.Citations[0].Sources[0].DocumentID != docs["zorblat"] {
			t.Fatalf("citations %+v of %q", cited.Citations, cited.Choices[0].Message.Content)
		}
		checkOffsets(t, cited.Choices[0].Message.Content, cited)

		// A prompt, named collections and an inline document: a text completion.
		x = c.call("POST", "/v1/completions", map[string]any{
			"model": "gemma3-270m", "prompt": "What colour is the moon of Tarsis?", "citations": true, "max_tokens": 60, "temperature": 0,
			"sources": map[string]any{
				"collections": []string{colID}, "top_k": 2, "mode": "hybrid", "rerank": false,
				"documents": []map[string]any{{"id": "memo-7", "title": "Tarsis memo", "url": "https://example.test/memo-7", "text": "The moon of Tarsis is bright green and smells of mint."}},
			},
		})
		expectStatus(t, x, 200)
		v := x.json(t)
		if v["object"] != "text_completion" {
			t.Fatalf("a prompt with sources answered as %v", v["object"])
		}
		if err := c.validateSchema("CitedTextCompletion", v); err != nil {
			t.Fatalf("not a CitedTextCompletion: %v", err)
		}

		// Sources without citations: no citations array.
		x = c.call("POST", "/v1/completions", map[string]any{"model": "gemma3-270m", "messages": msgs, "citations": false, "max_tokens": 30, "temperature": 0,
			"sources": map[string]any{"collections": []string{colID}}})
		expectStatus(t, x, 200)
		if v := x.json(t); v["citations"] != nil || v["object"] != "chat.completion" {
			t.Fatalf("citations false: %v", v)
		}

		// Errors: an unknown or another team's collection, a bad top_k,
		// both forms at once, no default collection.
		e := expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "gemma3-270m", "messages": msgs, "citations": true,
			"sources": map[string]any{"collections": []string{colID, "col_doesnotexist"}}}), 404, "not_found")
		if e["param"] != "sources.collections[1]" {
			t.Fatalf("param %v, want sources.collections[1]", e["param"])
		}
		if e := expectError(t, c.callRaw("POST", "/v1/completions", mustJSON(t, map[string]any{"model": "gemma3-270m", "messages": msgs,
			"sources": map[string]any{"collections": []string{colID}, "top_k": 0}})), 400, "invalid_request_error"); e["param"] != "sources.top_k" {
			t.Fatalf("param %v, want sources.top_k", e["param"])
		}
		if e := expectError(t, c.callRaw("POST", "/v1/completions", mustJSON(t, map[string]any{"model": "gemma3-270m", "messages": msgs, "prompt": "hi",
			"citations": true})), 400, "invalid_request_error"); e["param"] != "prompt" {
			t.Fatalf("param %v, want prompt", e["param"])
		}
		expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "no-such-model", "messages": msgs, "citations": true}), 404, "model_not_found")
		as(other, func() {
			e := expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "gemma3-270m", "messages": msgs,
				"sources": map[string]any{"collections": []string{colID}}}), 404, "not_found")
			if e["param"] != "sources.collections[0]" {
				t.Fatalf("param %v, want sources.collections[0]", e["param"])
			}
			if e := expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "gemma3-270m", "messages": msgs, "citations": true}), 400, "invalid_request_error"); e["param"] != "sources" {
				t.Fatalf("no default collection: param %v, want sources", e["param"])
			}
		})
	})

	t.Run("completions with citations streamed", func(t *testing.T) {
		c.t = t
		q := "What coolant does the zorblat engine run on?"
		for _, form := range []struct {
			key           string
			val           any
			chunk, citing string
		}{
			{"messages", []map[string]any{{"role": "user", "content": q}}, "ChatCompletionChunk", "CitedChatCompletionChunk"},
			{"prompt", q, "TextCompletion", "CitedTextCompletion"},
		} {
			x := c.call("POST", "/v1/completions", map[string]any{"model": "gemma3-270m", form.key: form.val, "citations": true,
				"max_tokens": 60, "temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}})
			expectStatus(t, x, 200)
			chunks, err := c.sseChunks(x.body, "CompletionChunk")
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) < 3 {
				t.Fatalf("%s: %d chunks", form.key, len(chunks))
			}
			text := ""
			for _, ch := range chunks[:len(chunks)-2] {
				if err := c.validateSchema(form.chunk, ch); err != nil {
					t.Fatalf("%s: a text chunk is not a %s: %v", form.key, form.chunk, err)
				}
				for _, cc := range ch["choices"].([]any) {
					cc := cc.(map[string]any)
					if d, ok := cc["delta"].(map[string]any); ok {
						s, _ := d["content"].(string)
						text += s
					} else {
						text += cc["text"].(string)
					}
				}
			}
			cits, usage := chunks[len(chunks)-2], chunks[len(chunks)-1]
			if err := c.validateSchema(form.citing, cits); err != nil || len(cits["choices"].([]any)) != 0 || cits["citations"] == nil {
				t.Fatalf("%s: the chunk before the usage chunk is not the citations chunk (%v): %v", form.key, err, cits)
			}
			if usage["usage"] == nil || len(usage["choices"].([]any)) != 0 {
				t.Fatalf("%s: the last chunk is not the usage chunk: %v", form.key, usage)
			}
			var a citedAnswer
			b, _ := json.Marshal(cits)
			json.Unmarshal(b, &a)
			if len(a.Citations) == 0 {
				t.Fatalf("%s: streamed %q without citations", form.key, text)
			}
			checkOffsets(t, text, a)
		}
	})

	t.Run("source links", func(t *testing.T) {
		c.t = t
		x := c.call("GET", "/v1/source_links?response_id="+url.QueryEscape(cited.ID), nil)
		expectStatus(t, x, 200)
		n := 0
		for _, ct := range cited.Citations {
			n += len(ct.Sources)
		}
		page := x.json(t)
		if d := page["data"].([]any); len(d) != n || page["has_more"] != false || page["first_id"] != d[0].(map[string]any)["id"] {
			t.Fatalf("%d cited sources, links %v", n, page)
		}
		q := url.Values{"document_id": {docs["zorblat"]}, "collection_id": {colID}, "created_after": {"0"},
			"created_before": {fmt.Sprint(time.Now().Add(time.Hour).Unix())}, "limit": {"1"}}
		x = c.call("GET", "/v1/source_links?"+q.Encode(), nil)
		expectStatus(t, x, 200)
		first := x.json(t)
		if len(first["data"].([]any)) != 1 || first["has_more"] != true {
			t.Fatalf("first page: %v", first)
		}
		q.Set("after", first["last_id"].(string))
		x = c.call("GET", "/v1/source_links?"+q.Encode(), nil)
		expectStatus(t, x, 200)
		if next := x.json(t); next["first_id"] == first["first_id"] {
			t.Fatalf("the second page repeats the first: %v", next)
		}
		x = c.call("GET", "/v1/source_links?response_id=chatcmpl-none", nil)
		expectStatus(t, x, 200)
		if empty := x.json(t); len(empty["data"].([]any)) != 0 || empty["first_id"] != nil || empty["last_id"] != nil {
			t.Fatalf("an empty page: %v", empty)
		}
		for _, bad := range []string{"limit=0", "limit=101", "created_after=yesterday"} {
			expectError(t, c.callRaw("GET", "/v1/source_links?"+bad, nil), 400, "invalid_request_error")
		}
		if e := expectError(t, c.call("GET", "/v1/source_links?after=sl_doesnotexist", nil), 404, "not_found"); e["param"] != "after" {
			t.Fatalf("param %v, want after", e["param"])
		}
		as(other, func() {
			x := c.call("GET", "/v1/source_links", nil)
			expectStatus(t, x, 200)
			if d := x.json(t)["data"].([]any); len(d) != 0 {
				t.Fatalf("another team sees links: %v", d)
			}
			expectError(t, c.call("GET", "/v1/source_links?after="+first["first_id"].(string), nil), 404, "not_found")
		})
	})

	t.Run("delete", func(t *testing.T) {
		c.t = t
		path := "/v1/collections/" + colID
		as(other, func() {
			expectError(t, c.call("DELETE", path+"/documents/"+docs["ostra"], nil), 404, "not_found")
			expectError(t, c.call("DELETE", path, nil), 404, "not_found")
		})
		x := c.call("DELETE", path+"/documents/"+docs["ostra"], nil)
		expectStatus(t, x, 200)
		if d := x.json(t); d["id"] != docs["ostra"] || d["deleted"] != true {
			t.Fatalf("deleted document: %v", d)
		}
		expectError(t, c.call("GET", path+"/documents/"+docs["ostra"], nil), 404, "not_found")
		expectError(t, c.call("DELETE", path+"/documents/"+docs["ostra"], nil), 404, "not_found")
		x = c.call("DELETE", path, nil)
		expectStatus(t, x, 200)
		if d := x.json(t); d["id"] != colID || d["object"] != "collection" || d["deleted"] != true {
			t.Fatalf("deleted collection: %v", d)
		}
		expectError(t, c.call("GET", path, nil), 404, "not_found")
		expectError(t, c.call("DELETE", path, nil), 404, "not_found")
		// Links are records: they outlive the collection.
		x = c.call("GET", "/v1/source_links?response_id="+url.QueryEscape(cited.ID), nil)
		expectStatus(t, x, 200)
		if len(x.json(t)["data"].([]any)) == 0 {
			t.Fatal("the links went with the collection")
		}
	})

	c.t = t
	if missing := c.uncovered(operationsExcept(c.doc, sourcesOperations...)...); len(missing) > 0 {
		t.Errorf("sources operations no check exercised: %v", missing)
	}
}

// waitDocument polls a document through the checker until it is ready.
func waitDocument(t *testing.T, c *specChecker, colID, docID string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		x := c.call("GET", "/v1/collections/"+colID+"/documents/"+docID, nil)
		expectStatus(t, x, 200)
		d := x.json(t)
		switch d["status"] {
		case "ready":
			if d["progress"] != 1.0 || d["chunk_count"].(float64) < 1 {
				t.Fatalf("ready document: %v", d)
			}
			return
		case "failed":
			t.Fatalf("document %s failed: %v", docID, d["error"])
		}
		if time.Now().After(deadline) {
			t.Fatalf("document %s still %v", docID, d["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// multipartBody builds a multipart/form-data body with a file part (left
// out when name is empty) and text fields; it returns the body and its
// Content-Type.
func multipartBody(t testing.TB, name, ctype, data string, fields map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if name != "" {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
		h.Set("Content-Type", ctype)
		part, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		part.Write([]byte(data))
	}
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
