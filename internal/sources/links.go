package sources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// SourceLink records that a sentence of an answer cited a source: one row
// per citation and source. Links are records: they stay when the document
// they name is deleted, so that what an answer was grounded in can still be
// shown.
type SourceLink struct {
	// ID is the link's id ("sl_…").
	ID     string
	TeamID string
	// KeyID is the API key that asked for the answer.
	KeyID string
	// ResponseID is the id of the completion that holds the answer.
	ResponseID string
	Model      string
	// CitationIndex is the citation's position in the answer's citations.
	CitationIndex int
	// Start and End are character offsets of the cited text in the answer
	// (End exclusive); Text is that text.
	Start, End int
	Text       string
	// SourceNumber is the source's marker number in the answer ([n]).
	SourceNumber int
	// SourceID is the public id of the source (a chunk id, or the caller's
	// id of an inline document).
	SourceID     string
	CollectionID string // empty for inline documents
	DocumentID   string
	ChunkID      string // empty for inline documents
	Title        string
	URL          string
	Snippet      string
	CreatedAt    time.Time
}

// LinkFilter selects source links of one team, newest first.
type LinkFilter struct {
	TeamID string
	// Optional filters; zero values match everything.
	ResponseID   string
	DocumentID   string
	CollectionID string
	Since, Until time.Time // CreatedAt >= Since, CreatedAt < Until
	// After is a cursor: the id of the last link of the previous page.
	After string
	// Limit is the page size.
	Limit int
}

// LinkStore keeps source links.
type LinkStore interface {
	// AddSourceLinks stores links in one transaction.
	AddSourceLinks(ctx context.Context, links []SourceLink) error
	// ListSourceLinks returns up to f.Limit links matching f, newest first,
	// and whether more follow. An After that names no link of the team
	// is ErrNotFound.
	ListSourceLinks(ctx context.Context, f LinkFilter) ([]SourceLink, bool, error)
}

// RecordLinks stores source links, filling their ids and times.
func (s *Service) RecordLinks(ctx context.Context, links []SourceLink) error {
	if len(links) == 0 {
		return nil
	}
	now := s.now()
	for i := range links {
		links[i].ID, links[i].CreatedAt = NewID("sl_"), now
	}
	return s.Store.AddSourceLinks(ctx, links)
}

// SourceLinks lists a team's source links (see LinkStore). Errors: a 404
// naming "after" (wrapping ErrNotFound) for a cursor that names no link of
// the team: the only thing a list can miss is its cursor, and the client
// must learn which parameter is wrong.
func (s *Service) SourceLinks(ctx context.Context, f LinkFilter) ([]SourceLink, bool, error) {
	links, more, err := s.Store.ListSourceLinks(ctx, f)
	if errors.Is(err, ErrNotFound) {
		return nil, false, &apierr.Error{Code: apierr.NotFound, Param: "after", Message: fmt.Sprintf("no source link %q", f.After), Err: err}
	}
	return links, more, err
}
