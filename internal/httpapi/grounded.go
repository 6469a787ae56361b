package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// groundedCompletion answers POST /v1/completions with messages, citations
// or sources: it retrieves from the team's collections (or uses inline
// documents), asks the chat model to answer from the numbered sources, and
// settles the answer's [n] markers as it streams (package citation). With
// citations the response carries them, and each is recorded as a source
// link before the client gets them.
func (s *Server) groundedCompletion(w http.ResponseWriter, r *http.Request, req *openai.CompletionRequest) error {
	m, err := s.model(w, r, req.Model, "chat")
	if err != nil {
		return err
	}
	native, err := groundedNative(m, req)
	if err != nil {
		return err
	}
	cite := req.Citations.Cite()
	ctx, cancel := withTimeout(r)
	defer cancel()
	ans, gen, err := s.startAnswer(ctx, w.Header(), m, native, req.Citations, req.Sources, req.Stream)
	if err != nil {
		return err
	}
	defer gen.Close()
	stream := gen.Streams[0]
	// A prompt is answered as a text completion, messages as a chat
	// completion, so that each SDK method reads its own shape.
	textForm := req.Messages == nil
	if !req.Stream {
		resp, err := s.groundedWhole(ctx, gen, m, ans, textForm, cite)
		if err != nil {
			return err
		}
		return wire.JSON(w, http.StatusOK, resp)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	form := newStreamForm(textForm, m.ID)
	ev, err := stream.Recv()
	if err != nil {
		return err
	}
	out := wire.StartSSE(w)
	for _, c := range form.first {
		if err := out.Write(c); err != nil {
			return err
		}
	}
	var usage *inference.Usage
	for {
		if ev.Done {
			usage = ev.Usage
		}
		for _, c := range form.chunks(ev) {
			if err := out.Send(c); err != nil {
				return err // the client went away; closing the stream cancels generation
			}
		}
		if ev.Done {
			break
		}
		if ev, err = stream.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return out.Fail(err)
		}
	}
	if err := gen.End(); err != nil {
		return out.Fail(err)
	}
	if cite {
		cits, unsupported, err := ans.Finish(ctx, form.id, m.ID)
		if err != nil {
			return out.Fail(err)
		}
		gen.RedactCitations(cits, unsupported)
		if err := out.Send(form.citations(cits, unsupported)); err != nil {
			return err
		}
	}
	if includeUsage {
		if err := out.Send(form.usage(openai.NewUsage(usage))); err != nil {
			return err
		}
	}
	return out.Done()
}

// groundedNative is a completion request with sources as the native chat
// request it asks of the model m, fitted to it.
func groundedNative(m catalog.Resolved, req *openai.CompletionRequest) (inference.CompletionRequest, error) {
	if req.Choices() > 1 {
		return inference.CompletionRequest{}, apierr.Invalid("n", "n > 1 is supported on /v1/chat/completions; send one request per completion here")
	}
	chat, err := req.ChatRequest()
	if err != nil {
		return inference.CompletionRequest{}, err
	}
	native, err := chat.Native()
	if err != nil {
		return native, err
	}
	return native, generate.Fit(m, &native)
}

// startAnswer prepares the sources of an answer to the native request
// (prepareAnswer; h takes a rerank model's deprecation headers, nil: none
// wanted) and starts its generation on the model m, streamed or not, as
// the context's call. The caller closes the generation.
func (s *Ops) startAnswer(ctx context.Context, h http.Header, m catalog.Resolved, native inference.CompletionRequest, c *openai.CitationsParam, p *openai.SourcesParam, stream bool) (*answers.Answer, *generate.Generation, error) {
	ans, err := s.prepareAnswer(ctx, h, m, native, c, p)
	if err != nil {
		return nil, nil, err
	}
	native = ans.Chat
	native.Model, native.Stream = m.ID, stream
	gen, err := s.Gen.Answer(ctx, info(ctx), m, ans, native)
	return ans, gen, err
}

// groundedWhole reads a grounded answer's generation whole and renders it
// as a text or chat completion, with its citations (stored as source
// links) when cite: for a request that does not stream, and a batch line.
func (s *Ops) groundedWhole(ctx context.Context, gen *generate.Generation, m catalog.Resolved, ans *answers.Answer, textForm, cite bool) (any, error) {
	stream := gen.Streams[0]
	var resp any
	var id string
	if textForm {
		out, err := openai.CollectText(stream, m.ID, false)
		if err != nil {
			return nil, err
		}
		id, resp = out.ID, &openai.CitedTextCompletion{TextCompletion: out}
	} else {
		out, err := openai.CollectChat([]inference.Stream{stream}, m.ID, false)
		if err != nil {
			return nil, err
		}
		id, resp = out.ID, &openai.CitedChatCompletion{ChatCompletion: out}
	}
	if err := gen.End(); err != nil {
		return nil, err
	}
	if cite {
		cits, unsupported, err := ans.Finish(ctx, id, m.ID)
		if err != nil {
			return nil, err
		}
		gen.RedactCitations(cits, unsupported)
		switch v := resp.(type) {
		case *openai.CitedTextCompletion:
			v.Citations, v.Unsupported = cits, unsupported
		case *openai.CitedChatCompletion:
			v.Citations, v.Unsupported = cits, unsupported
		}
	}
	return resp, nil
}

