package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// batchOperations are the Batch tag's operations, checked live by
// TestOpenAPIBatchMatch.
var batchOperations = []string{
	"createFile", "listFiles", "retrieveFile", "deleteFile", "downloadFile",
	"createBatch", "listBatches", "retrieveBatch", "cancelBatch",
}

func init() { pendingLiveChecks = append(pendingLiveChecks, batchOperations...) }

// batchLine is one line of a batch input file asking the chat endpoint.
func batchLine(id, model, question string, extra string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":4,"temperature":0%s}}`,
		id, model, question, extra)
}

// uploadBatchFile sends POST /v1/files through the checker; the request
// is checked against the document unless it is meant to be invalid
// (fields the document refuses).
func (c *specChecker) uploadBatchFile(name, content string, fields map[string]string) exchange {
	c.t.Helper()
	body, ctype := multipartBody(c.t, name, "application/jsonl", content, fields)
	req := c.newRequest("POST", "/v1/files", body)
	req.Header.Set("Content-Type", ctype)
	return c.send(req, body, fields["purpose"] == "batch")
}

// waitBatch polls GET /v1/batches/{id} until the batch has one of statuses.
func (c *specChecker) waitBatch(id string, statuses ...string) map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		x := c.call("GET", "/v1/batches/"+id, nil)
		expectStatus(c.t, x, 200)
		b := x.json(c.t)
		for _, s := range statuses {
			if b["status"] == s {
				return b
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("batch %s still %v, want %v: %v", id, b["status"], statuses, b)
		}
	}
}

