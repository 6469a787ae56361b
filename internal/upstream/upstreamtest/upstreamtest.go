// Package upstreamtest is a mock OpenAI-compatible server for testing the
// gateway: chat and text completions (streamed or not), embeddings, rerank
// and the model list, with switchable failure modes (malformed streams,
// stalls, 429, 5xx) and a way to take it down so connections are refused.
package upstreamtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Mode is how the server answers completions.
type Mode int32

// Modes.
const (
	// OK answers properly.
	OK Mode = iota
	// Malformed streams one good chunk, then a chunk that is not JSON.
	Malformed
	// Stall streams one good chunk, then sends nothing until the client
	// gives up or the server closes.
	Stall
	// RateLimited answers 429 with Retry-After: 7.
	RateLimited
	// Unavailable answers 503.
	Unavailable
	// Fail answers 500.
	Fail
	// NoUsage answers properly but never reports usage.
	NoUsage
)

// Server is one mock replica.
type Server struct {
	*httptest.Server
	// Name appears in the answers ("reply from NAME").
	Name string
	// Requests counts completion, embedding and rerank requests.
	Requests atomic.Int64
	// LastBody is the last request body received.
	lastBody atomic.Value
	// Key, when set, is the bearer token the server requires.
	Key string

	mode   atomic.Int32
	script atomic.Pointer[Script]
	closed chan struct{}
	once   sync.Once
}

// New starts a mock replica; it is closed when the test ends.
func New(t testing.TB, name string) *Server {
	s := &Server{Name: name, closed: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Down)
	return s
}

// BaseURL is the base URL to configure (…/v1).
func (s *Server) BaseURL() string { return s.Server.URL + "/v1" }

// SetMode changes how completions are answered.
func (s *Server) SetMode(m Mode) { s.mode.Store(int32(m)) }

// Down closes the server: further connections are refused.
func (s *Server) Down() {
	s.once.Do(func() {
		close(s.closed)
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
}

// Script is an answer given verbatim: Body for a request that is not
// streamed, Events (each an SSE event's text without the blank line that
// ends it) for one that is.
type Script struct {
	Body   string
	Events []string
}

// SetScript makes the server answer every completion with sc (nil: the
// normal answers again).
func (s *Server) SetScript(sc *Script) { s.script.Store(sc) }

// LastRawBody returns the last request body received, byte for byte.
func (s *Server) LastRawBody() []byte {
	b, _ := s.lastBody.Load().([]byte)
	return b
}

// LastBody returns the last request body received.
func (s *Server) LastBody() map[string]any {
	b, _ := s.lastBody.Load().([]byte)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// Reply is the text the server answers with.
func (s *Server) Reply() string { return "reply from " + s.Name + " ok" }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		writeErr(w, 401, "Incorrect API key provided.")
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		if m := Mode(s.mode.Load()); m == Unavailable || m == Fail {
			writeErr(w, 503, "overloaded")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": "mock", "object": "model"}}})
		return
	}
	var body map[string]any
	raw, err := io.ReadAll(r.Body)
	if err != nil || !json.Valid(raw) {
		writeErr(w, 400, "bad JSON")
		return
	}
	s.lastBody.Store(raw)
	json.Unmarshal(raw, &body)
	s.Requests.Add(1)
	if sc := s.script.Load(); sc != nil {
		if stream, _ := body["stream"].(bool); stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range sc.Events {
				fmt.Fprintf(w, "%s\n\n", ev)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, sc.Body)
		return
	}
	switch Mode(s.mode.Load()) {
	case RateLimited:
		w.Header().Set("Retry-After", "7")
		writeErr(w, 429, "Rate limit reached for requests")
		return
	case Unavailable:
		writeErr(w, 503, "overloaded")
		return
	case Fail:
		writeErr(w, 500, "internal failure")
		return
	}
	switch r.URL.Path {
	case "/v1/chat/completions":
		s.complete(w, r, body, true)
	case "/v1/completions":
		s.complete(w, r, body, false)
	case "/v1/embeddings":
		s.embed(w, body)
	case "/v1/rerank":
		s.rerank(w, body)
	default:
		writeErr(w, 404, "no route "+r.URL.Path)
	}
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": nil}})
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, body map[string]any, chat bool) {
	words := strings.Fields(s.Reply())
	model, _ := body["model"].(string)
	usage := map[string]any{"prompt_tokens": 5, "completion_tokens": len(words), "total_tokens": 5 + len(words)}
	mode := Mode(s.mode.Load())
	if stream, _ := body["stream"].(bool); !stream {
		choice := map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil}
		if chat {
			choice["message"] = map[string]any{"role": "assistant", "content": s.Reply(), "refusal": nil}
		} else {
			choice["text"] = s.Reply()
		}
		out := map[string]any{"id": "cmpl-1", "object": "chat.completion", "created": 1, "model": model, "choices": []any{choice}}
		if mode != NoUsage {
			out["usage"] = usage
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	piece := func(text string, finish any) map[string]any {
		c := map[string]any{"index": 0, "finish_reason": finish}
		if chat {
			c["delta"] = map[string]any{"content": text}
		} else {
			c["text"] = text
		}
		return map[string]any{"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{c}}
	}
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		send(piece(word, nil))
		if i == 0 {
			switch mode {
			case Malformed:
				fmt.Fprint(w, "data: {\"choices\": [this is not json\n\n")
				fl.Flush()
				return
			case Stall:
				select {
				case <-r.Context().Done():
				case <-s.closed:
				case <-time.After(time.Minute):
				}
				return
			}
		}
	}
	send(piece("", "stop"))
	if opts, _ := body["stream_options"].(map[string]any); opts != nil && opts["include_usage"] == true && mode != NoUsage {
		send(map[string]any{"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

func (s *Server) embed(w http.ResponseWriter, body map[string]any) {
	var inputs []string
	switch v := body["input"].(type) {
	case string:
		inputs = []string{v}
	case []any:
		for _, x := range v {
			str, _ := x.(string)
			inputs = append(inputs, str)
		}
	}
	var data []any
	for i, in := range inputs {
		// A deterministic, unnormalised vector from the text.
		v := []float64{float64(len(in)), 1, float64(i + 1)}
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": body["model"], "usage": map[string]any{"prompt_tokens": 3 * len(inputs), "total_tokens": 3 * len(inputs)}})
}

// rerank scores documents by the share of query words they contain.
func (s *Server) rerank(w http.ResponseWriter, body map[string]any) {
	query, _ := body["query"].(string)
	docs, _ := body["documents"].([]any)
	qw := strings.Fields(strings.ToLower(query))
	type res struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	}
	var out []res
	for i, d := range docs {
		text, _ := d.(string)
		n := 0
		for _, q := range qw {
			if strings.Contains(strings.ToLower(text), q) {
				n++
			}
		}
		out = append(out, res{Index: i, Score: math.Round(float64(n)/float64(len(qw))*1000) / 1000})
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if n, ok := body["top_n"].(float64); ok && int(n) < len(out) {
		out = out[:int(n)]
	}
	json.NewEncoder(w).Encode(map[string]any{"results": out, "usage": map[string]any{"total_tokens": 10}})
}

// RefusedURL returns a base URL on which nothing listens.
func RefusedURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}
