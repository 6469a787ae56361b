// Package sources holds what answers are grounded in: collections of
// documents owned by a team, the documents' extracted text, and their
// chunks (character ranges of that text, with embeddings) that retrieval
// returns and citations point at. This file defines the domain types and
// the store interface the SQL adapters implement; ingestion, retrieval and
// citation build on them.
package sources

import (
	"context"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Errors the store returns, wrapped with a message a client may read
// (apierr.Wrapf: `no collection "col_…"`); check with errors.Is. They are
// API errors (internal/apierr), so that what the store says reaches the
// client without a mapping in between.
var (
	// ErrNotFound: no such collection, document or chunk (or not the
	// caller's team).
	ErrNotFound = apierr.New(apierr.NotFound, "collection, document or chunk not found")
	// ErrConflict: a collection of that name exists in the team.
	ErrConflict = apierr.New(apierr.Conflict, "your team already has a collection of that name")
)

// Document statuses.
const (
	StatusProcessing = "processing"
	StatusReady      = "ready"
	StatusFailed     = "failed"
)

// Collection is a named set of documents owned by one team, embedded with
// one embedding model.
type Collection struct {
	ID             string
	TeamID         string
	Name           string
	Description    string
	EmbeddingModel string
	Metadata       map[string]any
	CreatedAt      time.Time
	// DocumentCount and ChunkCount are filled by reads.
	DocumentCount int
	ChunkCount    int
}

// Document is one source in a collection. Text is the extracted text that
// chunk offsets point into.
type Document struct {
	ID           string
	CollectionID string
	Title        string
	URL          string
	Metadata     map[string]any
	Format       string // txt, md, html, pdf, or text for JSON bodies
	Status       string
	Error        string
	// Progress is the share of chunks embedded, 0 to 1.
	Progress   float64
	Text       string
	Chars      int // length of Text in characters (code points)
	ChunkCount int
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Chunk is a character range [Start, End) of a document's text.
type Chunk struct {
	ID           int64
	DocumentID   string
	CollectionID string
	Seq          int // position within the document
	Start, End   int // character (code point) offsets into Document.Text
	Text         string
	Embedding    []float32
}

// DocumentUpdate changes a document's processing state; nil fields stay.
type DocumentUpdate struct {
	Status     *string
	Error      *string
	Progress   *float64
	ChunkCount *int
}

// KeywordHit is a chunk matched by keyword search; higher Score is better.
type KeywordHit struct {
	ChunkID int64
	Score   float64
}

// Store keeps collections, documents and chunks. Implementations: the
// SQLite and PostgreSQL stores (internal/sqlstore), with keyword search
// by SQLite FTS5 or PostgreSQL full-text search.
type Store interface {
	// CreateCollection stores c (ErrConflict: the team has one of that name).
	CreateCollection(ctx context.Context, c Collection) error
	// GetCollection returns a collection with its counts (ErrNotFound).
	GetCollection(ctx context.Context, id string) (Collection, error)
	// ListCollections returns a team's collections, oldest first.
	ListCollections(ctx context.Context, teamID string) ([]Collection, error)
	// DeleteCollection removes a collection with its documents and chunks
	// (ErrNotFound).
	DeleteCollection(ctx context.Context, id string) error

	// CreateDocument stores d (its collection must exist: ErrNotFound).
	CreateDocument(ctx context.Context, d Document) error
	// GetDocument returns a document with its text (ErrNotFound).
	GetDocument(ctx context.Context, id string) (Document, error)
	// ListDocuments returns a collection's documents without their text,
	// oldest first.
	ListDocuments(ctx context.Context, collectionID string) ([]Document, error)
	// ProcessingDocuments returns the ids of the documents still
	// processing, oldest first.
	ProcessingDocuments(ctx context.Context) ([]string, error)
	// UpdateDocument changes a document's processing state (ErrNotFound).
	UpdateDocument(ctx context.Context, id string, u DocumentUpdate, at time.Time) error
	// DeleteDocument removes a document and its chunks from every index
	// and counts a deletion in its collection (see EmbeddingsAfter)
	// (ErrNotFound).
	DeleteDocument(ctx context.Context, id string) error

	// AddChunks stores chunks of one document and returns their ids in
	// order; the keyword index is updated in the same transaction.
	AddChunks(ctx context.Context, chunks []Chunk) ([]int64, error)
	// ChunkIDs returns the ids of a document's chunks.
	ChunkIDs(ctx context.Context, documentID string) ([]int64, error)
	// GetChunks returns chunks by id (missing ids are left out), without
	// their embeddings.
	GetChunks(ctx context.Context, ids []int64) ([]Chunk, error)
	// CollectionEmbeddings calls fn for every embedded chunk of a
	// collection (to build its vector index).
	CollectionEmbeddings(ctx context.Context, collectionID string, fn func(id int64, v []float32) error) error
	// EmbeddingsAfter calls fn, in id order, for every embedded chunk of a
	// collection whose id is above after, and returns the number of
	// documents ever deleted from the collection, read at the same time
	// (ErrNotFound: no such collection). A collection's chunk ids must
	// become visible in increasing order, so that with after the largest
	// id a server has seen it gets exactly the chunks added since.
	EmbeddingsAfter(ctx context.Context, collectionID string, after int64, fn func(id int64, v []float32) error) (deletions int64, err error)
	// EmbeddedChunkIDs returns the ids of a collection's embedded chunks,
	// in increasing order.
	EmbeddedChunkIDs(ctx context.Context, collectionID string) ([]int64, error)
	// KeywordSearch returns up to k chunks of the collections that match
	// the words of query, best first.
	KeywordSearch(ctx context.Context, collectionIDs []string, query string, k int) ([]KeywordHit, error)

	LinkStore
}
