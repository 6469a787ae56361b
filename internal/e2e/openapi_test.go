package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// The OpenAPI tests hold docs/openapi.yaml to the server: they validate the
// document, then send real requests to a live server (real runner processes
// on tiny generated models, or the default models for embeddings) and
// validate every request and every response against it: status, declared
// headers and body, and each SSE chunk of a stream.
//
// Response schemas are checked strictly: before validating, every object
// schema that lists properties is closed (additionalProperties: false), so
// a field the server sends but the document does not describe fails the
// test, as does a missing or mistyped one. The published document stays
// open, so clients tolerate fields added later.

// specPath is the document under test.
var specPath = filepath.Join(testutil.RepoRoot(), "docs", "openapi.yaml")

var registerSSE sync.Once

// loadSpec loads and validates the document (examples included) and
// returns it with object schemas closed for strict checking.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	registerSSE.Do(func() {
		// The stream is validated chunk by chunk (checkSSE); as a whole it
		// is the string the document declares.
		openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
		// NDJSON (the log export): every line must be a JSON object; as a
		// whole it is the string the document declares.
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(r io.Reader, h http.Header, s *openapi3.SchemaRef, fn openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			for i, line := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
				var obj map[string]any
				if err := json.Unmarshal(line, &obj); err != nil {
					return nil, fmt.Errorf("NDJSON line %d is not a JSON object: %v", i+1, err)
				}
			}
			return string(b), nil
		})
	})
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specPath)
	if err != nil {
		t.Fatalf("loading %s: %v", specPath, err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", specPath, err)
	}
	closeObjects(doc)
	return doc
}

// closeObjects sets additionalProperties: false on every object schema
// that lists properties and says nothing about additional ones.
func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	no := false
	var walk func(r *openapi3.SchemaRef)
	walk = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil || seen[r.Value] {
			return
		}
		s := r.Value
		seen[s] = true
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			s.AdditionalProperties.Has = &no
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		walk(s.Not)
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
			for _, x := range list {
				walk(x)
			}
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
}

// specChecker sends requests to a live server and validates them and
// their responses against the document.
type specChecker struct {
	t      *testing.T
	doc    *openapi3.T
	router routers.Router
	base   string
	// key is sent as the bearer key when set.
	key string

	mu  sync.Mutex
	hit map[string]bool // "operationId status" seen
}

func newSpecChecker(t *testing.T, doc *openapi3.T, e *env) *specChecker {
	t.Helper()
	// Route against the live server, not the document's default address.
	doc.Servers = openapi3.Servers{{URL: e.url}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &specChecker{t: t, doc: doc, router: router, base: e.url, key: specKey(e), hit: map[string]bool{}}
}

// specKey returns the API key the checks send: newEnv's admin key.
func specKey(e *env) string { return e.key }

// exchange is one checked request and its response.
type exchange struct {
	resp *http.Response
	body []byte
}

// json decodes the response body.
func (x exchange) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(x.body, &v); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, x.body)
	}
	return v
}

func (c *specChecker) newRequest(method, path string, body []byte) *http.Request {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req
}

// call sends a request whose body must itself conform to the document,
// and validates the response.
func (c *specChecker) call(method, path string, body any) exchange {
	c.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
	}
	return c.send(c.newRequest(method, path, b), b, true)
}

// callRaw sends a body as is (for requests that are meant to be invalid)
// and validates only the response.
func (c *specChecker) callRaw(method, path string, body []byte) exchange {
	c.t.Helper()
	return c.send(c.newRequest(method, path, body), body, false)
}

func (c *specChecker) send(req *http.Request, body []byte, checkRequest bool) exchange {
	c.t.Helper()
	route, params, routeErr := c.router.FindRoute(req)
	if routeErr == nil && checkRequest {
		in := c.requestInput(req, body, route, params)
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Fatalf("%s %s: the request does not match the document: %v", req.Method, req.URL.Path, err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the response: %v", req.Method, req.URL.Path, err)
	}
	x := exchange{resp: resp, body: data}
	if routeErr != nil {
		// No operation: the server must answer with the error envelope.
		if err := c.checkUnrouted(x); err != nil {
			c.t.Fatalf("%s %s (no operation in the document: %v): %v", req.Method, req.URL.Path, routeErr, err)
		}
		return x
	}
	if err := c.checkResponse(req, body, route, params, x); err != nil {
		c.t.Fatalf("%s %s: the response does not match the document: %v\nstatus %d, body:\n%s", req.Method, req.URL.Path, err, resp.StatusCode, truncate(data))
	}
	c.mu.Lock()
	c.hit[fmt.Sprintf("%s %d", route.Operation.OperationID, resp.StatusCode)] = true
	c.mu.Unlock()
	return x
}

func (c *specChecker) requestInput(req *http.Request, body []byte, route *routers.Route, params map[string]string) *openapi3filter.RequestValidationInput {
	clone := req.Clone(context.Background())
	if body != nil {
		clone.Body = io.NopCloser(bytes.NewReader(body))
	}
	return &openapi3filter.RequestValidationInput{
		Request:    clone,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         true,
		},
	}
}

// checkResponse validates a response of the operation route: its status
// must be declared, its declared headers present and well-formed, its body
// must match the schema, and a stream's chunks must match the chunk schema.
func (c *specChecker) checkResponse(req *http.Request, body []byte, route *routers.Route, params map[string]string, x exchange) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.requestInput(req, body, route, params),
		Status:                 x.resp.StatusCode,
		Header:                 x.resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(x.body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	if strings.HasPrefix(x.resp.Header.Get("Content-Type"), "text/event-stream") {
		chunk, ok := sseChunkSchema[route.Operation.OperationID]
		if !ok {
			return fmt.Errorf("no chunk schema known for streamed %s", route.Operation.OperationID)
		}
		return c.checkSSE(x.body, chunk)
	}
	return nil
}

// sseChunkSchema names the schema of each streamed operation's chunks.
var sseChunkSchema = map[string]string{
	"createChatCompletion": "ChatCompletionChunk",
	"createCompletion":     "TextCompletion",
}

// checkSSE validates a whole event stream: every event is one `data:`
// line holding a chunk that matches schema, and the last is [DONE].
func (c *specChecker) checkSSE(stream []byte, schema string) error {
	_, err := c.sseChunks(stream, schema)
	return err
}

// sseChunks validates stream (see checkSSE) and returns its chunks.
func (c *specChecker) sseChunks(stream []byte, schema string) ([]map[string]any, error) {
	s := string(stream)
	if !strings.HasSuffix(s, "\n\n") {
		return nil, fmt.Errorf("the stream does not end with a blank line: %q", truncate(stream))
	}
	events := strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n")
	if len(events) < 2 || events[len(events)-1] != "data: [DONE]" {
		return nil, fmt.Errorf("the stream does not end with data: [DONE]: %q", truncate(stream))
	}
	var out []map[string]any
	for i, ev := range events[:len(events)-1] {
		payload, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(payload, "\n") {
			return nil, fmt.Errorf("event %d is not a single data: line: %q", i, ev)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			return nil, fmt.Errorf("event %d is not a JSON object: %v", i, err)
		}
		if err := c.validateSchema(schema, v); err != nil {
			return nil, fmt.Errorf("event %d does not match %s: %v\n%s", i, schema, err, payload)
		}
		out = append(out, v)
	}
	return out, nil
}

// validateSchema validates a decoded JSON value against a component schema.
func (c *specChecker) validateSchema(name string, v any) error {
	ref, ok := c.doc.Components.Schemas[name]
	if !ok {
		c.t.Fatalf("no schema %s in the document", name)
	}
	return ref.Value.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.MultiErrors())
}

