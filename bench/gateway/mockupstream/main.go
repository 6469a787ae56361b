// Command mockupstream is the gateway benchmark's upstream: an
// OpenAI-compatible server that answers every chat completion at once with a
// fixed small reply, so that what a gateway in front of it adds is all that
// differs between the benchmark's paths.
//
//	go run ./bench/gateway/mockupstream -addr 127.0.0.1:18190
//
// Routes:
//
//	POST /v1/chat/completions  a fixed completion (usage included); with
//	                           "stream": true an SSE stream of 8 content
//	                           chunks, a usage chunk and "data: [DONE]",
//	                           written back to back with no delay
//	GET  /v1/models            the one model, "mock"
//
// Every reply is marshalled once at start-up; a request costs a body read
// and a write. The request body is not parsed beyond finding "stream": true.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

const (
	modelID      = "mock"
	created      = 1767225600 // 2026-01-01T00:00:00Z: fixed, so replies never change
	promptTokens = 9
)

// words are the 8 content chunks; joined they are the non-streamed reply.
var words = []string{"Hello", " from", " the", " mock", " upstream", ",", " friend", "."}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

var fixedUsage = usage{PromptTokens: promptTokens, CompletionTokens: len(words), TotalTokens: promptTokens + len(words)}

// replies holds the pre-marshalled bodies.
type replies struct {
	completion []byte // non-streamed JSON
	stream     []byte // the whole SSE stream, [DONE] included
	models     []byte
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func buildReplies() replies {
	var r replies
	text := ""
	for _, w := range words {
		text += w
	}
	r.completion = mustJSON(map[string]any{
		"id":      "chatcmpl-mock",
		"object":  "chat.completion",
		"created": created,
		"model":   modelID,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": text},
			"logprobs":      nil,
			"finish_reason": "stop",
		}},
		"usage":              fixedUsage,
		"system_fingerprint": "fp_mock",
	})

	var sse bytes.Buffer
	event := func(v any) {
		sse.WriteString("data: ")
		sse.Write(mustJSON(v))
		sse.WriteString("\n\n")
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id":                 "chatcmpl-mock",
			"object":             "chat.completion.chunk",
			"created":            created,
			"model":              modelID,
			"system_fingerprint": "fp_mock",
			"choices": []any{map[string]any{
				"index":         0,
				"delta":         delta,
				"logprobs":      nil,
				"finish_reason": finish,
			}},
		}
	}
	for i, w := range words {
		delta := map[string]any{"content": w}
		if i == 0 {
			delta["role"] = "assistant"
		}
		var finish any
		if i == len(words)-1 {
			finish = "stop"
		}
		event(chunk(delta, finish))
	}
	event(map[string]any{
		"id":                 "chatcmpl-mock",
		"object":             "chat.completion.chunk",
		"created":            created,
		"model":              modelID,
		"system_fingerprint": "fp_mock",
		"choices":            []any{},
		"usage":              fixedUsage,
	})
	sse.WriteString("data: [DONE]\n\n")
	r.stream = sse.Bytes()

	r.models = mustJSON(map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id": modelID, "object": "model", "created": created, "owned_by": "mock",
		}},
	})
	return r
}

// wantsStream reports whether a JSON body sets "stream" to true, allowing
// whitespace around the colon (Python's json.dumps writes `"stream": true`).
func wantsStream(body []byte) bool {
	key := []byte(`"stream"`)
	for {
		i := bytes.Index(body, key)
		if i < 0 {
			return false
		}
		rest := body[i+len(key):]
		j := 0
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
			j++
		}
		if j < len(rest) && rest[j] == ':' {
			j++
			for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
				j++
			}
			return bytes.HasPrefix(rest[j:], []byte("true"))
		}
		body = rest
	}
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func main() {
	addr := flag.String("addr", "127.0.0.1:18190", "listen address")
	memLimit := flag.Int64("gc-memory-limit", 512<<20, "collect garbage only when the heap reaches this many bytes (0: Go's default pacing)")
	flag.Parse()
	if *memLimit > 0 {
		// A request allocates a few KB and keeps none of it; with the
		// default pacing the tiny live heap means a collection every few
		// hundred requests, and with one P each one stalls requests for
		// up to a millisecond or two: noise in every path's tail. A rare
		// collection of a large, all-dead heap is cheap.
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(*memLimit)
	}

	r := buildReplies()
	completionLen := strconv.Itoa(len(r.completion))
	modelsLen := strconv.Itoa(len(r.models))

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, req *http.Request) {
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		_, err := buf.ReadFrom(io.LimitReader(req.Body, 1<<20))
		stream := err == nil && wantsStream(buf.Bytes())
		bufPool.Put(buf)
		if err != nil {
			http.Error(w, `{"error":{"message":"cannot read the body","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		h := w.Header()
		if stream {
			h["Content-Type"] = []string{"text/event-stream"}
			h["Cache-Control"] = []string{"no-cache"}
			w.WriteHeader(http.StatusOK)
			w.Write(r.stream)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			return
		}
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{completionLen}
		w.Write(r.completion)
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, req *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{modelsLen}
		w.Write(r.models)
	})

	srv := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
	}
	fmt.Printf("mockupstream: listening on http://%s (model %q)\n", *addr, modelID)
	log.Fatal(srv.ListenAndServe())
}