// streamForm renders a streamed grounded answer as chat or text
// completion chunks.
type streamForm struct {
	id        string
	first     []any // chunks before the text
	chunks    func(inference.Event) []any
	citations func([]citation.Citation, []citation.Span) any
	usage     func(*openai.Usage) any
}

func newStreamForm(text bool, model string) streamForm {
	if text {
		ts := openai.NewTextStream(model, false, false)
		return streamForm{id: ts.ID,
			chunks:    func(ev inference.Event) []any { return anys(ts.Chunks(ev)) },
			citations: func(c []citation.Citation, u []citation.Span) any { return ts.CitationsChunk(c, u) },
			usage:     func(u *openai.Usage) any { return ts.UsageChunk(u) }}
	}
	cs := openai.NewChatStream(model, false, false)
	return streamForm{id: cs.ID, first: []any{cs.First(0)},
		chunks:    func(ev inference.Event) []any { return anys(cs.Chunks(ev, 0)) },
		citations: func(c []citation.Citation, u []citation.Span) any { return cs.CitationsChunk(c, u) },
		usage:     func(u *openai.Usage) any { return cs.UsageChunk(u) }}
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// prepareAnswer resolves an answer's sources from the request's sources
// field (search options decoded here: the rerank model is resolved like
// any model) and hands the rest to the answers service.
func (s *Ops) prepareAnswer(ctx context.Context, h http.Header, m catalog.Resolved, chat inference.CompletionRequest, c *openai.CitationsParam, p *openai.SourcesParam) (*answers.Answer, error) {
	cite := c.Cite()
	req := answers.Request{Chat: chat, Cite: cite, NoAbstain: c.NoAbstain(), Family: m.Family, Grounded: p != nil, Param: "sources"}
	if k, ok := KeyFrom(ctx); ok {
		req.TeamID, req.KeyID = k.TeamID, k.ID
	}
	if !cite && p == nil {
		return s.answers().Prepare(ctx, req)
	}
	if err := s.sourcesOn(); err != nil {
		return nil, err
	}
	if p == nil {
		p = &openai.SourcesParam{}
	}
	req.Collections = p.Collections
	for _, d := range p.Documents {
		req.Documents = append(req.Documents, answers.Document{ID: d.ID, Title: d.Title, URL: d.URL, Text: d.Text})
	}
	if len(p.Collections) > 0 || len(p.Documents) == 0 {
		topK := p.TopK
		if topK == nil {
			k := answers.DefaultTopK
			topK = &k
		}
		o, err := s.searchOptions(ctx, h, topK, p.Mode, p.Rerank)
		if err != nil {
			if p := apierr.From(err).Param; p != "" {
				return nil, apierr.WithParam(err, "sources."+p)
			}
			return nil, err
		}
		req.Search = o
	}
	return s.answers().Prepare(ctx, req)
}

// answers is the answers service: the configured one, or one over the
// sources service.
func (s *Ops) answers() *answers.Service {
	if s.Answers != nil {
		return s.Answers
	}
	return &answers.Service{Store: s.Sources}
}

// SourceLinkObject is the API's source link.
type SourceLinkObject struct {
	ID         string               `json:"id"`
	Object     string               `json:"object"`
	ResponseID string               `json:"response_id"`
	Model      string               `json:"model"`
	KeyID      string               `json:"key_id"`
	Citation   linkCitation         `json:"citation"`
	Source     citation.CitedSource `json:"source"`
	CreatedAt  int64                `json:"created_at"`
}

type linkCitation struct {
	Index int    `json:"index"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
}

// listSourceLinks serves GET /v1/source_links: the team's links, newest
// first, filtered by response_id, document_id, collection_id,
// created_after and created_before (Unix seconds), paged by limit and the
// after cursor.
func (s *Server) listSourceLinks(w http.ResponseWriter, r *http.Request) error {
	if err := s.sourcesOn(); err != nil {
		return err
	}
	q := r.URL.Query()
	f := sources.LinkFilter{TeamID: teamOf(r), ResponseID: q.Get("response_id"), DocumentID: q.Get("document_id"),
		CollectionID: q.Get("collection_id"), After: q.Get("after"), Limit: 20}
	if err := wire.ListParams(q, &f.Limit, wire.Bound{Name: "created_after", Dst: &f.Since}, wire.Bound{Name: "created_before", Dst: &f.Until}); err != nil {
		return err
	}
	links, more, err := s.Sources.SourceLinks(r.Context(), f)
	if err != nil {
		return err
	}
	data := make([]SourceLinkObject, len(links))
	for i, l := range links {
		data[i] = SourceLinkObject{ID: l.ID, Object: "source_link", ResponseID: l.ResponseID, Model: l.Model, KeyID: l.KeyID,
			Citation: linkCitation{Index: l.CitationIndex, Start: l.Start, End: l.End, Text: l.Text},
			Source: citation.CitedSource{Source: citation.Source{ID: l.SourceID, CollectionID: l.CollectionID, DocumentID: l.DocumentID,
				ChunkID: l.ChunkID, Title: l.Title, URL: l.URL}, Snippet: l.Snippet, Number: l.SourceNumber},
			CreatedAt: l.CreatedAt.Unix()}
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v SourceLinkObject) string { return v.ID }))
}