// checkUnrouted validates a response to a path the document does not
// describe: a declared error status, x-request-id, and the error envelope.
func (c *specChecker) checkUnrouted(x exchange) error {
	if x.resp.StatusCode < 400 {
		return fmt.Errorf("status %d for an undocumented operation", x.resp.StatusCode)
	}
	if err := c.checkHeaders("NotFound", x); err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(x.body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	return c.validateSchema("ErrorResponse", v)
}

// checkHeaders checks the required headers of a component response.
func (c *specChecker) checkHeaders(response string, x exchange) error {
	r := c.doc.Components.Responses[response].Value
	for name, h := range r.Headers {
		if h.Value.Required && x.resp.Header.Get(name) == "" {
			return fmt.Errorf("required header %s is missing", name)
		}
	}
	return nil
}

// expectError checks the status and error code of a response already
// validated against the document, and returns its envelope's error.
func expectError(t *testing.T, x exchange, status int, code string) map[string]any {
	t.Helper()
	if x.resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", x.resp.StatusCode, status, truncate(x.body))
	}
	e, _ := x.json(t)["error"].(map[string]any)
	if e["code"] != code {
		t.Fatalf("error code %v, want %s: %s", e["code"], code, truncate(x.body))
	}
	return e
}

func expectStatus(t *testing.T, x exchange, status int) {
	t.Helper()
	if x.resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", x.resp.StatusCode, status, truncate(x.body))
	}
}

// uncovered lists the operations of the document no check exercised with
// a success status, except those in pending.
func (c *specChecker) uncovered(pending ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if slices.Contains(pending, op.OperationID) {
				continue
			}
			ok := false
			for code := range op.Responses.Map() {
				if strings.HasPrefix(code, "2") && c.hit[op.OperationID+" "+code] {
					ok = true
				}
			}
			if !ok {
				out = append(out, fmt.Sprintf("%s %s (%s)", method, path, op.OperationID))
			}
		}
	}
	sort.Strings(out)
	return out
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// TestOpenAPIDocumentIsValid loads docs/openapi.yaml and validates it,
// examples included, and checks that every /v1 operation is secured and
// every response declares x-request-id.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			secured := op.Security == nil || len(*op.Security) > 0
			if (strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/")) != secured {
				t.Errorf("%s %s: secured=%v; /v1 and /v2 routes need the bearer key, the others none", method, path, secured)
			}
			for code, r := range op.Responses.Map() {
				if r.Value.Headers["x-request-id"] == nil {
					t.Errorf("%s %s %s: no x-request-id header", method, path, code)
				}
			}
		}
	}
}

