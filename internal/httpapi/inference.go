package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	var req openai.ChatRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	if _, err := s.model(req.Model, "chat"); err != nil {
		return err
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	stream, err := s.Backend.Complete(ctx, native)
	if err != nil {
		return err
	}
	defer stream.Close()
	if !req.Stream {
		out, err := openai.CollectChat(stream, req.Model, native.Logprobs)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, out)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	cs := openai.NewChatStream(req.Model, includeUsage, native.Logprobs)
	// Wait for the first event before committing to a 200, so that errors
	// the runner reports at once (bad grammar, overload) get a real status.
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	out := startSSE(w)
	if err := out.send(cs.First()); err != nil {
		return err
	}
	for ev := first; ; {
		for _, c := range cs.Chunks(ev) {
			if err := out.send(c); err != nil {
				return err // client went away; closing the stream cancels generation
			}
		}
		if ev.Done {
			return out.done()
		}
		ev, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			return out.done()
		}
		if err != nil {
			return out.fail(err)
		}
	}
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	var req openai.CompletionRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	if _, err := s.model(req.Model, "completions"); err != nil {
		return err
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	stream, err := s.Backend.Complete(ctx, native)
	if err != nil {
		return err
	}
	defer stream.Close()
	if !req.Stream {
		out, err := openai.CollectText(stream, req.Model, native.Logprobs)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, out)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	ts := openai.NewTextStream(req.Model, includeUsage, native.Logprobs)
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	out := startSSE(w)
	for ev := first; ; {
		for _, c := range ts.Chunks(ev) {
			if err := out.send(c); err != nil {
				return err
			}
		}
		if ev.Done {
			return out.done()
		}
		ev, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			return out.done()
		}
		if err != nil {
			return out.fail(err)
		}
	}
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	var req openai.EmbeddingRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	if _, err := s.model(req.Model, "embeddings"); err != nil {
		return err
	}
	res, err := s.Backend.Embed(r.Context(), native)
	if err != nil {
		return err
	}
	out, err := req.Response(res)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

type tokenizeRequest struct {
	Model      string `json:"model"`
	Input      string `json:"input"`
	AddSpecial *bool  `json:"add_special"`
}

type tokenizeResponse struct {
	Tokens []int32 `json:"tokens"`
	Count  int     `json:"count"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) error {
	var req tokenizeRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	if req.Model == "" {
		return apierr.Invalid("model", "'model' is required")
	}
	if _, err := s.model(req.Model, ""); err != nil {
		return err
	}
	add := true
	if req.AddSpecial != nil {
		add = *req.AddSpecial
	}
	res, err := s.Backend.Tokenize(r.Context(), inference.TokenizeRequest{Model: req.Model, Content: req.Input, AddSpecial: add})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, tokenizeResponse{Tokens: res.Tokens, Count: len(res.Tokens)})
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) error {
	var req detokenizeRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	if req.Model == "" {
		return apierr.Invalid("model", "'model' is required")
	}
	if _, err := s.model(req.Model, ""); err != nil {
		return err
	}
	res, err := s.Backend.Detokenize(r.Context(), inference.DetokenizeRequest{Model: req.Model, Tokens: req.Tokens})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"text": res.Content})
}
