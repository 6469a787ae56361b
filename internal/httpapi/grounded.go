package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// DefaultCollectionName is the name of the collection a team's completions
// with citations draw on when the request names no sources.
const DefaultCollectionName = "default"

// Bounds of a grounded completion's sources.
const (
	maxSourceCollections = 20
	maxInlineDocuments   = 20
	maxInlineChars       = 100_000
	defaultSourcesTopK   = 5
)

// groundedCompletion answers POST /v1/completions with messages, citations
// or sources: it retrieves from the team's collections (or uses inline
// documents), asks the chat model to answer from the numbered sources, and
// settles the answer's [n] markers as it streams (package citation). With
// citations the response carries them, and each is recorded as a source
// link before the client gets them.
func (s *Server) groundedCompletion(w http.ResponseWriter, r *http.Request, req *openai.CompletionRequest) error {
	chat, err := req.ChatRequest()
	if err != nil {
		return err
	}
	native, err := chat.Native()
	if err != nil {
		return err
	}
	if req.Choices() > 1 {
		return apierr.Invalid("n", "n > 1 is supported on /v1/chat/completions; send one request per completion here")
	}
	m, err := s.model(w, r, req.Model, "chat")
	if err != nil {
		return err
	}
	if err := checkChatInput(m, native); err != nil {
		return err
	}
	if err := limit(m, &native); err != nil {
		return err
	}
	cite := req.Citations != nil && *req.Citations
	srcs, err := s.gatherSources(w, r, req.Sources, cite, question(native.Messages))
	if err != nil {
		return err
	}
	if cite || req.Sources != nil {
		native.Messages = withSystem(native.Messages, citation.SystemPrompt(srcs, cite))
	}
	native.Model, native.Stream = m.ID, req.Stream
	ctx, cancel := withTimeout(r)
	defer cancel()
	stream, err := s.complete(ctx, m, native, true)
	if err != nil {
		return err
	}
	defer stream.Close()
	cw := citation.NewWriter(srcs, cite)
	// A prompt is answered as a text completion, messages as a chat
	// completion, so that each SDK method reads its own shape.
	textForm := req.Messages == nil
	if !req.Stream {
		var resp any
		var id string
		if textForm {
			out, err := openai.CollectText(stream, m.ID, false)
			if err != nil {
				return err
			}
			out.Choices[0].Text = cw.Write(out.Choices[0].Text) + cw.Flush()
			id, resp = out.ID, &openai.CitedTextCompletion{TextCompletion: out}
		} else {
			out, err := openai.CollectChat([]inference.Stream{stream}, m.ID, false)
			if err != nil {
				return err
			}
			ch := &out.Choices[0].Message
			ch.Content = cw.Write(ch.Content) + cw.Flush()
			id, resp = out.ID, &openai.CitedChatCompletion{ChatCompletion: out}
		}
		if cite {
			cits := cw.Citations()
			if err := s.recordLinks(ctx, r, id, m.ID, cits); err != nil {
				return err
			}
			switch v := resp.(type) {
			case *openai.CitedTextCompletion:
				v.Citations, v.Unsupported = cits, cw.Unsupported()
			case *openai.CitedChatCompletion:
				v.Citations, v.Unsupported = cits, cw.Unsupported()
			}
		}
		return writeJSON(w, http.StatusOK, resp)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	form := newStreamForm(textForm, m.ID)
	ev, err := stream.Recv()
	if err != nil {
		return err
	}
	out := startSSE(w)
	for _, c := range form.first {
		if err := out.write(c); err != nil {
			return err
		}
	}
	var usage *inference.Usage
	for {
		ev.Text = cw.Write(ev.Text)
		if ev.Done {
			ev.Text += cw.Flush()
			usage = ev.Usage
		}
		for _, c := range form.chunks(ev) {
			if err := out.send(c); err != nil {
				return err // the client went away; closing the stream cancels generation
			}
		}
		if ev.Done {
			break
		}
		if ev, err = stream.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return out.fail(err)
		}
	}
	if cite {
		cits := cw.Citations()
		if err := s.recordLinks(ctx, r, form.id, m.ID, cits); err != nil {
			return out.fail(err)
		}
		if err := out.send(form.citations(cits, cw.Unsupported())); err != nil {
			return err
		}
	}
	if includeUsage {
		if err := out.send(form.usage(openai.NewUsage(usage))); err != nil {
			return err
		}
	}
	return out.done()
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

// question is the text retrieval searches with: the last user message.
func question(msgs []inference.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.TrimSpace(msgs[i].Content) != "" {
			return msgs[i].Content
		}
	}
	return ""
}

// withSystem puts the sources prompt first: as the system message, or
// ahead of the caller's own system message.
func withSystem(msgs []inference.Message, prompt string) []inference.Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out := append([]inference.Message(nil), msgs...)
		out[0].Content = prompt + "\n\n" + msgs[0].Content
		return out
	}
	return append([]inference.Message{{Role: "system", Content: prompt}}, msgs...)
}