// TestOpenAPIInferenceResponsesMatch exercises the inference, model and
// tokenizer endpoints and their error responses against a live server on a
// tiny generated model.
func TestOpenAPIInferenceResponsesMatch(t *testing.T) {
	doc := loadSpec(t)
	store := tinyStore(t, "tiny", "broken")
	// A truncated model fails to load: a 503 model_failed, and a model
	// whose status is failed with a reason.
	path := store.Path("broken")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store, engine.Config{})
	c := newSpecChecker(t, doc, e)
	msgs := []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}}

	t.Run("health", func(t *testing.T) {
		c.t = t
		expectStatus(t, c.call("GET", "/healthz", nil), 200)
		expectStatus(t, c.call("GET", "/livez", nil), 200)
	})

	t.Run("chat", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{
			"model": "tiny", "messages": msgs, "temperature": 0, "max_tokens": 8, "seed": 7, "stop": []string{"\n\n"}, "user": "u1",
		})
		expectStatus(t, x, 200)
		v := x.json(t)
		if ch := v["choices"].([]any)[0].(map[string]any); ch["logprobs"] != nil {
			t.Fatalf("logprobs without asking: %v", ch["logprobs"])
		}
	})

	t.Run("responses", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hello", "instructions": "Be brief.", "max_output_tokens": 6, "temperature": 0})
		expectStatus(t, x, 200)
		id := x.json(t)["id"].(string)
		expectStatus(t, c.call("GET", "/v1/responses/"+id, nil), 200)
		expectStatus(t, c.call("GET", "/v1/responses/"+id+"/input_items?order=asc&limit=5", nil), 200)
		expectStatus(t, c.call("DELETE", "/v1/responses/"+id, nil), 200)
		expectStatus(t, c.call("GET", "/v1/responses/"+id, nil), 404)
	})

	t.Run("chat with logprobs and content parts", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{
			"model":    "tiny",
			"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "hi"}}}},
			"logprobs": true, "top_logprobs": 3, "max_completion_tokens": 4, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
		})
		expectStatus(t, x, 200)
		lp := x.json(t)["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		if len(lp) == 0 || len(lp[0].(map[string]any)["top_logprobs"].([]any)) != 3 {
			t.Fatalf("logprobs %v, want one entry per token with 3 alternatives", lp)
		}
	})

	t.Run("chat streamed with usage and logprobs", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{
			"model": "tiny", "messages": msgs, "max_tokens": 6, "temperature": 0,
			"stream": true, "stream_options": map[string]any{"include_usage": true}, "logprobs": true, "top_logprobs": 2,
		})
		expectStatus(t, x, 200)
		chunks, err := c.sseChunks(x.body, "ChatCompletionChunk")
		if err != nil {
			t.Fatal(err)
		}
		last := chunks[len(chunks)-1]
		if len(last["choices"].([]any)) != 0 || last["usage"] == nil {
			t.Fatalf("the last chunk is not the usage chunk: %v", last)
		}
		first := chunks[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		if first["role"] != "assistant" {
			t.Fatalf("the first chunk has no assistant role: %v", first)
		}
	})

	t.Run("chat streamed plain", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 4, "stream": true})
		expectStatus(t, x, 200)
	})

	t.Run("chat with several choices", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 4, "n": 2, "temperature": 1})
		expectStatus(t, x, 200)
		if ch := x.json(t)["choices"].([]any); len(ch) != 2 || ch[1].(map[string]any)["index"] != 1.0 {
			t.Fatalf("n=2: choices %v", ch)
		}
		x = c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 4, "n": 2, "stream": true, "stream_options": map[string]any{"include_usage": true}})
		expectStatus(t, x, 200)
		chunks, err := c.sseChunks(x.body, "ChatCompletionChunk")
		if err != nil {
			t.Fatal(err)
		}
		finished := map[float64]bool{}
		for _, ch := range chunks {
			for _, cc := range ch["choices"].([]any) {
				if cc := cc.(map[string]any); cc["finish_reason"] != nil {
					finished[cc["index"].(float64)] = true
				}
			}
		}
		if len(finished) != 2 {
			t.Fatalf("n=2 stream: choices finished %v, want 0 and 1", finished)
		}
	})

	t.Run("chat json_object", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{
			"model": "tiny", "messages": msgs, "max_tokens": 8, "response_format": map[string]any{"type": "json_object"},
		})
		expectStatus(t, x, 200)
	})

	t.Run("chat tool calls", func(t *testing.T) {
		c.t = t
		tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "pick", "parameters": map[string]any{
			"type": "object", "properties": map[string]any{"n": map[string]any{"enum": []int{1, 2}}}, "required": []string{"n"}, "additionalProperties": false}}}}
		body := map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 400, "tools": tools, "tool_choice": "required", "parallel_tool_calls": false}
		x := c.call("POST", "/v1/chat/completions", body)
		expectStatus(t, x, 200)
		if v := x.json(t); v["choices"].([]any)[0].(map[string]any)["finish_reason"] != "tool_calls" {
			t.Fatalf("no tool call: %v", v)
		}
		body["stream"] = true
		x = c.call("POST", "/v1/chat/completions", body)
		expectStatus(t, x, 200)
		if _, err := c.sseChunks(x.body, "ChatCompletionChunk"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("chat tool call cut short, legacy functions, logprobs", func(t *testing.T) {
		c.t = t
		fn := map[string]any{"name": "pick", "parameters": map[string]any{
			"type": "object", "properties": map[string]any{"n": map[string]any{"enum": []int{1, 2}}}, "required": []string{"n"}, "additionalProperties": false}}
		for _, body := range []map[string]any{
			{"model": "tiny", "messages": msgs, "max_tokens": 6, "tools": []any{map[string]any{"type": "function", "function": fn}},
				"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "pick"}}, "logprobs": true, "top_logprobs": 1},
			{"model": "tiny", "messages": msgs, "max_tokens": 400, "functions": []any{fn}, "function_call": map[string]any{"name": "pick"}},
			{"model": "tiny", "messages": msgs, "max_tokens": 6, "functions": []any{fn}, "function_call": map[string]any{"name": "pick"}},
		} {
			x := c.call("POST", "/v1/chat/completions", body)
			expectStatus(t, x, 200)
			body["stream"] = true
			x = c.call("POST", "/v1/chat/completions", body)
			expectStatus(t, x, 200)
			if _, err := c.sseChunks(x.body, "ChatCompletionChunk"); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("completions echo", func(t *testing.T) {
		c.t = t
		expectStatus(t, c.call("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Once upon a time", "max_tokens": 0, "echo": true, "logprobs": 2}), 200)
		x := c.call("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Once upon a time", "max_tokens": 3, "echo": true, "logprobs": 1, "stream": true})
		expectStatus(t, x, 200)
		if _, err := c.sseChunks(x.body, "TextCompletion"); err != nil {
			t.Fatal(err)
		}
		expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "x", "suffix": "y"}), 400, "invalid_request_error")
	})

	t.Run("rerank cohere v2", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v2/rerank", map[string]any{"model": "tiny", "query": "q", "documents": []string{"a", "b", "c"}, "top_n": 2, "max_tokens_per_doc": 512})
		expectStatus(t, x, 200)
		v := x.json(t)
		if len(v["results"].([]any)) != 2 || v["meta"].(map[string]any)["api_version"].(map[string]any)["version"] != "2" || v["id"] == "" {
			t.Fatalf("v2 rerank: %v", v)
		}
		expectError(t, c.callRaw("POST", "/v2/rerank", []byte(`{"model": "tiny", "query": "q", "documents": []}`)), 400, "invalid_request_error")
	})

	t.Run("completions", func(t *testing.T) {
		c.t = t
		expectStatus(t, c.call("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Once upon a time", "max_tokens": 6, "temperature": 0}), 200)
		expectStatus(t, c.call("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": []string{"Once"}, "max_tokens": 3, "logprobs": 2}), 200)
		expectStatus(t, c.call("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": []int{1, 2, 3}, "max_tokens": 3}), 200)
	})

	t.Run("completions streamed", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/completions", map[string]any{
			"model": "tiny", "prompt": "Once upon a time", "max_tokens": 5, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "logprobs": 1,
		})
		expectStatus(t, x, 200)
		chunks, err := c.sseChunks(x.body, "TextCompletion")
		if err != nil {
			t.Fatal(err)
		}
		if last := chunks[len(chunks)-1]; last["usage"] == nil {
			t.Fatalf("no usage chunk: %v", last)
		}
	})

	t.Run("models", func(t *testing.T) {
		c.t = t
		x := c.call("GET", "/v1/models", nil)
		expectStatus(t, x, 200)
		if d := x.json(t)["data"].([]any); len(d) != 2 {
			t.Fatalf("models %v", d)
		}
		x = c.call("GET", "/v1/models/tiny", nil)
		expectStatus(t, x, 200)
		if st := x.json(t)["status"]; st != "ready" {
			t.Fatalf("status %v after serving requests, want ready", st)
		}
	})

	t.Run("failed model", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "broken", "messages": msgs, "max_tokens": 2})
		expectError(t, x, 503, "model_failed")
		x = c.call("GET", "/v1/models/broken", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["status"] != "failed" || m["status_reason"] == "" {
			t.Fatalf("a model that failed to load: %v", m)
		}
		expectStatus(t, c.call("GET", "/v1/models", nil), 200)
	})

	t.Run("tokenize and detokenize", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/tokenize", map[string]any{"model": "tiny", "input": "hello world"})
		expectStatus(t, x, 200)
		toks := x.json(t)["tokens"].([]any)
		x = c.call("POST", "/v1/tokenize", map[string]any{"model": "tiny", "input": "hello world", "add_special": false})
		expectStatus(t, x, 200)
		x = c.call("POST", "/v1/detokenize", map[string]any{"model": "tiny", "tokens": toks})
		expectStatus(t, x, 200)
		// Edge cases: nothing to tokenize, nothing to detokenize.
		expectStatus(t, c.call("POST", "/v1/tokenize", map[string]any{"model": "tiny", "input": "", "add_special": false}), 200)
		expectStatus(t, c.call("POST", "/v1/detokenize", map[string]any{"model": "tiny", "tokens": []int{}}), 200)
	})

	t.Run("errors", func(t *testing.T) {
		c.t = t
		expectError(t, c.callRaw("POST", "/v1/chat/completions", []byte(`{"model": "tiny", "messages": [}`)), 400, "invalid_json")
		e := expectError(t, c.callRaw("POST", "/v1/chat/completions", []byte(`{"model": "tiny", "messages": "hi"}`)), 400, "invalid_request_error")
		if e["param"] != "messages" {
			t.Fatalf("param %v, want messages", e["param"])
		}
		e = expectError(t, c.callRaw("POST", "/v1/chat/completions", []byte(`{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "temperature": 3}`)), 400, "invalid_request_error")
		if e["param"] != "temperature" {
			t.Fatalf("param %v, want temperature", e["param"])
		}
		expectError(t, c.callRaw("POST", "/v1/embeddings", []byte(`{"model": "tiny", "input": "hi"}`)), 400, "invalid_request_error")
		expectError(t, c.callRaw("POST", "/v1/tokenize", []byte(`{"input": "hi"}`)), 400, "invalid_request_error")
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "no-such-model", "messages": msgs}), 404, "model_not_found")
		expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "no-such-model", "prompt": "x"}), 404, "model_not_found")
		expectError(t, c.call("POST", "/v1/detokenize", map[string]any{"model": "no-such-model", "tokens": []int{1}}), 404, "model_not_found")
		expectError(t, c.call("GET", "/v1/models/no-such-model", nil), 404, "model_not_found")
		expectError(t, c.call("GET", "/v1/no-such-route", nil), 404, "not_found")
		expectError(t, c.call("GET", "/v2/models", nil), 404, "unsupported_api_version")
		expectError(t, c.call("POST", "/v3/chat/completions", map[string]any{}), 404, "unsupported_api_version")
		big := append([]byte(`{"model": "tiny", "messages": [{"role": "user", "content": "`), bytes.Repeat([]byte("a"), 9<<20)...)
		big = append(big, `"}]}`...)
		expectError(t, c.callRaw("POST", "/v1/chat/completions", big), 413, "request_too_large")
	})

	t.Run("request log and usage", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 2})
		expectStatus(t, x, 200)
		id := x.resp.Header.Get("X-Request-Id")
		// Records are stored off the request path: wait for this one.
		for deadline := time.Now().Add(5 * time.Second); ; {
			if x = c.call("GET", "/v1/logs/"+id, nil); x.resp.StatusCode == 200 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		expectStatus(t, x, 200)
		expectStatus(t, c.call("GET", "/v1/logs?model=tiny&status=2xx&limit=5", nil), 200)
		expectStatus(t, c.call("GET", "/v1/logs/"+id+"/proof", nil), 200)
		expectStatus(t, c.call("GET", "/v1/logs/export?model=tiny", nil), 200)
		expectStatus(t, c.call("GET", "/v1/usage?group_by=day", nil), 200)
		expectStatus(t, c.call("GET", "/v1/logs/checkpoints?limit=5", nil), 200)
		expectError(t, c.call("GET", "/v1/logs/"+id+"/proof?checkpoint=12345", nil), 400, "invalid_request_error")
		expectError(t, c.call("GET", "/v1/logs?status=abc", nil), 400, "invalid_request_error")
		expectError(t, c.call("GET", "/v1/logs/req_nope", nil), 404, "not_found")
	})

	t.Run("limits and policies", func(t *testing.T) {
		c.t = t
		expectStatus(t, c.call("PUT", "/v1/limits/rules/model/tiny", map[string]any{"requests_per_minute": 1000, "tokens_per_day": 1000000}), 200)
		expectStatus(t, c.call("GET", "/v1/limits/rules/model/tiny", nil), 200)
		expectStatus(t, c.call("GET", "/v1/limits/rules", nil), 200)
		expectError(t, c.callRaw("PUT", "/v1/limits/rules/model/tiny", []byte(`{"requests_per_hour": 1}`)), 400, "invalid_request_error")
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "max_tokens": 2})
		expectStatus(t, x, 200)
		if x.resp.Header.Get("X-Ratelimit-Remaining-Requests") == "" {
			t.Error("no x-ratelimit headers on a governed request")
		}
		expectStatus(t, c.call("GET", "/v1/limits", nil), 200)
		expectStatus(t, c.call("DELETE", "/v1/limits/rules/model/tiny", nil), 200)
		expectError(t, c.call("GET", "/v1/limits/rules/model/tiny", nil), 404, "not_found")

		pol := map[string]any{"name": "spec-check", "scope": "deployment", "rules": []map[string]any{
			{"name": "flag-email", "stage": "input", "when": `"email" in pii`, "action": "flag", "reason": "email sent"},
			{"name": "no-secrets", "stage": "input", "when": `input.contains("TOP-SECRET")`, "action": "deny", "reason": "classified"},
		}}
		x = c.call("POST", "/v1/policies", pol)
		expectStatus(t, x, 201)
		id := x.json(t)["id"].(string)
		expectStatus(t, c.call("GET", "/v1/policies", nil), 200)
		expectStatus(t, c.call("GET", "/v1/policies/"+id, nil), 200)
		pol["description"] = "checked against the document"
		expectStatus(t, c.call("PUT", "/v1/policies/"+id, pol), 200)
		expectError(t, c.call("POST", "/v1/policies", map[string]any{"name": "bad", "scope": "deployment",
			"rules": []map[string]any{{"name": "r", "stage": "input", "when": "1 +", "action": "deny"}}}), 400, "invalid_request_error")
		expectStatus(t, c.call("POST", "/v1/policies/test", map[string]any{"policy_id": id, "input": map[string]any{"input": "mail a@example.com"}}), 200)
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "max_tokens": 2,
			"messages": []map[string]any{{"role": "user", "content": "TOP-SECRET plans"}}}), 403, "policy_violation")
		expectStatus(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "max_tokens": 2,
			"messages": []map[string]any{{"role": "user", "content": "write to a@example.com"}}}), 200)
		var did string
		for deadline := time.Now().Add(5 * time.Second); did == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			x = c.call("GET", "/v1/policy_decisions?policy_id="+id+"&limit=10", nil)
			if ds, _ := x.json(t)["data"].([]any); len(ds) == 2 {
				did = ds[0].(map[string]any)["id"].(string)
			}
		}
		expectStatus(t, x, 200)
		if did == "" {
			t.Fatalf("decisions: %s", x.body)
		}
		expectStatus(t, c.call("GET", "/v1/policy_decisions/"+did, nil), 200)
		expectError(t, c.callRaw("GET", "/v1/policy_decisions?limit=500", nil), 400, "invalid_request_error")
		expectStatus(t, c.call("DELETE", "/v1/policies/"+id, nil), 200)
		expectError(t, c.call("GET", "/v1/policies/"+id, nil), 404, "not_found")
	})

	t.Run("authentication errors", func(t *testing.T) {
		c.t = t
		key := c.key
		defer func() { c.key = key }()
		c.key = ""
		expectError(t, c.call("GET", "/v1/models", nil), 401, "missing_api_key")
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs}), 401, "missing_api_key")
		c.key = "sk-sov-not-a-key-of-this-server"
		expectError(t, c.call("GET", "/v1/models", nil), 401, "invalid_api_key")
	})

	c.t = t
	if missing := c.uncovered(pendingLiveChecks...); len(missing) > 0 {
		t.Errorf("operations the document describes that no check exercised: %v", missing)
	}
}