// TestOpenAPIBatchMatch checks files and batches live against the
// document on a tiny generated model: an upload (and refused ones naming
// the line), listing, content, a batch run to completion with its output
// file, another team's 404s, a cancel, deletes.
func TestOpenAPIBatchMatch(t *testing.T) {
	doc := loadSpec(t)
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	c := newSpecChecker(t, doc, e)
	other := teamKey(t, e, "outsiders")
	as := func(key string, f func()) {
		saved := c.key
		defer func() { c.key = saved }()
		c.key = key
		f()
	}

	input := batchLine("q1", "tiny", "hello", "") + "\n" + batchLine("q2", "tiny", "hi there", `,"user":"alice"`) + "\n\n" +
		batchLine("q3", "no-such-model", "hello", "") + "\n"
	x := c.uploadBatchFile("requests.jsonl", input, map[string]string{"purpose": "batch"})
	expectStatus(t, x, 200)
	f := x.json(t)
	fileID, _ := f["id"].(string)
	if f["bytes"].(float64) != float64(len(input)) || f["filename"] != "requests.jsonl" || f["purpose"] != "batch" || f["status"] != "processed" {
		t.Fatalf("uploaded file: %v", f)
	}
	// Refused uploads name the line; nothing is kept.
	dup := batchLine("q1", "tiny", "a", "") + "\n" + batchLine("q1", "tiny", "b", "")
	if e := expectError(t, c.uploadBatchFile("dup.jsonl", dup, map[string]string{"purpose": "batch"}), 400, "invalid_request_error"); e["param"] != "file" ||
		!strings.HasPrefix(e["message"].(string), "line 2: custom_id \"q1\" is used by line 1") {
		t.Fatalf("duplicate custom_id: %v", e)
	}
	bad := batchLine("a", "tiny", "a", "") + "\n" + `{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":"x"}`
	if e := expectError(t, c.uploadBatchFile("bad.jsonl", bad, map[string]string{"purpose": "batch"}), 400, "invalid_request_error"); e["message"] != "line 2: 'body' must be a JSON object" {
		t.Fatalf("bad body: %v", e)
	}
	if e := expectError(t, c.uploadBatchFile("x.jsonl", input, map[string]string{"purpose": "fine-tune"}), 400, "invalid_request_error"); e["param"] != "purpose" {
		t.Fatalf("purpose: %v", e)
	}
	if e := expectError(t, c.uploadBatchFile("x.jsonl", input, nil), 400, "invalid_request_error"); e["param"] != "purpose" {
		t.Fatalf("no purpose: %v", e)
	}
	x = c.call("GET", "/v1/files", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); len(l["data"].([]any)) != 1 || l["first_id"] != fileID || l["has_more"] != false {
		t.Fatalf("files (the refused uploads are not kept): %v", l)
	}
	expectStatus(t, c.call("GET", "/v1/files?purpose=batch&limit=1&order=asc", nil), 200)
	expectError(t, c.callRaw("GET", "/v1/files?limit=0", nil), 400, "invalid_request_error")
	expectStatus(t, c.call("GET", "/v1/files/"+fileID, nil), 200)
	expectError(t, c.call("GET", "/v1/files/file-000000000000000000000000", nil), 404, "not_found")
	x = c.call("GET", "/v1/files/"+fileID+"/content", nil)
	expectStatus(t, x, 200)
	if string(x.body) != input {
		t.Fatalf("content: %q", x.body)
	}

	// A batch, run to completion.
	if e := expectError(t, c.callRaw("POST", "/v1/batches", mustJSON(t, map[string]any{"input_file_id": fileID, "endpoint": "/v1/moderations", "completion_window": "24h"})),
		400, "invalid_request_error"); e["param"] != "endpoint" {
		t.Fatalf("endpoint: %v", e)
	}
	if e := expectError(t, c.callRaw("POST", "/v1/batches", mustJSON(t, map[string]any{"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": "1h"})),
		400, "invalid_request_error"); e["param"] != "completion_window" {
		t.Fatalf("completion_window: %v", e)
	}
	if e := expectError(t, c.call("POST", "/v1/batches", map[string]any{"input_file_id": "file-nope", "endpoint": "/v1/chat/completions", "completion_window": "24h"}), 400, "invalid_request_error"); e["param"] != "input_file_id" {
		t.Fatalf("unknown input file: %v", e)
	}
	x = c.call("POST", "/v1/batches", map[string]any{"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": "24h",
		"metadata": map[string]any{"job": "spec"}})
	expectStatus(t, x, 200)
	b := x.json(t)
	batchID, _ := b["id"].(string)
	if b["status"] != "validating" || b["metadata"].(map[string]any)["job"] != "spec" || b["output_file_id"] != nil {
		t.Fatalf("created batch: %v", b)
	}
	b = c.waitBatch(batchID, "completed", "failed")
	counts := b["request_counts"].(map[string]any)
	if b["status"] != "completed" || counts["total"] != 3.0 || counts["completed"] != 2.0 || counts["failed"] != 1.0 || b["model"] != "tiny" ||
		b["usage"].(map[string]any)["output_tokens"].(float64) < 1 {
		t.Fatalf("completed batch: %v", b)
	}
	x = c.call("GET", "/v1/files/"+b["output_file_id"].(string)+"/content", nil)
	expectStatus(t, x, 200)
	out := jsonLines(t, x.body)
	if len(out) != 2 || out[0]["custom_id"] != "q1" || out[1]["custom_id"] != "q2" {
		t.Fatalf("output file: %s", x.body)
	}
	for _, l := range out {
		resp := l["response"].(map[string]any)
		if resp["status_code"] != 200.0 || resp["body"].(map[string]any)["object"] != "chat.completion" || !strings.HasPrefix(resp["request_id"].(string), "req_") {
			t.Fatalf("output line: %v", l)
		}
	}
	x = c.call("GET", "/v1/files/"+b["error_file_id"].(string)+"/content", nil)
	expectStatus(t, x, 200)
	if errs := jsonLines(t, x.body); len(errs) != 1 || errs[0]["custom_id"] != "q3" || errs[0]["response"].(map[string]any)["status_code"] != 404.0 {
		t.Fatalf("error file: %s", x.body)
	}
	x = c.call("GET", "/v1/files?purpose=batch_output", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); len(l["data"].([]any)) != 2 {
		t.Fatalf("result files: %v", l)
	}
	// The lines are in the request log as the batch's user (q2 as its own).
	// Records are stored in batches off the request path: wait for both.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		x = c.call("GET", "/v1/logs?user=batch:"+batchID, nil)
		expectStatus(t, x, 200)
		logs := x.json(t)["data"].([]any)
		if len(logs) == 2 {
			break
		}
		if len(logs) > 2 || time.Now().After(deadline) {
			t.Fatalf("records of the batch's user: %v", logs)
		}
	}
	x = c.call("GET", "/v1/batches?limit=1", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); l["first_id"] != batchID {
		t.Fatalf("batches: %v", l)
	}
	expectError(t, c.call("POST", "/v1/batches/"+batchID+"/cancel", nil), 409, "conflict")

	// Another team sees none of it.
	as(other, func() {
		expectError(t, c.call("GET", "/v1/batches/"+batchID, nil), 404, "not_found")
		expectError(t, c.call("GET", "/v1/files/"+fileID, nil), 404, "not_found")
		expectError(t, c.call("GET", "/v1/files/"+fileID+"/content", nil), 404, "not_found")
		expectError(t, c.call("DELETE", "/v1/files/"+fileID, nil), 404, "not_found")
		expectError(t, c.call("POST", "/v1/batches", map[string]any{"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": "24h"}), 400, "invalid_request_error")
		x := c.call("GET", "/v1/batches", nil)
		expectStatus(t, x, 200)
		if l := x.json(t); len(l["data"].([]any)) != 0 || l["first_id"] != nil {
			t.Fatalf("another team's batches: %v", l)
		}
	})

	// A cancel.
	x = c.call("POST", "/v1/batches", map[string]any{"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": "24h"})
	expectStatus(t, x, 200)
	second := x.json(t)["id"].(string)
	x = c.call("POST", "/v1/batches/"+second+"/cancel", nil)
	expectStatus(t, x, 200)
	if s := x.json(t)["status"]; s != "cancelling" && s != "cancelled" {
		t.Fatalf("cancel: %v", s)
	}
	if b := c.waitBatch(second, "cancelled", "completed"); b["status"] == "cancelled" && b["cancelled_at"] == nil {
		t.Fatalf("cancelled batch: %v", b)
	}
	expectError(t, c.call("POST", "/v1/batches/batch_nope/cancel", nil), 404, "not_found")

	x = c.call("DELETE", "/v1/files/"+fileID, nil)
	expectStatus(t, x, 200)
	if d := x.json(t); d["deleted"] != true || d["id"] != fileID {
		t.Fatalf("delete: %v", d)
	}
	expectError(t, c.call("DELETE", "/v1/files/"+fileID, nil), 404, "not_found")

	if missing := c.uncovered(operationsExcept(c.doc, batchOperations...)...); len(missing) > 0 {
		t.Errorf("batch operations no check exercised: %v", missing)
	}
}

// jsonLines decodes a JSONL body.
func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}
