// Package answers is answering with sources, as a domain service: it
// gathers a team's sources for a question (retrieval over its collections,
// and documents given inline), puts them before the conversation as
// numbered sources, settles the answer's [n] markers as it is written
// (package citation: a cited sentence's checkable facts must be in its
// source), and records a source link per citation. HTTP handlers decode
// for it and render what it returns (chat and text completions, the
// Responses API); workflow steps call it the same way.
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

// Bounds of an answer's sources.
const (
	MaxCollections   = 20
	MaxDocuments     = 20
	MaxDocumentChars = 100_000
	DefaultTopK      = 5
)

// Store is what answering needs of the sources service.
type Store interface {
	GetCollection(ctx context.Context, id string) (sources.Collection, error)
	ListCollections(ctx context.Context, teamID string) ([]sources.Collection, error)
	Search(ctx context.Context, cols []sources.Collection, query string, o sources.SearchOptions) ([]sources.Hit, error)
	RecordLinks(ctx context.Context, links []sources.SourceLink) error
}

// Service answers with sources.
type Service struct {
	Store Store
}

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
	Chat    inference.CompletionRequest
	Sources []citation.Source
	svc     *Service
	req     Request
	w       *citation.Writer
}

// Prepare gathers the sources and builds the generation.
func (s *Service) Prepare(ctx context.Context, req Request) (*Answer, error) {
	if req.Param == "" {
		req.Param = "sources"
	}
	srcs, err := s.gather(ctx, req)
	if err != nil {
		return nil, err
	}
	chat := req.Chat
	if req.Cite || req.Grounded {
		chat.Messages = withSystem(chat.Messages, citation.SystemPrompt(srcs, req.Cite))
	}
	return &Answer{Chat: chat, Sources: srcs, svc: s, req: req, w: citation.NewWriter(srcs, req.Cite)}, nil
}

// Write settles a piece of the answer and returns the text to show (a
// marker is held back until it is known to stand).
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

// ChunkRef is the id a chunk is cited by.
func ChunkRef(id int64) string { return "chunk_" + strconv.FormatInt(id, 10) }

// gather resolves the sources: the chunks retrieval finds for the
// question in the named collections (the team's default collection when
// citations are asked for and no sources are named), then the inline
// documents.
func (s *Service) gather(ctx context.Context, req Request) ([]citation.Source, error) {
	if !req.Cite && !req.Grounded {
		return nil, nil
	}
	p := req.Param
	if len(req.Collections) > MaxCollections {
		return nil, apierr.Invalid(p+".collections", fmt.Sprintf("at most %d collections", MaxCollections))
	}
	if len(req.Documents) > MaxDocuments {
		return nil, apierr.Invalid(p+".documents", fmt.Sprintf("at most %d documents", MaxDocuments))
	}
	var cols []sources.Collection
	seen := map[string]bool{}
	for i, id := range req.Collections {
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.Store.GetCollection(ctx, id)
		if err == nil && c.TeamID != req.TeamID {
			err = sources.ErrNotFound
		}
		if err != nil {
			if errors.Is(err, sources.ErrNotFound) {
				return nil, &apierr.Error{Code: apierr.NotFound, Param: fmt.Sprintf("%s.collections[%d]", p, i), Message: fmt.Sprintf("no collection %q", id), Err: err}
			}
			return nil, err
		}
		cols = append(cols, c)
	}
	if len(req.Collections) == 0 && len(req.Documents) == 0 {
		all, err := s.Store.ListCollections(ctx, req.TeamID)
		if err != nil {
			return nil, err
		}
		for _, c := range all {
			if c.Name == DefaultCollectionName {
				cols = append(cols, c)
			}
		}
		if len(cols) == 0 {
			return nil, apierr.Invalid(p, fmt.Sprintf("no '%s' given and your team has no collection named %q: name collections or documents in '%s', or create that collection", p, DefaultCollectionName, p))
		}
	}
	var out []citation.Source
	if len(cols) > 0 {
		o := req.Search
		if o.TopK == 0 {
			o.TopK = DefaultTopK
		}
		query := Question(req.Chat.Messages)
		if strings.TrimSpace(query) == "" {
			return nil, apierr.Invalid("messages", "an answer with sources needs a user message to search with")
		}
		hits, err := s.Store.Search(ctx, cols, query, o)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			ref := ChunkRef(h.Chunk.ID)
			out = append(out, citation.Source{ID: ref, CollectionID: h.Chunk.CollectionID, DocumentID: h.Chunk.DocumentID, ChunkID: ref,
				Title: h.Document.Title, URL: h.Document.URL, Text: h.Chunk.Text})
		}
	}
	for i, d := range req.Documents {
		param := fmt.Sprintf("%s.documents[%d]", p, i)
		if strings.TrimSpace(d.Text) == "" {
			return nil, apierr.Invalid(param+".text", "a document needs non-empty 'text'")
		}
		if len(d.Text) > MaxDocumentChars {
			return nil, apierr.Invalid(param+".text", fmt.Sprintf("a document's text is limited to %d bytes; upload longer ones to a collection", MaxDocumentChars))
		}
		id := d.ID
		if id == "" {
			id = "doc_" + strconv.Itoa(i+1)
		}
		out = append(out, citation.Source{ID: id, DocumentID: id, Title: d.Title, URL: d.URL, Text: d.Text})
	}
	return out, nil
}
