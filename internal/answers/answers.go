// Package answers is answering with sources, as a domain service: it
// gathers a team's sources for a question (retrieval over its collections,
// and documents given inline), asks the model in the form its family
// answers best (forms.json: the sources as context, the question last),
// lets it write plain prose, attributes each sentence to the sources that
// support it as the answer streams (package citation), answers "The
// sources do not say." when retrieval finds nothing relevant or no
// sentence is supported, and records a source link per citation. HTTP
// handlers decode for it and render what it returns (chat and text
// completions, the Responses API); workflow steps call it the same way.
package answers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// DefaultCollectionName is the name of the collection a team's answers
// with citations draw on when the request names no sources.
const DefaultCollectionName = "default"

// maxStops bounds the stop strings of an answer (OpenAI allows the caller
// four; a form adds its own).
const maxStops = 8

// Bounds of an answer's sources.
const (
	MaxCollections   = 20
	MaxDocuments     = 20
	MaxDocumentChars = 100_000
	DefaultTopK      = 5
)

// Store is what answering needs of the sources service.
type Store interface {
	Collection(ctx context.Context, teamID, id string) (sources.Collection, error)
	ListCollections(ctx context.Context, teamID string) ([]sources.Collection, error)
	Search(ctx context.Context, cols []sources.Collection, query string, o sources.SearchOptions) ([]sources.Hit, error)
	RecordLinks(ctx context.Context, links []sources.SourceLink) error
}

// Embedder computes embeddings (the inference backend).
type Embedder interface {
	Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error)
}

// Service answers with sources.
type Service struct {
	Store Store
	// Embed and EmbeddingModel attribute sentences by meaning (with the
	// collection's own embedding model, else EmbeddingModel); without
	// them words alone decide.
	Embed          Embedder
	EmbeddingModel string
	// AbstainText is the answer when the sources do not say
	// (citation.DefaultAbstainText when empty).
	AbstainText string
}

// MinRelevance is the cosine similarity between the question and the best
// retrieved chunk below which nothing retrieved is about the question, and
// the answer abstains without asking the model (all-MiniLM-L6-v2: on
// bench/answers' set, questions about the corpus score 0.35–0.8 with
// their chunks, questions about anything else below 0.2).
const MinRelevance = 0.2

// Document is a source given in the request itself.
type Document struct {
	ID, Title, URL, Text string
}

// Request is a question to answer from sources.
type Request struct {
	// TeamID and KeyID say whose sources are searched and whose the
	// source links are; another team's collection does not exist here.
	TeamID, KeyID string
	// Chat is the generation, its model already resolved; its messages
	// get the sources prompt.
	Chat inference.CompletionRequest
	// Cite asks for [n] markers settled into citations. Without it the
	// sources still ground the answer.
	Cite bool
	// NoAbstain keeps an answer whose sentences no source supports (they
	// are listed as unsupported) instead of the abstain text.
	NoAbstain bool
	// Family is the model's family (its GGUF architecture), which picks
	// the form of the prompt.
	Family string
	// Grounded says the request asked for sources (even naming none).
	// Without it or Cite the answer has no sources.
	Grounded bool
	// Collections and Documents are the sources; with neither, the team's
	// collection named DefaultCollectionName. Search is how collections
	// are searched (TopK 0: DefaultTopK).
	Collections []string
	Documents   []Document
	Search      sources.SearchOptions
	// Param is the request field holding the sources, for errors
	// ("sources").
	Param string
}

// Answer is a prepared answer: the generation to run, and the writer
// that settles its text as it streams.
type Answer struct {
	// Chat is the generation to run: the request's, with the sources
	// prompt first.
	Chat inference.CompletionRequest
	// Sources are the sources of the question as asked (a two-hop answer
	// first draws on its own; see hop).
	Sources []citation.Source
	svc     *Service
	req     Request
	// w settles the generation running now; lead is the text it is given
	// before that generation's own (a two-hop answer's resolving
	// sentence).
	w    *citation.Writer
	lead string
	// opts and base make and keep the writer of the question as asked
	// (see baseWriter).
	opts citation.Options
	base *citation.Writer
	// abstain: retrieval found nothing relevant; no generation is needed.
	abstain bool
	// next are the later tries, in order, when a try answers nothing (see
	// Settle).
	next []attempt
}