// pendingLiveChecks are operations whose responses are not yet checked
// live here: embeddings are checked by TestOpenAPIEmbeddingsMatch on the
// default models; the admin and operations endpoints have no live check yet.
var pendingLiveChecks = append([]string{
	"createEmbedding",
	"getReadiness", "getMetrics",
	"createKey", "listKeys", "retrieveKey", "revokeKey", "rotateKey", "createTeam", "listTeams", "updateTeam",
	"createUser", "listUsers", "getUser", "updateUser", "listTeamMembers", "putTeamMember", "deleteTeamMember", "getMe",
	"createInvitation", "listInvitations", "deleteInvitation",
}, catalogOperations...) // the admin lines are checked by TestOpenAPIAdminResponsesMatch, the catalog by TestOpenAPIModelCatalogResponsesMatch

// TestOpenAPIEmbeddingsMatch checks embeddings (float and base64, with and
// without dimensions) on the default embedding model.
func TestOpenAPIEmbeddingsMatch(t *testing.T) {
	doc := loadSpec(t)
	e := newEnv(t, defaultStore(t), engine.Config{})
	c := newSpecChecker(t, doc, e)
	x := c.call("POST", "/v1/embeddings", map[string]any{"model": "all-minilm-l6-v2", "input": "The food was delicious."})
	expectStatus(t, x, 200)
	x = c.call("POST", "/v1/embeddings", map[string]any{"model": "all-minilm-l6-v2", "input": []string{"kitten", "cat"}, "dimensions": 64, "encoding_format": "float", "user": "u1"})
	expectStatus(t, x, 200)
	if emb := x.json(t)["data"].([]any)[1].(map[string]any)["embedding"].([]any); len(emb) != 64 {
		t.Fatalf("dimensions: got %d values, want 64", len(emb))
	}
	x = c.call("POST", "/v1/embeddings", map[string]any{"model": "all-minilm-l6-v2", "input": []string{"kitten"}, "encoding_format": "base64", "dimensions": 32})
	expectStatus(t, x, 200)
	if s := x.json(t)["data"].([]any)[0].(map[string]any)["embedding"].(string); len(s) != 4*((32*4+2)/3) {
		t.Fatalf("base64 embedding of 32 floats has length %d", len(s))
	}
	e2 := expectError(t, c.call("POST", "/v1/embeddings", map[string]any{"model": "all-minilm-l6-v2", "input": "x", "dimensions": 100000}), 400, "invalid_request_error")
	if e2["param"] != "dimensions" {
		t.Fatalf("param %v, want dimensions", e2["param"])
	}
	expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "all-minilm-l6-v2", "messages": []map[string]any{{"role": "user", "content": "hi"}}}), 400, "invalid_request_error")
}