// gatherSources resolves a grounded completion's sources: the chunks that
// retrieval finds for the question in the named collections (the team's
// default collection when citations are asked for and no sources are
// named), then the inline documents. Collections of other teams are
// reported as missing.
func (s *Server) gatherSources(w http.ResponseWriter, r *http.Request, p *openai.SourcesParam, cite bool, query string) ([]citation.Source, error) {
	if p == nil && !cite {
		return nil, nil
	}
	if p == nil {
		p = &openai.SourcesParam{}
	}
	if err := s.sourcesOn(); err != nil {
		return nil, err
	}
	if len(p.Collections) > maxSourceCollections {
		return nil, apierr.Invalid("sources.collections", fmt.Sprintf("at most %d collections", maxSourceCollections))
	}
	if len(p.Documents) > maxInlineDocuments {
		return nil, apierr.Invalid("sources.documents", fmt.Sprintf("at most %d documents", maxInlineDocuments))
	}
	team := teamOf(r)
	var cols []sources.Collection
	seen := map[string]bool{}
	for i, id := range p.Collections {
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.Sources.GetCollection(r.Context(), id)
		if err == nil && c.TeamID != team {
			err = sources.ErrNotFound
		}
		if err != nil {
			if errors.Is(err, sources.ErrNotFound) {
				return nil, &apierr.Error{Code: apierr.NotFound, Param: fmt.Sprintf("sources.collections[%d]", i), Message: fmt.Sprintf("no collection %q", id), Err: err}
			}
			return nil, err
		}
		cols = append(cols, c)
	}
	if len(p.Collections) == 0 && len(p.Documents) == 0 {
		all, err := s.Sources.ListCollections(r.Context(), team)
		if err != nil {
			return nil, err
		}
		for _, c := range all {
			if c.Name == DefaultCollectionName {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			return nil, apierr.Invalid("sources", fmt.Sprintf("no 'sources' given and your team has no collection named %q: name collections or documents in 'sources', or create that collection", DefaultCollectionName))
		}
	}
	var out []citation.Source
	if len(cols) > 0 {
		topK := p.TopK
		if topK == nil {
			k := defaultSourcesTopK
			topK = &k
		}
		o, err := s.searchOptions(w, r, topK, p.Mode, p.Rerank)
		if err != nil {
			var e *apierr.Error
			if errors.As(err, &e) && e.Param != "" {
				e.Param = "sources." + e.Param
			}
			return nil, err
		}
		if strings.TrimSpace(query) == "" {
			return nil, apierr.Invalid("messages", "a completion with sources needs a user message to search with")
		}
		hits, err := s.Sources.Search(r.Context(), cols, query, o)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			ref := ChunkRef(h.Chunk.ID)
			out = append(out, citation.Source{ID: ref, CollectionID: h.Chunk.CollectionID, DocumentID: h.Chunk.DocumentID, ChunkID: ref,
				Title: h.Document.Title, URL: h.Document.URL, Text: h.Chunk.Text})
		}
	}
	for i, d := range p.Documents {
		param := fmt.Sprintf("sources.documents[%d]", i)
		if strings.TrimSpace(d.Text) == "" {
			return nil, apierr.Invalid(param+".text", "a document needs non-empty 'text'")
		}
		if len(d.Text) > maxInlineChars {
			return nil, apierr.Invalid(param+".text", fmt.Sprintf("a document's text is limited to %d bytes; upload longer ones to a collection", maxInlineChars))
		}
		id := d.ID
		if id == "" {
			id = "doc_" + strconv.Itoa(i+1)
		}
		out = append(out, citation.Source{ID: id, DocumentID: id, Title: d.Title, URL: d.URL, Text: d.Text})
	}
	return out, nil
}

// recordLinks writes one source link per citation and source.
func (s *Server) recordLinks(ctx context.Context, r *http.Request, responseID, model string, cits []citation.Citation) error {
	k, _ := KeyFrom(r.Context())
	var links []sources.SourceLink
	for _, c := range cits {
		for _, src := range c.Sources {
			links = append(links, sources.SourceLink{TeamID: k.TeamID, KeyID: k.ID, ResponseID: responseID, Model: model,
				CitationIndex: c.Index, Start: c.Start, End: c.End, Text: c.Text, SourceNumber: src.Number, SourceID: src.ID,
				CollectionID: src.CollectionID, DocumentID: src.DocumentID, ChunkID: src.ChunkID, Title: src.Title, URL: src.URL, Snippet: src.Snippet})
		}
	}
	if err := s.Sources.RecordLinks(context.WithoutCancel(ctx), links); err != nil {
		return fmt.Errorf("recording source links: %w", err)
	}
	return nil
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
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return apierr.Invalid("limit", "'limit' must be an integer from 1 to 100")
		}
		f.Limit = n
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"created_after", &f.Since}, {"created_before", &f.Until}} {
		if v := q.Get(t.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return apierr.Invalid(t.name, fmt.Sprintf("'%s' must be a Unix time in seconds", t.name))
			}
			*t.dst = time.Unix(n, 0).UTC()
		}
	}
	links, more, err := s.Sources.SourceLinks(r.Context(), f)
	if err != nil {
		if errors.Is(err, sources.ErrNotFound) {
			return &apierr.Error{Code: apierr.NotFound, Param: "after", Message: fmt.Sprintf("no source link %q", f.After), Err: err}
		}
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
	page := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		page["first_id"], page["last_id"] = data[0].ID, data[len(data)-1].ID
	}
	return writeJSON(w, http.StatusOK, page)
}