// attempt is one try at an answer: its generation, the writer that
// settles it (nil: the question as asked's, shared by the tries over its
// sources), and the text that leads it.
type attempt struct {
	chat inference.CompletionRequest
	w    *citation.Writer
	lead string
}

// Prepare gathers the sources and builds the generation: the sources as
// context in the last user message, in the form of the model's family,
// and a default length for a grounded answer; for a question that names
// its subject through a description, the two-hop answer first (see hop),
// which searches again here. Its context bounds the embedding calls of the
// answer's attribution.
func (s *Service) Prepare(ctx context.Context, req Request) (*Answer, error) {
	if req.Param == "" {
		req.Param = "sources"
	}
	cols, found, err := s.gather(ctx, req)
	if err != nil {
		return nil, err
	}
	chat := req.Chat
	f := formFor(req.Family)
	abstainText := s.AbstainText
	if abstainText == "" {
		abstainText = citation.DefaultAbstainText
	}
	o := citation.Options{Cite: req.Cite, Abstain: !req.NoAbstain, AbstainText: abstainText, Question: Question(req.Chat.Messages), Context: ctx}
	if model := s.embeddingModel(found); req.Cite && s.Embed != nil && model != "" {
		o.Embed = func(ctx context.Context, texts []string) ([][]float32, error) {
			res, err := s.Embed.Embed(ctx, inference.EmbeddingRequest{Model: model, Input: texts})
			return res.Embeddings, err
		}
	}
	a := &Answer{svc: s, req: req}
	var hop *attempt
	if req.Cite || req.Grounded {
		srcs, relevant := pick(found, f.MaxSources)
		a.Sources = srcs
		a.abstain = req.Cite && !req.NoAbstain && !relevant
		chat = f.request(req.Chat, srcs, abstainText)
		// Further tries replace an answer that answers nothing, which
		// only an answer that may abstain can tell; a caller's tools or
		// logprobs are about one generation.
		if req.Cite && !req.NoAbstain && !a.abstain && !chat.Logprobs && len(chat.Tools) == 0 {
			if r := f.focused(req.Chat, srcs, abstainText, Question(req.Chat.Messages)); r != nil {
				a.next = append(a.next, attempt{chat: *r})
			}
			hop = s.hop(ctx, req, f, cols, found, o, abstainText)
		}
	}
	a.Chat, a.opts = chat, o
	if hop == nil {
		a.w = a.baseWriter()
		return a, nil
	}
	// The two-hop answer first; the question as asked if it answers
	// nothing.
	a.next = append([]attempt{{chat: a.Chat}}, a.next...)
	a.Chat, a.w, a.lead = hop.chat, hop.w, hop.lead
	return a, nil
}

// baseWriter returns the writer of the question as asked, made on first
// use: a two-hop answer that answers never needs it, nor the embedding of
// its sources that a writer starts.
func (a *Answer) baseWriter() *citation.Writer {
	if a.base == nil {
		a.base = citation.NewWriter(a.Sources, a.opts)
	}
	return a.base
}

// Abstains reports whether retrieval found nothing relevant to the
// question: the answer is the abstain text and the model need not be
// asked (Write and Flush give that text for an empty generation).
func (a *Answer) Abstains() bool { return a.abstain }

// embeddingModel is the model attribution embeds with: the retrieved
// collections' (the sources were embedded with it), else the service's.
func (s *Service) embeddingModel(found []found) string {
	for _, f := range found {
		if f.model != "" {
			return f.model
		}
	}
	return s.EmbeddingModel
}

// pick keeps the sources the model is shown: the best max retrieved
// chunks, then the inline documents. relevant is false when retrieval was
// the only source and its best chunk is not about the question.
func pick(found []found, max int) ([]citation.Source, bool) {
	var out []citation.Source
	retrieved, relevant := 0, false
	for _, f := range found {
		switch {
		case !f.retrieved:
			relevant = true // the caller's own documents
		case retrieved >= max:
			continue
		default:
			retrieved++
			// Without a vector score (keyword search) a hit is relevant.
			if f.vector == nil || *f.vector >= MinRelevance {
				relevant = true
			}
		}
		out = append(out, f.src)
	}
	return out, relevant
}