// TestOpenAPIValidationCatchesDrift makes sure the checks above would fail
// if the server drifted from the document: real responses, altered, must
// be rejected.
func TestOpenAPIValidationCatchesDrift(t *testing.T) {
	doc := loadSpec(t)
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	c := newSpecChecker(t, doc, e)
	body := map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_tokens": 4}
	real := c.call("POST", "/v1/chat/completions", body)
	expectStatus(t, real, 200)
	b, _ := json.Marshal(body)

	// validate runs the real response, altered by mutate, through the same
	// check as every live response.
	validate := func(status int, header http.Header, mutate func(v map[string]any)) error {
		v := real.json(t)
		if mutate != nil {
			mutate(v)
		}
		data, _ := json.Marshal(v)
		req := c.newRequest("POST", "/v1/chat/completions", b)
		route, params, err := c.router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		resp := &http.Response{StatusCode: status, Header: header}
		return c.checkResponse(req, b, route, params, exchange{resp: resp, body: data})
	}
	if err := validate(200, real.resp.Header, nil); err != nil {
		t.Fatalf("the unaltered response fails: %v", err)
	}
	choice := func(v map[string]any) map[string]any { return v["choices"].([]any)[0].(map[string]any) }
	drifts := map[string]func(v map[string]any){
		"created as a string":         func(v map[string]any) { v["created"] = "1767225600" },
		"usage.total_tokens a string": func(v map[string]any) { v["usage"].(map[string]any)["total_tokens"] = "29" },
		"no id":                       func(v map[string]any) { delete(v, "id") },
		"wrong object":                func(v map[string]any) { v["object"] = "chat.completion.chunk" },
		"unknown finish_reason":       func(v map[string]any) { choice(v)["finish_reason"] = "done" },
		"content a number":            func(v map[string]any) { choice(v)["message"].(map[string]any)["content"] = 5 },
		"undocumented field":          func(v map[string]any) { v["service_tier"] = "default" },
		"undocumented nested field":   func(v map[string]any) { choice(v)["message"].(map[string]any)["audio"] = map[string]any{} },
		"a tool call without id": func(v map[string]any) {
			choice(v)["message"].(map[string]any)["tool_calls"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}
		},
	}
	for name, mutate := range drifts {
		if err := validate(200, real.resp.Header, mutate); err == nil {
			t.Errorf("a response with %s passed validation", name)
		}
	}
	if err := validate(http.StatusTeapot, real.resp.Header, nil); err == nil {
		t.Error("an undocumented status passed validation")
	}
	noID := real.resp.Header.Clone()
	noID.Del("X-Request-Id")
	if err := validate(200, noID, nil); err == nil {
		t.Error("a response without x-request-id passed validation")
	}
	// An error envelope with a wrong field type.
	bad := map[string]any{"error": map[string]any{"message": "x", "type": "invalid_request_error", "param": 3, "code": "invalid_json"}}
	if err := c.validateSchema("ErrorResponse", bad); err == nil {
		t.Error("an error envelope with a numeric param passed validation")
	}
	// Streams: a chunk of the wrong type, a missing [DONE].
	stream := c.call("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": body["messages"], "max_tokens": 3, "stream": true})
	expectStatus(t, stream, 200)
	broken := bytes.Replace(stream.body, []byte(`"object":"chat.completion.chunk"`), []byte(`"object":"chat.completion"`), 1)
	if err := c.checkSSE(broken, "ChatCompletionChunk"); err == nil {
		t.Error("a stream with a chat.completion object as a chunk passed validation")
	}
	if err := c.checkSSE(bytes.TrimSuffix(stream.body, []byte("data: [DONE]\n\n")), "ChatCompletionChunk"); err == nil {
		t.Error("a stream without [DONE] passed validation")
	}
}

// TestOpenAPIAdminResponsesMatch checks the keys, teams, readiness and
// metrics endpoints live against the document.
func TestOpenAPIAdminResponsesMatch(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	c := newSpecChecker(t, loadSpec(t), e)
	team := c.call("POST", "/v1/teams", map[string]any{"name": "ops"}).json(t)
	c.call("GET", "/v1/teams", nil)
	if tm := c.call("PATCH", "/v1/teams/"+team["id"].(string), map[string]any{"capture": true}).json(t); tm["capture"] != true {
		t.Fatalf("capture: %v", tm)
	}
	c.call("PATCH", "/v1/teams/team_doesnotexist", map[string]any{"capture": false}) // 404
	k := c.call("POST", "/v1/keys", map[string]any{"name": "svc", "team_id": team["id"], "scopes": []string{"inference"}, "expires_in": 3600}).json(t)
	id, _ := k["id"].(string)
	if id == "" || k["key"] == nil {
		t.Fatalf("create key: %v", k)
	}
	c.call("GET", "/v1/keys", nil)
	c.call("GET", "/v1/keys/"+id, nil)
	rot := c.call("POST", "/v1/keys/"+id+"/rotate", map[string]any{"grace_seconds": 60}).json(t)
	c.call("DELETE", "/v1/keys/"+rot["id"].(string), nil)
	c.call("GET", "/v1/keys/key_doesnotexist", nil)
	c.call("POST", "/v1/teams", map[string]any{"name": "ops"}) // 409
	// Idempotency-Key: the first answer, its replay, and the key reused
	// for another body (422).
	idem := func(body map[string]any) exchange {
		b, _ := json.Marshal(body)
		req := c.newRequest("POST", "/v1/teams", b)
		req.Header.Set("Idempotency-Key", "spec-team-1")
		return c.send(req, b, true)
	}
	first, again := idem(map[string]any{"name": "idem"}), idem(map[string]any{"name": "idem"})
	if first.resp.StatusCode != 201 || again.resp.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
		t.Fatalf("replay: %d %s / %v %s", first.resp.StatusCode, first.body, again.resp.Header, again.body)
	}
	if x := idem(map[string]any{"name": "other"}); x.resp.StatusCode != 422 {
		t.Fatalf("reused key: %d %s", x.resp.StatusCode, x.body)
	}
	// People: a user, their membership, their own key, who they are.
	u := c.call("POST", "/v1/users", map[string]any{"email": "ada@example.com", "name": "Ada", "password": "correct horse battery",
		"memberships": []map[string]any{{"team_id": team["id"], "role": "developer"}}}).json(t)
	uid, _ := u["id"].(string)
	if uid == "" {
		t.Fatalf("create user: %v", u)
	}
	c.call("POST", "/v1/users", map[string]any{"email": "ADA@example.com"}) // 409
	c.call("POST", "/v1/users", map[string]any{"email": "not an address"})  // 400
	c.call("GET", "/v1/users", nil)
	c.call("GET", "/v1/users/"+uid, nil)
	c.call("GET", "/v1/users/user_doesnotexist", nil) // 404
	c.call("POST", "/v1/users/"+uid, map[string]any{"name": "Ada Lovelace"})
	c.call("GET", "/v1/teams/"+team["id"].(string)+"/members", nil)
	c.call("PUT", "/v1/teams/"+team["id"].(string)+"/members/"+uid, map[string]any{"role": "admin"})
	uk := c.call("POST", "/v1/keys", map[string]any{"name": "ada's", "team_id": team["id"], "scopes": []string{"inference"}, "owner_user_id": uid}).json(t)
	if uk["kind"] != "user" || uk["owner_user_id"] != uid {
		t.Fatalf("a user's key: %v", uk)
	}
	c.call("GET", "/v1/me", nil)
	inv := c.call("POST", "/v1/invitations", map[string]any{"email": "grace@example.com", "team_id": team["id"], "role": "viewer", "expires_in": 3600}).json(t)
	c.call("GET", "/v1/invitations", nil)
	c.call("DELETE", "/v1/invitations/"+inv["id"].(string), nil)
	c.call("DELETE", "/v1/invitations/inv_doesnotexist", nil) // 404
	c.call("DELETE", "/v1/teams/"+team["id"].(string)+"/members/"+uid, nil)
	c.call("DELETE", "/v1/teams/"+team["id"].(string)+"/members/"+uid, nil) // 404
	c.call("GET", "/readyz", nil)
	c.call("GET", "/metrics", nil)
	admin := []string{"createKey", "listKeys", "retrieveKey", "revokeKey", "rotateKey", "createTeam", "listTeams", "updateTeam", "getReadiness", "getMetrics",
		"createUser", "listUsers", "getUser", "updateUser", "listTeamMembers", "putTeamMember", "deleteTeamMember", "getMe", "createInvitation", "listInvitations", "deleteInvitation"}
	if missing := c.uncovered(operationsExcept(c.doc, admin...)...); len(missing) > 0 {
		t.Errorf("admin operations no check exercised: %v", missing)
	}
}

// catalogOperations are the model catalog's operations, checked live by
// TestOpenAPIModelCatalogResponsesMatch.
var catalogOperations = []string{
	"createModel", "updateModel", "deleteModel", "loadModel", "unloadModel", "compareModels", "createRerank",
}

// operationsExcept lists every operation of the document but those in ops.
func operationsExcept(doc *openapi3.T, ops ...string) []string {
	var out []string
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if !slices.Contains(ops, op.OperationID) {
				out = append(out, op.OperationID)
			}
		}
	}
	return out
}

