package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// idem sends a JSON body with key and an Idempotency-Key, and returns the
// status, whether it was a replay, and the decoded body.
func (e *env) idem(key, idemKey, method, path string, body any) (int, bool, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, e.url+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", out
}

// TestIdempotencyKey: the create routes honour Idempotency-Key — a repeat
// gets the first answer again (the same object, the same secret, even an
// error), the same key with another body is a 422, keys are per API key,
// and without the header a repeat creates again.
func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, tinyStore(t), engine.Config{})

	// A team: the repeat is the first 201, not the 409 a second create of
	// the name would be.
	code, replayed, first := e.idem(e.key, "team-1", "POST", "/v1/teams", map[string]any{"name": "research"})
	if code != 201 || replayed {
		t.Fatalf("create team: %d %v %v", code, replayed, first)
	}
	code, replayed, again := e.idem(e.key, "team-1", "POST", "/v1/teams", map[string]any{"name": "research"})
	if code != 201 || !replayed || again["id"] != first["id"] {
		t.Fatalf("repeat: %d replayed=%v %v, want the first %v", code, replayed, again, first["id"])
	}
	// Without the header a repeat creates again (and conflicts); the 409
	// tells the OpenAI SDKs, which retry 409s, that retrying cannot help.
	if resp := e.request(e.key, "POST", "/v1/teams", map[string]any{"name": "research"}); resp.StatusCode != 409 || resp.Header.Get("x-should-retry") != "false" {
		t.Fatalf("a second create without the header: %d %v", resp.StatusCode, resp.Header)
	} else {
		resp.Body.Close()
	}
	code, _, out := e.idem(e.key, "team-1", "POST", "/v1/teams", map[string]any{"name": "other"})
	if code != 422 || errCode(out) != "idempotency_key_reused" || errParam(out) != "Idempotency-Key" {
		t.Fatalf("the key with another body: %d %v", code, out)
	}
	teamID := first["id"].(string)

	// An API key: the replay carries the same secret (stored sealed), and
	// one key exists.
	body := map[string]any{"name": "ci-bot", "team_id": teamID, "scopes": []string{"inference"}}
	_, _, k1 := e.idem(e.key, "key-1", "POST", "/v1/keys", body)
	code, replayed, k2 := e.idem(e.key, "key-1", "POST", "/v1/keys", body)
	if code != 201 || !replayed || k1["key"] == nil || k2["key"] != k1["key"] || k2["id"] != k1["id"] {
		t.Fatalf("key replay: %d %v %v vs %v", code, replayed, k2, k1)
	}
	list := e.json("GET", "/v1/keys?team_id="+teamID, nil, 200)
	n := 0
	for _, k := range list["data"].([]any) {
		if k.(map[string]any)["name"] == "ci-bot" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d keys named ci-bot, want 1: %v", n, list)
	}
	// Another API key's Idempotency-Key of the same value is its own: the
	// team's second admin key creating "research" with "team-1" creates
	// (and conflicts), it does not replay the first key's answer.
	admin2 := e.json("POST", "/v1/keys", map[string]any{"name": "admin-2", "scopes": []string{"admin"}}, 201)["key"].(string)
	if code, replayed, out := e.idem(admin2, "team-1", "POST", "/v1/teams", map[string]any{"name": "research"}); code != 409 || replayed {
		t.Fatalf("another caller's key: %d %v %v", code, replayed, out)
	}

	// A final error is kept too: the repeat of a 400 is the same 400.
	bad := map[string]any{"name": 7}
	c1, _, e1 := e.idem(e.key, "bad-1", "POST", "/v1/collections", bad)
	c2, replayed, e2 := e.idem(e.key, "bad-1", "POST", "/v1/collections", bad)
	if c1 != 400 || c2 != 400 || !replayed || fmt.Sprint(e1) != fmt.Sprint(e2) {
		t.Fatalf("a 400 replayed: %d %v / %d %v %v", c1, e1, c2, replayed, e2)
	}

	// A header that is not a key: 400 naming it.
	code, _, out = e.idem(e.key, strings.Repeat("k", 300), "POST", "/v1/teams", map[string]any{"name": "x"})
	if code != 400 || errParam(out) != "Idempotency-Key" {
		t.Fatalf("a 300-character key: %d %v", code, out)
	}

	// A file upload (multipart): its boundary differs on every send, as
	// an SDK's retry builds the body anew; the parts are what is compared.
	upload := func(content string) (int, bool, map[string]any) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("purpose", "batch")
		fw, _ := mw.CreateFormFile("file", "lines.jsonl")
		fw.Write([]byte(content))
		mw.Close()
		req, _ := http.NewRequest("POST", e.url+"/v1/files", &buf)
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Idempotency-Key", "file-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", out
	}
	line := `{"custom_id":"1","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":"x"}}` + "\n"
	c1, r1, f1 := upload(line)
	c2, r2, f2 := upload(line)
	if c1 != 200 || r1 || c2 != 200 || !r2 || f1["id"] != f2["id"] {
		t.Fatalf("uploads: %d %v %v / %d %v %v", c1, r1, f1, c2, r2, f2)
	}
	if c3, _, out := upload(line + line); c3 != 422 {
		t.Fatalf("another file under the key: %d %v", c3, out)
	}
	files := e.json("GET", "/v1/files", nil, 200)
	if n := len(files["data"].([]any)); n != 1 {
		t.Fatalf("%d files, want 1: %v", n, files)
	}
}