// Settle returns the answer's generation st with its text settled: the
// markers written, a guess held back, and at the end what was held (or
// the abstain text). When a generation answers nothing — no sentence a
// source supports gives what the question asks — and the client has seen
// none of it, the next try runs: for a question that names what it asks
// about through a description (see hop), first the two-hop answer, then
// the question as asked; then once more with only the sources' sentences
// about the question (a small model that missed the answer in four whole
// chunks often finds it among a few sentences). again starts a try's
// generation, and the usage reported is all the tries'. The last try
// abstains like the first when it answers nothing.
func (a *Answer) Settle(st inference.Stream, again func(inference.CompletionRequest) (inference.Stream, error)) inference.Stream {
	return &settled{a: a, st: st, again: again, lead: a.lead}
}

type settled struct {
	a     *Answer
	st    inference.Stream
	again func(inference.CompletionRequest) (inference.Stream, error)
	used  inference.Usage // the earlier tries'
	lead  string          // not yet written
}

func (s *settled) Recv() (inference.Event, error) {
	for {
		ev, err := s.st.Recv()
		if err != nil {
			return ev, err
		}
		if s.lead != "" {
			ev.Text = s.lead + " " + strings.TrimLeft(ev.Text, " ")
			s.lead = ""
		}
		ev.Text = s.a.w.Write(ev.Text)
		if !ev.Done {
			return ev, nil
		}
		tail := s.a.w.Flush()
		if s.again != nil && len(s.a.next) > 0 && s.a.w.AbstainedUnseen() {
			next := s.a.next[0]
			s.a.next = s.a.next[1:]
			if st, err := s.again(next.chat); err == nil {
				s.st.Close()
				s.st = st
				if ev.Usage != nil {
					s.used.PromptTokens += ev.Usage.PromptTokens
					s.used.CompletionTokens += ev.Usage.CompletionTokens
					s.used.CachedTokens += ev.Usage.CachedTokens
				}
				s.a.w, s.lead = next.w, next.lead
				if s.a.w == nil {
					s.a.w = s.a.baseWriter()
				}
				s.a.w.Reset()
				continue
			}
			// This try's abstention stands.
		}
		ev.Text += tail
		if ev.Usage != nil && s.used != (inference.Usage{}) {
			u := *ev.Usage
			u.PromptTokens += s.used.PromptTokens
			u.CompletionTokens += s.used.CompletionTokens
			u.CachedTokens += s.used.CachedTokens
			ev.Usage = &u
		}
		return ev, nil
	}
}

func (s *settled) Close() error { return s.st.Close() }

// Write settles a piece of the answer and returns the text to show (a
// marker is held back until it is known to stand). Settle does this for a
// stream.
func (a *Answer) Write(text string) string { return a.w.Write(text) }

// Flush returns what Write held back, at the end of the answer.
func (a *Answer) Flush() string { return a.w.Flush() }

// Finish records one source link per citation and source, under the
// response's id, and returns the citations and the sentences whose
// facts their sources do not hold. It records even when ctx is done: the
// client may have its answer already.
func (a *Answer) Finish(ctx context.Context, responseID, model string) ([]citation.Citation, []citation.Span, error) {
	if !a.req.Cite {
		return nil, nil, nil
	}
	cits := a.w.Citations()
	var links []sources.SourceLink
	for _, c := range cits {
		for _, src := range c.Sources {
			links = append(links, sources.SourceLink{TeamID: a.req.TeamID, KeyID: a.req.KeyID, ResponseID: responseID, Model: model,
				CitationIndex: c.Index, Start: c.Start, End: c.End, Text: c.Text, SourceNumber: src.Number, SourceID: src.ID,
				CollectionID: src.CollectionID, DocumentID: src.DocumentID, ChunkID: src.ChunkID, Title: src.Title, URL: src.URL, Snippet: src.Snippet})
		}
	}
	if err := a.svc.Store.RecordLinks(context.WithoutCancel(ctx), links); err != nil {
		return nil, nil, fmt.Errorf("recording source links: %w", err)
	}
	return cits, a.w.Unsupported(), nil
}