// specUpstream is a small OpenAI-compatible server standing in for an
// upstream such as vLLM: GET /v1/models, POST /v1/chat/completions and
// /v1/completions (streamed or not, with usage) and POST /v1/rerank. The
// model a request names picks a misbehaviour: "rate-limited" answers 429
// with Retry-After: 7, "broken" answers 500, "slow" waits 2 s before
// answering. It records the Authorization headers and bodies it saw.
type specUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	auth   []string
	bodies []map[string]any
}

func newSpecUpstream(t *testing.T) *specUpstream {
	u := &specUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

// base is the upstream's OpenAI base URL.
func (u *specUpstream) base() string { return u.URL + "/v1" }

// seen returns the Authorization headers and bodies received so far.
func (u *specUpstream) seen() ([]string, []map[string]any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.auth), slices.Clone(u.bodies)
}

func (u *specUpstream) serve(w http.ResponseWriter, r *http.Request) {
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		writeJSON(200, map[string]any{"object": "list", "data": []any{map[string]any{"id": "m", "object": "model"}}})
		return
	}
	var body map[string]any
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		writeJSON(404, map[string]any{"error": map[string]any{"message": "no route", "type": "invalid_request_error"}})
		return
	}
	u.mu.Lock()
	u.auth = append(u.auth, r.Header.Get("Authorization"))
	u.bodies = append(u.bodies, body)
	u.mu.Unlock()
	switch body["model"] {
	case "rate-limited":
		w.Header().Set("Retry-After", "7")
		writeJSON(429, map[string]any{"error": map[string]any{"message": "Rate limit reached", "type": "rate_limit_error"}})
		return
	case "broken":
		writeJSON(500, map[string]any{"error": map[string]any{"message": "CUDA out of memory", "type": "server_error"}})
		return
	case "slow":
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
			return
		}
	}
	usage := map[string]any{"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11, "prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	switch r.URL.Path {
	case "/v1/rerank":
		docs, _ := body["documents"].([]any)
		var results []any
		for i := len(docs) - 1; i >= 0; i-- { // the last document ranks first
			results = append(results, map[string]any{"index": i, "relevance_score": float64(i+1) / float64(len(docs))})
		}
		if n, ok := body["top_n"].(float64); ok && int(n) < len(results) {
			results = results[:int(n)]
		}
		writeJSON(200, map[string]any{"id": "rerank-1", "results": results, "usage": map[string]any{"total_tokens": 21}})
	case "/v1/chat/completions", "/v1/completions":
		chat := r.URL.Path == "/v1/chat/completions"
		choice := func(text string, finish any) map[string]any {
			if !chat {
				return map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}
			}
			return map[string]any{"index": 0, "delta": map[string]any{"content": text}, "logprobs": nil, "finish_reason": finish}
		}
		if stream, _ := body["stream"].(bool); stream {
			w.Header().Set("Content-Type", "text/event-stream")
			send := func(v any) {
				b, _ := json.Marshal(v)
				fmt.Fprintf(w, "data: %s\n\n", b)
				w.(http.Flusher).Flush()
			}
			object, id := "chat.completion.chunk", "chatcmpl-x"
			if !chat {
				object, id = "text_completion", "cmpl-x"
			}
			for _, c := range []map[string]any{choice("Hello", nil), choice(" there", nil), choice("", "stop")} {
				send(map[string]any{"id": id, "object": object, "created": 1, "model": body["model"], "system_fingerprint": "fp_up", "choices": []any{c}})
			}
			if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true {
				send(map[string]any{"id": id, "object": object, "created": 1, "model": body["model"], "system_fingerprint": "fp_up", "choices": []any{}, "usage": usage})
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		// An upstream answers in OpenAI's shapes (vLLM, llama-server and
		// Ollama do), and the gateway relays them as they are.
		c := map[string]any{"index": 0, "text": "Hello there", "logprobs": nil, "finish_reason": "stop"}
		object, id := "text_completion", "cmpl-x"
		if chat {
			c = map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "Hello there", "refusal": nil}, "logprobs": nil, "finish_reason": "stop"}
			object, id = "chat.completion", "chatcmpl-x"
		}
		writeJSON(200, map[string]any{"id": id, "object": object, "created": 1, "model": body["model"], "system_fingerprint": "fp_up", "choices": []any{c}, "usage": usage})
	default:
		writeJSON(404, map[string]any{"error": map[string]any{"message": "no route " + r.URL.Path, "type": "invalid_request_error"}})
	}
}

