package runner

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

// Config configures a runner process.
type Config struct {
	ModelPath string
	Addr      string // listen address, default 127.0.0.1:0
	Token     string // bearer token every request must carry; empty for none
	Engine    EngineConfig
	// Ready, when set, receives the listen address once the socket is open
	// (before the model has loaded).
	Ready func(addr string)
	Log   *slog.Logger
}

// Server serves one model over Sovereign's runner protocol.
type Server struct {
	cfg      Config
	model    *llamacpp.Model
	engine   *Engine
	embedder *Embedder
	ready    atomic.Bool
	template string
	// chat renders chat requests with the template (nil without one, or
	// when it failed to load: chatErr says why).
	chat    *llamacpp.Chat
	chatErr error
	// yes and no are the answer tokens of the chat-logits rerank method.
	yes, no []llamacpp.Token
}

// Run listens, loads the model, and serves until ctx ends. It returns an
// error when the model cannot be loaded.
func Run(ctx context.Context, cfg Config) error {
	cfg.Engine.logLevel()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	s := &Server{cfg: cfg}
	hs := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	if err := s.load(); err != nil {
		return err
	}
	defer s.close()
	s.ready.Store(true)
	cfg.Log.Info("runner ready", "model", cfg.ModelPath, "addr", ln.Addr().String())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

func (s *Server) load() error {
	if err := runnerproto.CheckModelFile(s.cfg.ModelPath); err != nil {
		return err
	}
	m, err := llamacpp.LoadModel(s.cfg.ModelPath, llamacpp.ModelParams{UseMmap: true})
	if err != nil {
		return err
	}
	if cpu, err := llamacpp.Init(); err == nil {
		s.cfg.Log.Info("CPU kernels", "variant", cpu.String(), "features", llamacpp.CPUFeatures())
	}
	s.model = m
	if !isEmbeddingModel(m) {
		s.engine, err = NewEngine(m, s.cfg.Engine, s.cfg.Log)
		s.template = m.ChatTemplate()
		if s.template != "" {
			// A template that llama.cpp's Jinja engine cannot even parse
			// leaves the model without chat (a 400 on chat requests),
			// rather than failing the load: /v1/completions still works.
			if s.chat, err = llamacpp.NewChat(m); err != nil {
				s.cfg.Log.Warn("the model's chat template does not load; chat requests will be refused", "model", s.cfg.ModelPath, "error", err)
				s.chatErr, err = err, nil
			}
		}
		s.yes, s.no = answerTokens(m, yesWords), answerTokens(m, noWords)
	} else {
		s.embedder, err = NewEmbedder(m, s.cfg.Engine.Threads)
	}
	if err != nil {
		m.Free()
		return err
	}
	return nil
}

// encoderArchs are architectures llama.cpp runs as embedding encoders.
var encoderArchs = map[string]bool{"bert": true, "nomic-bert": true, "nomic-bert-moe": true, "jina-bert-v2": true, "jina-bert-v3": true, "neo-bert": true, "modern-bert": true, "t5encoder": true}

// isEmbeddingModel reports whether m produces pooled embeddings rather than
// text: an encoder architecture, or a GGUF declaring a pooling type.
func isEmbeddingModel(m *llamacpp.Model) bool {
	arch, _ := m.Meta("general.architecture")
	if encoderArchs[arch] {
		return true
	}
	p, ok := m.Meta(arch + ".pooling_type")
	return ok && p != "0"
}

func (s *Server) close() {
	if s.engine != nil {
		s.engine.Close()
	}
	if s.embedder != nil {
		s.embedder.Close()
	}
	if s.chat != nil {
		s.chat.Free()
	}
	s.model.Free()
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("POST /completion", s.ready2(s.completion))
	mux.HandleFunc("POST /embedding", s.ready2(s.embedding))
	mux.HandleFunc("POST /rerank", s.ready2(s.rerank))
	mux.HandleFunc("POST /tokenize", s.ready2(s.tokenize))
	mux.HandleFunc("POST /detokenize", s.ready2(s.detokenize))
	mux.HandleFunc("POST /apply-template", s.ready2(s.applyTemplate))
	return s.auth(mux)
}

func (s *Server) auth(next http.Handler) http.Handler {
	want := []byte("Bearer " + s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeErr(w, http.StatusUnauthorized, runnerproto.Error{Code: "unauthorized", Message: "bad runner token"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) ready2(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeErr(w, http.StatusServiceUnavailable, runnerproto.Error{Code: runnerproto.CodeLoading, Message: "model is loading"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<20)
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, runnerproto.Health{Status: "loading"})
		return
	}
	h := runnerproto.Health{Status: "ok", NVocab: s.model.NVocab(), NEmbd: s.model.NEmbd(), CtxTrain: s.model.NCtxTrain()}
	if s.engine != nil {
		h.Kind = runnerproto.KindGenerate
		h.Slots, h.Active, h.Waiting = s.engine.Stats()
		h.CtxPerSlot = s.engine.CtxPerSlot()
		h.ChatTemplate = s.template != ""
	} else {
		h.Kind = runnerproto.KindEmbed
	}
	h.RerankMethod = s.rerankMethod()
	writeJSON(w, http.StatusOK, h)
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return apierr.Invalid("", "invalid JSON body: "+err.Error())
	}
	return nil
}

func (s *Server) completion(w http.ResponseWriter, r *http.Request) {
	var req inference.CompletionRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	if s.engine == nil {
		fail(w, fmt.Errorf("%w: it is an embedding model and does not generate text", inference.ErrUnsupported))
		return
	}
	prompt, tools, err := s.promptTokens(&req)
	if err != nil {
		fail(w, err)
		return
	}
	q, err := s.engine.Submit(r.Context(), req, prompt)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	for {
		evs, err := q.next(r.Context())
		if err != nil {
			return // client gone; the engine frees the slot at its next step
		}
		if tools != nil {
			// A request with tools: the output is read as content and
			// tool calls (tools.go).
			var out []inference.Event
			for _, ev := range evs {
				out = append(out, tools.read(ev)...)
			}
			evs = out
		}
		for _, ev := range evs {
			if enc.Encode(ev) != nil {
				return
			}
			if ev.Done || ev.Error != "" {
				if fl != nil {
					fl.Flush()
				}
				return
			}
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// promptTokens builds the prompt from messages (with the chat template, and
// the tools), text, or tokens. For messages it also sets what the format
// adds to req (stop sequences, the tool-call grammar) and returns the
// reader of tool calls, if any.
func (s *Server) promptTokens(req *inference.CompletionRequest) ([]llamacpp.Token, *toolReader, error) {
	switch {
	case len(req.Tokens) > 0:
		nv := int32(s.model.NVocab())
		for _, t := range req.Tokens {
			if t < 0 || t >= nv {
				return nil, nil, apierr.Invalid("prompt", fmt.Sprintf("token %d is outside the vocabulary (0..%d)", t, nv-1))
			}
		}
		if req.Suffix != "" {
			toks, err := s.fimPrompt(req.Tokens, req.Suffix)
			return toks, nil, err
		}
		return req.Tokens, nil, nil
	case req.Suffix != "" && len(req.Messages) == 0:
		prefix, err := s.model.Tokenize(req.Prompt, false, false)
		if err != nil {
			return nil, nil, err
		}
		toks, err := s.fimPrompt(prefix, req.Suffix)
		return toks, nil, err
	case len(req.Messages) > 0:
		f, err := s.formatChat(req)
		if err != nil {
			return nil, nil, err
		}
		req.Stop = append(req.Stop, f.stops...)
		if f.trimLeft {
			req.SetTrimLeft()
		}
		if f.grammar != "" {
			if req.Grammar != "" {
				return nil, nil, apierr.Invalid("tools", "tools cannot be combined with a JSON response_format on this model")
			}
			req.Grammar, req.GrammarTriggers, req.GrammarPrefill = f.grammar, f.triggers, f.prefill
		}
		for _, p := range f.preserved {
			if toks, err := s.model.Tokenize(p, false, true); err == nil && len(toks) == 1 {
				req.PreservedTokens = append(req.PreservedTokens, int32(toks[0]))
			}
		}
		toks, err := s.model.Tokenize(f.text, true, true)
		return toks, f.tools, err
	default:
		toks, err := s.model.Tokenize(req.Prompt, true, true)
		return toks, nil, err
	}
}

// fimPrompt is the fill-in-the-middle prompt for the text between prefix
// and suffix in the single-file prefix-suffix-middle form (llama-server's
// /infill without the repository header it adds for extra files):
// [BOS] fim_pre prefix fim_suf suffix fim_mid; the model then writes the
// middle and ends it with an end-of-generation token. Suffix text is
// tokenized as plain text (code may well contain "<|…|>"). A model
// without FIM tokens cannot do it: that is the caller's error.
func (s *Server) fimPrompt(prefix []llamacpp.Token, suffix string) ([]llamacpp.Token, error) {
	pre, suf, mid, ok := s.model.FIM()
	if !ok {
		return nil, apierr.Invalid("suffix", "this model cannot fill in the middle: its vocabulary has no FIM tokens (fim_pre, fim_suf, fim_mid); send the prompt without 'suffix', or use a code model that has them (such as Qwen2.5-Coder)")
	}
	sufToks, err := s.model.Tokenize(suffix, false, false)
	if err != nil {
		return nil, err
	}
	out := make([]llamacpp.Token, 0, len(prefix)+len(sufToks)+4)
	if s.model.AddBOS() {
		out = append(out, s.model.BOS())
	}
	out = append(out, pre)
	out = append(out, prefix...)
	out = append(out, suf)
	out = append(out, sufToks...)
	return append(out, mid), nil
}

// transcriptStops end a turn in the plain transcript format.
var transcriptStops = []string{"\nUser:", "\nSystem:"}

// format renders chat messages as a prompt and the stop sequences that end
// the answer. A model with a chat template (tokenizer.chat_template) is
// rendered by llama.cpp's Jinja engine (its common/chat code, the one
// llama-server uses), so any template that engine runs works, not only the
// ones llama_chat_apply_template recognises. A GGUF without one is a base
// model: the messages become a plain transcript ("User: …\nAssistant:")
// that base models continue naturally, and the returned stop sequences end
// generation when the model starts the next turn.
func (s *Server) format(msgs []inference.Message) (string, []string, error) {
	f, err := s.formatChat(&inference.CompletionRequest{Messages: msgs})
	return f.text, f.stops, err
}

func transcript(msgs []inference.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.WriteString(m.Content)
			b.WriteString("\n\n")
		case "assistant":
			b.WriteString("Assistant: " + m.Content + "\n")
		case "tool":
			b.WriteString("Tool: " + m.Content + "\n")
		default:
			b.WriteString("User: " + m.Content + "\n")
		}
	}
	b.WriteString("Assistant:")
	return b.String()
}

func (s *Server) embedding(w http.ResponseWriter, r *http.Request) {
	var req inference.EmbeddingRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	if s.embedder == nil {
		fail(w, fmt.Errorf("%w: it generates text and does not produce embeddings", inference.ErrUnsupported))
		return
	}
	resp, err := s.embedder.Embed(req.Input)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) rerank(w http.ResponseWriter, r *http.Request) {
	var req inference.RerankRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	if err := validateRerank(req); err != nil {
		fail(w, err)
		return
	}
	var (
		resp inference.RerankResponse
		err  error
	)
	own := s.rerankMethod()
	method := req.Method
	if method == "" {
		method = own
	}
	switch {
	case own == "":
		err = fmt.Errorf("%w: it is an embedding model without rank pooling, so it cannot rerank", inference.ErrUnsupported)
	case method == runnerproto.RerankCrossEncoder && own == method:
		resp, err = s.embedder.Rerank(req.Query, req.Documents)
	case method == runnerproto.RerankQueryLikelihood && own == method:
		resp, err = s.likelihoodRerank(r.Context(), req)
	case method == runnerproto.RerankChatLogits && own == runnerproto.RerankQueryLikelihood && len(s.yes) > 0 && len(s.no) > 0:
		resp, err = s.chatRerank(r.Context(), req)
	default:
		err = apierr.Invalid("method", fmt.Sprintf("this model reranks by %s; it cannot use %q", own, method))
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // client gone
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req inference.TokenizeRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	toks, err := s.model.Tokenize(req.Content, req.AddSpecial, req.ParseSpecial)
	if err != nil {
		fail(w, apierr.Invalid("input", err.Error()))
		return
	}
	if toks == nil {
		toks = []int32{}
	}
	writeJSON(w, http.StatusOK, inference.TokenizeResponse{Tokens: toks})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req inference.DetokenizeRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	text, err := s.model.Detokenize(req.Tokens, false, false)
	if err != nil {
		fail(w, apierr.Invalid("tokens", err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, inference.DetokenizeResponse{Content: text})
}

func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var req runnerproto.TemplateRequest
	if err := decode(r, &req); err != nil {
		fail(w, err)
		return
	}
	text, stops, err := s.format(req.Messages)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, runnerproto.TemplateResponse{Prompt: text, Stop: stops})
}

func fail(w http.ResponseWriter, err error) {
	var inv *apierr.Error
	switch {
	case errors.Is(err, inference.ErrUnsupported):
		writeErr(w, http.StatusBadRequest, runnerproto.Error{Code: runnerproto.CodeUnsupported, Message: err.Error()})
	case errors.As(err, &inv) && inv.Code == apierr.InvalidRequest:
		writeErr(w, http.StatusBadRequest, runnerproto.Error{Code: runnerproto.CodeInvalid, Message: inv.Message, Param: inv.Param})
	case errors.Is(err, ErrQueueFull):
		writeErr(w, http.StatusServiceUnavailable, runnerproto.Error{Code: runnerproto.CodeOverloaded, Message: err.Error()})
	default:
		writeErr(w, http.StatusInternalServerError, runnerproto.Error{Code: runnerproto.CodeInternal, Message: err.Error()})
	}
}

func writeErr(w http.ResponseWriter, status int, e runnerproto.Error) {
	writeJSON(w, status, runnerproto.ErrorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