// Question is the text retrieval searches with: the last user message.
func Question(msgs []inference.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.TrimSpace(msgs[i].Content) != "" {
			return msgs[i].Content
		}
	}
	return ""
}

// found is a source gathered for an answer: a retrieved chunk, with its
// vector score and its collection's embedding model, or an inline
// document.
type found struct {
	src       citation.Source
	retrieved bool
	vector    *float32
	model     string
}

// gather resolves the sources: the chunks retrieval finds for the
// question in the named collections (the team's default collection when
// citations are asked for and no sources are named), then the inline
// documents.
func (s *Service) gather(ctx context.Context, req Request) ([]sources.Collection, []found, error) {
	if !req.Cite && !req.Grounded {
		return nil, nil, nil
	}
	p := req.Param
	if len(req.Collections) > MaxCollections {
		return nil, nil, apierr.Invalid(p+".collections", fmt.Sprintf("at most %d collections", MaxCollections))
	}
	if len(req.Documents) > MaxDocuments {
		return nil, nil, apierr.Invalid(p+".documents", fmt.Sprintf("at most %d documents", MaxDocuments))
	}
	var cols []sources.Collection
	seen := map[string]bool{}
	for i, id := range req.Collections {
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.Store.Collection(ctx, req.TeamID, id)
		if err != nil {
			if errors.Is(err, sources.ErrNotFound) {
				return nil, nil, &apierr.Error{Code: apierr.NotFound, Param: fmt.Sprintf("%s.collections[%d]", p, i), Message: fmt.Sprintf("no collection %q", id), Err: err}
			}
			return nil, nil, err
		}
		cols = append(cols, c)
	}
	if len(req.Collections) == 0 && len(req.Documents) == 0 {
		all, err := s.Store.ListCollections(ctx, req.TeamID)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range all {
			if c.Name == DefaultCollectionName {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			return nil, nil, apierr.Invalid(p, fmt.Sprintf("no '%s' given and your team has no collection named %q: name collections or documents in '%s', or create that collection", p, DefaultCollectionName, p))
		}
	}
	var out []found
	if len(cols) > 0 {
		o := s.searchOptions(req)
		query := Question(req.Chat.Messages)
		if strings.TrimSpace(query) == "" {
			return nil, nil, apierr.Invalid("messages", "an answer with sources needs a user message to search with")
		}
		hits, err := s.Store.Search(ctx, cols, query, o)
		if err != nil {
			return nil, nil, err
		}
		models := map[string]string{}
		for _, c := range cols {
			models[c.ID] = c.EmbeddingModel
		}
		for _, h := range hits {
			out = append(out, found{retrieved: true, vector: h.Vector, model: models[h.Chunk.CollectionID], src: hitSource(h)})
		}
	}
	for i, d := range req.Documents {
		param := fmt.Sprintf("%s.documents[%d]", p, i)
		if strings.TrimSpace(d.Text) == "" {
			return nil, nil, apierr.Invalid(param+".text", "a document needs non-empty 'text'")
		}
		if len(d.Text) > MaxDocumentChars {
			return nil, nil, apierr.Invalid(param+".text", fmt.Sprintf("a document's text is limited to %d bytes; upload longer ones to a collection", MaxDocumentChars))
		}
		id := d.ID
		if id == "" {
			id = "doc_" + strconv.Itoa(i+1)
		}
		out = append(out, found{src: citation.Source{ID: id, DocumentID: id, Title: d.Title, URL: d.URL, Text: d.Text}})
	}
	return cols, out, nil
}

// searchOptions are the request's search options (TopK 0: DefaultTopK).
func (s *Service) searchOptions(req Request) sources.SearchOptions {
	o := req.Search
	if o.TopK == 0 {
		o.TopK = DefaultTopK
	}
	return o
}

// hitSource is a retrieved chunk as a source.
func hitSource(h sources.Hit) citation.Source {
	ref := sources.ChunkRef(h.Chunk.ID)
	return citation.Source{ID: ref, CollectionID: h.Chunk.CollectionID, DocumentID: h.Chunk.DocumentID, ChunkID: ref,
		Title: h.Document.Title, URL: h.Document.URL, Text: h.Chunk.Text}
}