// TestOpenAPIModelCatalogResponsesMatch checks the model catalog live
// against the document: creating, changing, loading, unloading and
// deleting models, upstream models (behind specUpstream) with their
// errors, deprecation headers and retirement, comparison and reranking.
func TestOpenAPIModelCatalogResponsesMatch(t *testing.T) {
	doc := loadSpec(t)
	up, up2 := newSpecUpstream(t), newSpecUpstream(t)
	store := tinyStore(t, "tiny", "spare")
	side := filepath.Join(t.TempDir(), "side.gguf")
	if err := testmodel.Write(side, testmodel.Options{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	e := newEnvSpecs(t, store, engine.Config{}, []catalog.Spec{{ID: "configured", BaseURL: up.base(), Aliases: []string{"default"}}})
	c := newSpecChecker(t, doc, e)
	msgs := []map[string]any{{"role": "user", "content": "hello"}}

	t.Run("create", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/models/up", map[string]any{
			"base_url": up.base(), "replicas": []string{up2.base()}, "upstream_model": "m", "api_key": "sk-upstream-secret",
			"capabilities": []string{"chat", "completions", "rerank"}, "family": "llama", "context_length": 4096,
			"aliases": []string{"fast"}, "limits": map[string]any{"max_output_tokens": 64},
			"timeouts":              map[string]any{"connect": "2s", "first_byte": "5s", "idle": "5s", "total": 60},
			"health_check_interval": "off",
		})
		expectStatus(t, x, 201)
		if bytes.Contains(x.body, []byte("sk-upstream-secret")) {
			t.Fatalf("the upstream api_key is shown: %s", x.body)
		}
		m := x.json(t)
		if m["backend"] != "upstream" || m["source"] != "api" || m["upstream"].(map[string]any)["api_key_set"] != true || len(m["upstream"].(map[string]any)["replicas"].([]any)) != 2 {
			t.Fatalf("created model: %v", m)
		}
		x = c.call("POST", "/v1/models/side", map[string]any{"id": "side", "path": side, "aliases": []string{"sidekick"}})
		expectStatus(t, x, 201)
		if m := x.json(t); m["backend"] != "local" || m["family"] == "" || m["context_length"].(float64) == 0 {
			t.Fatalf("a local model from a path: %v", m)
		}
		for id, spec := range map[string]map[string]any{
			"limited": {"base_url": up.base(), "upstream_model": "rate-limited", "health_check_interval": "off"},
			"erring":  {"base_url": up.base(), "upstream_model": "broken", "health_check_interval": "off"},
			"slow":    {"base_url": up.base(), "upstream_model": "slow", "health_check_interval": "off", "timeouts": map[string]any{"first_byte": "300ms"}},
			"down":    {"base_url": down, "health_check_interval": "off"},
		} {
			expectStatus(t, c.call("POST", "/v1/models/"+id, spec), 201)
		}
		expectError(t, c.call("POST", "/v1/models/up", map[string]any{"base_url": up.base()}), 409, "conflict")
		expectError(t, c.call("POST", "/v1/models/tiny", map[string]any{"aliases": []string{"x"}}), 409, "conflict")
		expectError(t, c.call("POST", "/v1/models/other", map[string]any{"base_url": up.base(), "aliases": []string{"fast"}}), 409, "conflict")
		e := expectError(t, c.callRaw("POST", "/v1/models/keyed", []byte(`{"base_url": "http://h/v1", "api_key_env": "KEY"}`)), 400, "invalid_request_error")
		if e["param"] != "api_key_env" {
			t.Fatalf("param %v, want api_key_env", e["param"])
		}
		e = expectError(t, c.callRaw("POST", "/v1/models/typo", []byte(`{"base_url": "http://h/v1", "replica": ["http://h2/v1"]}`)), 400, "invalid_request_error")
		if e["param"] != "replica" {
			t.Fatalf("param %v, want replica", e["param"])
		}
		e = expectError(t, c.call("POST", "/v1/models/ftp", map[string]any{"base_url": "ftp://h/v1"}), 400, "invalid_request_error")
		if e["param"] != "base_url" {
			t.Fatalf("param %v, want base_url", e["param"])
		}
		expectError(t, c.callRaw("POST", "/v1/models/bad", []byte(`{"limits": {"max_output_tokens": "many"}}`)), 400, "invalid_request_error")
		expectError(t, c.callRaw("POST", "/v1/models/bad", []byte(`{"base_url": `)), 400, "invalid_json")
	})

	t.Run("retrieve", func(t *testing.T) {
		c.t = t
		x := c.call("GET", "/v1/models", nil)
		expectStatus(t, x, 200)
		var ids []string
		for _, m := range x.json(t)["data"].([]any) {
			ids = append(ids, m.(map[string]any)["id"].(string))
		}
		if want := []string{"configured", "down", "erring", "limited", "side", "slow", "spare", "tiny", "up"}; !slices.Equal(ids, want) {
			t.Fatalf("catalog %v, want %v", ids, want)
		}
		x = c.call("GET", "/v1/models/fast", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["id"] != "up" || m["source"] != "api" {
			t.Fatalf("GET by alias: %v", m)
		}
		x = c.call("GET", "/v1/models/default", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["id"] != "configured" || m["source"] != "config" || m["created"] != 0.0 {
			t.Fatalf("a configured model: %v", m)
		}
	})

	t.Run("upstream inference", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "fast", "messages": msgs, "max_tokens": 8})
		expectStatus(t, x, 200)
		if m := x.json(t); m["model"] != "up" || m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] != "Hello there" {
			t.Fatalf("chat through the upstream: %v", m)
		}
		x = c.call("POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": msgs, "stream": true, "stream_options": map[string]any{"include_usage": true}})
		expectStatus(t, x, 200)
		expectStatus(t, c.call("POST", "/v1/completions", map[string]any{"model": "up", "prompt": "Once", "max_tokens": 4}), 200)
		expectStatus(t, c.call("POST", "/v1/completions", map[string]any{"model": "up", "prompt": "Once", "stream": true}), 200)
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": msgs, "max_tokens": 65}), 400, "invalid_request_error")
		expectError(t, c.call("POST", "/v1/tokenize", map[string]any{"model": "up", "input": "hi"}), 400, "invalid_request_error")
		auths, bodies := up.seen()
		auths2, bodies2 := up2.seen()
		auths, bodies = append(auths, auths2...), append(bodies, bodies2...)
		if len(auths2) == 0 || len(auths) == len(auths2) {
			t.Errorf("requests were not spread over both replicas: %d and %d", len(auths)-len(auths2), len(auths2))
		}
		for i, a := range auths {
			if a != "Bearer sk-upstream-secret" || bodies[i]["model"] != "m" {
				t.Fatalf("upstream request %d: Authorization %q, model %v", i, a, bodies[i]["model"])
			}
		}
	})

	t.Run("upstream errors", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/chat/completions", map[string]any{"model": "limited", "messages": msgs})
		expectError(t, x, 429, "rate_limit_exceeded")
		if ra := x.resp.Header.Get("Retry-After"); ra != "7" {
			t.Fatalf("Retry-After %q, want the upstream's 7", ra)
		}
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "erring", "messages": msgs}), 502, "upstream_error")
		expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "slow", "prompt": "x"}), 504, "upstream_timeout")
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "down", "messages": msgs}), 503, "upstream_unavailable")
	})

	t.Run("rerank", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/rerank", map[string]any{"model": "up", "query": "capital of France", "documents": []any{"Berlin", map[string]any{"text": "Madrid"}, "Paris"}, "top_n": 2})
		expectStatus(t, x, 200)
		res := x.json(t)["results"].([]any)
		if len(res) != 2 || res[0].(map[string]any)["index"] != 2.0 || res[0].(map[string]any)["document"].(map[string]any)["text"] != "Paris" {
			t.Fatalf("rerank results %v", res)
		}
		x = c.call("POST", "/v1/rerank", map[string]any{"model": "up", "query": "q", "documents": []string{"a", "b"}, "return_documents": false})
		expectStatus(t, x, 200)
		if r0 := x.json(t)["results"].([]any)[0].(map[string]any); r0["document"] != nil {
			t.Fatalf("return_documents false: %v", r0)
		}
		// A local chat model reranks by query-likelihood; an upstream without the
		// rerank capability is refused.
		x = c.call("POST", "/v1/rerank", map[string]any{"model": "tiny", "query": "q", "documents": []string{"a", "b"}})
		expectStatus(t, x, 200)
		if res := x.json(t)["results"].([]any); len(res) != 2 {
			t.Fatalf("local rerank results %v", res)
		}
		expectError(t, c.call("POST", "/v1/rerank", map[string]any{"model": "configured", "query": "q", "documents": []string{"a"}}), 400, "invalid_request_error")
		expectError(t, c.call("POST", "/v1/rerank", map[string]any{"model": "nope", "query": "q", "documents": []string{"a"}}), 404, "model_not_found")
		expectError(t, c.callRaw("POST", "/v1/rerank", []byte(`{"model": "up", "query": "q", "documents": []}`)), 400, "invalid_request_error")
	})

	t.Run("compare", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/models/compare", map[string]any{"models": []string{"tiny", "fast", "nope"}, "messages": msgs, "max_tokens": 4, "temperature": 0})
		expectStatus(t, x, 200)
		res := x.json(t)["results"].([]any)
		if len(res) != 3 {
			t.Fatalf("results %v", res)
		}
		for i, want := range []struct{ model, status string }{{"tiny", "succeeded"}, {"up", "succeeded"}, {"nope", "failed"}} {
			r := res[i].(map[string]any)
			if r["model"] != want.model || r["status"] != want.status {
				t.Fatalf("result %d: %v, want %s %s", i, r, want.model, want.status)
			}
		}
		if r := res[2].(map[string]any); r["error"].(map[string]any)["error"].(map[string]any)["code"] != "model_not_found" {
			t.Fatalf("unknown model's result: %v", r)
		}
		if r := res[1].(map[string]any); r["output"].(map[string]any)["content"] != "Hello there" || r["ttft_ms"] == nil {
			t.Fatalf("upstream model's result: %v", r)
		}
		expectError(t, c.callRaw("POST", "/v1/models/compare", []byte(`{"models": ["tiny"], "messages": [{"role": "user", "content": "hi"}]}`)), 400, "invalid_request_error")
		expectError(t, c.callRaw("POST", "/v1/models/compare", []byte(`{"models": ["tiny", "up"], "messages": [{"role": "user", "content": "hi"}], "stream": true}`)), 400, "invalid_request_error")
		expectError(t, c.callRaw("POST", "/v1/models/compare", []byte(`{"model": "tiny", "models": ["tiny", "up"], "messages": [{"role": "user", "content": "hi"}]}`)), 400, "invalid_request_error")
	})

	t.Run("update", func(t *testing.T) {
		c.t = t
		x := c.call("PATCH", "/v1/models/tiny", map[string]any{"aliases": []string{"small"}, "limits": map[string]any{"max_output_tokens": 4}})
		expectStatus(t, x, 200)
		if m := x.json(t); m["source"] != "api" || m["limits"].(map[string]any)["max_output_tokens"] != 4.0 || m["aliases"].([]any)[0] != "small" {
			t.Fatalf("patched model: %v", m)
		}
		e := expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "small", "messages": msgs, "max_tokens": 8}), 400, "invalid_request_error")
		if e["param"] != "max_tokens" {
			t.Fatalf("param %v, want max_tokens", e["param"])
		}
		x = c.call("PATCH", "/v1/models/tiny", map[string]any{"limits": nil})
		expectStatus(t, x, 200)
		if m := x.json(t); m["limits"].(map[string]any)["max_output_tokens"] != nil || m["aliases"].([]any)[0] != "small" {
			t.Fatalf("null did not clear only limits: %v", m)
		}
		expectError(t, c.call("PATCH", "/v1/models/configured", map[string]any{"aliases": []string{"x"}}), 409, "conflict")
		expectError(t, c.call("PATCH", "/v1/models/nope", map[string]any{"aliases": []string{"x"}}), 404, "model_not_found")
		expectError(t, c.callRaw("PATCH", "/v1/models/tiny", []byte(`{"limits": "none"}`)), 400, "invalid_request_error")
		expectError(t, c.call("PATCH", "/v1/models/tiny", map[string]any{"id": "renamed"}), 400, "invalid_request_error")
	})

	t.Run("deprecation", func(t *testing.T) {
		c.t = t
		sunset := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		x := c.call("PATCH", "/v1/models/up", map[string]any{"deprecation": map[string]any{"sunset": sunset.Format(time.RFC3339), "replacement": "tiny"}})
		expectStatus(t, x, 200)
		d := x.json(t)["deprecation"].(map[string]any)
		if d["deprecated_at"] == nil || d["replacement"] != "tiny" {
			t.Fatalf("deprecation %v", d)
		}
		x = c.call("POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": msgs})
		expectStatus(t, x, 200)
		h := x.resp.Header
		if !strings.HasPrefix(h.Get("Deprecation"), "@") || h.Get("Sunset") != sunset.Format(http.TimeFormat) || h.Get("Link") != `</v1/models/tiny>; rel="successor-version"` {
			t.Fatalf("deprecation headers: Deprecation %q, Sunset %q, Link %q", h.Get("Deprecation"), h.Get("Sunset"), h.Get("Link"))
		}
		x = c.call("POST", "/v1/rerank", map[string]any{"model": "up", "query": "q", "documents": []string{"a"}})
		expectStatus(t, x, 200)
		if x.resp.Header.Get("Deprecation") == "" {
			t.Fatal("rerank on a deprecated model has no Deprecation header")
		}
		past := time.Now().Add(-time.Hour).UTC()
		x = c.call("PATCH", "/v1/models/up", map[string]any{"deprecation": map[string]any{"deprecated_at": past.Add(-time.Hour).Format(time.RFC3339), "sunset": past.Format(time.RFC3339), "replacement": "tiny"}})
		expectStatus(t, x, 200)
		expectError(t, c.call("POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": msgs}), 410, "model_retired")
		expectError(t, c.call("POST", "/v1/completions", map[string]any{"model": "fast", "prompt": "x"}), 410, "model_retired")
		expectError(t, c.call("POST", "/v1/rerank", map[string]any{"model": "up", "query": "q", "documents": []string{"a"}}), 410, "model_retired")
		x = c.call("POST", "/v1/models/compare", map[string]any{"models": []string{"up", "configured"}, "messages": msgs})
		expectStatus(t, x, 200)
		if r := x.json(t)["results"].([]any)[0].(map[string]any); r["status"] != "failed" || r["error"].(map[string]any)["error"].(map[string]any)["code"] != "model_retired" {
			t.Fatalf("a retired model in a comparison: %v", r)
		}
		expectStatus(t, c.call("PATCH", "/v1/models/up", map[string]any{"deprecation": nil}), 200)
		x = c.call("POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": msgs})
		expectStatus(t, x, 200)
		if x.resp.Header.Get("Deprecation") != "" {
			t.Fatal("an undeprecated model still sends Deprecation")
		}
	})

	t.Run("load and unload", func(t *testing.T) {
		c.t = t
		x := c.call("POST", "/v1/models/small/load", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["id"] != "tiny" || m["status"] != "ready" {
			t.Fatalf("loaded: %v", m)
		}
		x = c.call("POST", "/v1/models/tiny/unload", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["status"] != "available" {
			t.Fatalf("unloaded: %v", m)
		}
		e.waitEvent(events.ModelUnloaded, "tiny", 5*time.Second)
		x = c.call("POST", "/v1/models/up/load", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["status"] != "ready" {
			t.Fatalf("an upstream model after a health check: %v", m)
		}
		x = c.call("POST", "/v1/models/down/load", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["status"] != "failed" || m["status_reason"] == "" {
			t.Fatalf("an unreachable upstream model after a health check: %v", m)
		}
		x = c.call("POST", "/v1/models/up/unload", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["status"] != "available" {
			t.Fatalf("an unloaded upstream model: %v", m)
		}
		e.waitEvent(events.ModelUnloaded, "up", 5*time.Second)
		expectError(t, c.call("POST", "/v1/models/nope/load", nil), 404, "model_not_found")
		expectError(t, c.call("POST", "/v1/models/nope/unload", nil), 404, "model_not_found")
	})

	t.Run("delete", func(t *testing.T) {
		c.t = t
		x := c.call("DELETE", "/v1/models/up", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["id"] != "up" || m["object"] != "model" || m["deleted"] != true {
			t.Fatalf("delete: %v", m)
		}
		expectError(t, c.call("GET", "/v1/models/up", nil), 404, "model_not_found")
		expectError(t, c.call("GET", "/v1/models/fast", nil), 404, "model_not_found")
		// An installed model with stored settings loses them, not its files.
		expectStatus(t, c.call("DELETE", "/v1/models/tiny", nil), 200)
		x = c.call("GET", "/v1/models/tiny", nil)
		expectStatus(t, x, 200)
		if m := x.json(t); m["source"] != "installed" || len(m["aliases"].([]any)) != 0 {
			t.Fatalf("tiny after deleting its settings: %v", m)
		}
		// An installed model without settings is deleted with its files.
		path := store.Path("spare")
		expectStatus(t, c.call("DELETE", "/v1/models/spare", nil), 200)
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("spare's file after DELETE: %v", err)
		}
		expectError(t, c.call("GET", "/v1/models/spare", nil), 404, "model_not_found")
		expectError(t, c.call("DELETE", "/v1/models/configured", nil), 409, "conflict")
		expectError(t, c.call("DELETE", "/v1/models/nope", nil), 404, "model_not_found")
	})

	t.Run("scopes", func(t *testing.T) {
		c.t = t
		key := c.key
		defer func() { c.key = key }()
		c.key = specScopedKey(t, e, "inference", "models:read")
		expectError(t, c.call("POST", "/v1/models/x", map[string]any{"base_url": up.base()}), 403, "permission_denied")
		expectError(t, c.call("PATCH", "/v1/models/tiny", map[string]any{"aliases": []string{"x"}}), 403, "permission_denied")
		expectError(t, c.call("DELETE", "/v1/models/tiny", nil), 403, "permission_denied")
		expectError(t, c.call("POST", "/v1/models/tiny/load", nil), 403, "permission_denied")
		expectError(t, c.call("POST", "/v1/models/tiny/unload", nil), 403, "permission_denied")
		c.key = specScopedKey(t, e, "models:read", "models:write")
		expectError(t, c.call("POST", "/v1/models/compare", map[string]any{"models": []string{"tiny", "side"}, "messages": msgs}), 403, "permission_denied")
		expectError(t, c.call("POST", "/v1/rerank", map[string]any{"model": "tiny", "query": "q", "documents": []string{"a"}}), 403, "permission_denied")
	})

	c.t = t
	if missing := c.uncovered(operationsExcept(doc, catalogOperations...)...); len(missing) > 0 {
		t.Errorf("catalog operations no check exercised: %v", missing)
	}
}

// specScopedKey creates an API key with only the given scopes.
func specScopedKey(t *testing.T, e *env, scopes ...string) string {
	t.Helper()
	resp := e.request(e.key, "POST", "/v1/keys", map[string]any{"name": "scoped", "scopes": scopes})
	defer resp.Body.Close()
	var k struct {
		Key string `json:"key"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&k); err != nil || resp.StatusCode != 201 || k.Key == "" {
		t.Fatalf("creating a key with scopes %v: status %d, %v", scopes, resp.StatusCode, err)
	}
	return k.Key
}
