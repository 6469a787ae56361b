package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// answerStore is what answers.Service needs, over the quality set's one
// collection; source links are counted, not stored.
type answerStore struct {
	svc   *sources.Service
	col   sources.Collection
	links int
}

func (s *answerStore) Collection(ctx context.Context, teamID, id string) (sources.Collection, error) {
	if id != s.col.ID || teamID != s.col.TeamID {
		return sources.Collection{}, sources.ErrNotFound
	}
	return s.col, nil
}

func (s *answerStore) ListCollections(ctx context.Context, teamID string) ([]sources.Collection, error) {
	return []sources.Collection{s.col}, nil
}

func (s *answerStore) Search(ctx context.Context, cols []sources.Collection, q string, o sources.SearchOptions) ([]sources.Hit, error) {
	return s.svc.Search(ctx, cols, q, o)
}

func (s *answerStore) RecordLinks(ctx context.Context, links []sources.SourceLink) error {
	s.links += len(links)
	return nil
}

// citationPhase answers labelled queries with sources and citations
// through the answers service, as POST /v1/completions with citations
// does (hybrid search, top 5, the chat model at temperature 0), and
// scores the citations against the labels: a cited source is right when
// it is the query's relevant document.
func (b *bench) citationPhase(ctx context.Context, svc *sources.Service, col sources.Collection, qdocs []qdoc, qs []qquery) error {
	n := min(b.cfg.citationQueries, len(qs))
	if n == 0 {
		return nil
	}
	st := &answerStore{svc: svc, col: col}
	as := &answers.Service{Store: st}
	var answered, withCitation, cited, right, unsupported, firstRight int
	var elapsed time.Duration
	logf("citations: %d queries answered by %s", n, b.cfg.chatModel)
	for _, q := range qs[:n] {
		question := q.text
		if !strings.HasSuffix(question, "?") {
			question = "Tell me about " + question + "."
		}
		t0 := time.Now()
		ans, err := as.Prepare(ctx, answers.Request{TeamID: col.TeamID, Cite: true, Grounded: true, Collections: []string{col.ID},
			Search: sources.SearchOptions{TopK: 5, Mode: sources.ModeHybrid},
			Chat: inference.CompletionRequest{Model: b.cfg.chatModel, MaxTokens: 64,
				Messages: []inference.Message{{Role: "user", Content: question}}}})
		if err != nil {
			return err
		}
		gen, err := b.mgr.Complete(ctx, ans.Chat)
		if err != nil {
			return err
		}
		var text strings.Builder
		for {
			ev, err := gen.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				gen.Close()
				return err
			}
			text.WriteString(ans.Write(ev.Text))
			if ev.Done {
				text.WriteString(ans.Flush())
				break
			}
		}
		gen.Close()
		cits, unsup, err := ans.Finish(ctx, fmt.Sprintf("q%d", answered), b.cfg.chatModel)
		if err != nil {
			return err
		}
		elapsed += time.Since(t0)
		answered++
		unsupported += len(unsup)
		if len(cits) > 0 {
			withCitation++
		}
		for k, c := range cits {
			for _, src := range c.Sources {
				cited++
				if src.DocumentID == qdocs[q.doc].docID {
					right++
					if k == 0 {
						firstRight++
					}
				}
			}
		}
	}
	frac := func(a, b int) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	b.citationRows = append(b.citationRows, fmt.Sprintf("| %d | %s | %d | %s | %d | %d | %.1f |",
		answered, frac(withCitation, answered), cited, frac(right, cited), unsupported, st.links, elapsed.Seconds()/float64(max(answered, 1))))
	return nil
}
