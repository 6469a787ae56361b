package storetest

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/sqlstore"
)

// EmbeddingsUpgrade describes a store for RunEmbeddingsUpgrade.
type EmbeddingsUpgrade struct {
	// DB opens a new connection pool to an empty test database.
	DB func() (*sql.DB, error)
	// Dialect and Migrations are the store's goose dialect and migrations;
	// Version is the last one with embeddings as a column of chunks.
	Dialect    goose.Dialect
	Migrations fs.FS
	Version    int64
	// Store is the store over db as it is, without migrating it.
	Store func(db *sql.DB) auth.KeyStore
	// InsertOldChunk inserts a chunk of document doc_a (collection col_a)
	// the old way; its arguments are seq, text and the embedding.
	InsertOldChunk string
	// Open opens the database as the server does, applying the remaining
	// migrations.
	Open func() (auth.KeyStore, error)
}

// RunEmbeddingsUpgrade builds a database at u.Version, where chunk
// embeddings were a column of chunks, and checks that opening it moves
// every embedding to chunk_embeddings, keeps the chunks and their keyword
// index, and that the embeddings go with their document.
func RunEmbeddingsUpgrade(t *testing.T, u EmbeddingsUpgrade) {
	ctx := context.Background()
	db, err := u.DB()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := goose.NewProvider(u.Dialect, db, u.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, u.Version); err != nil {
		t.Fatal(err)
	}
	ks := u.Store(db)
	old := ks.(sources.Store)
	now := time.Now().UTC()
	if err := ks.CreateTeam(ctx, auth.Team{ID: "team_a", Name: "a", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := old.CreateCollection(ctx, sources.Collection{ID: "col_a", TeamID: "team_a", Name: "a", EmbeddingModel: "m", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := old.CreateDocument(ctx, sources.Document{ID: "doc_a", CollectionID: "col_a", Format: "text", Status: sources.StatusReady, Text: "x", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for seq, c := range []struct {
		text string
		emb  []byte
	}{{"the zorblat engine", sqlstore.EncodeVector([]float32{1, -0.5, 2})}, {"not embedded yet", nil}} {
		if _, err := db.ExecContext(ctx, u.InsertOldChunk, seq, c.text, c.emb); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	ks, err = u.Open()
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if c, ok := ks.(interface{ Close() error }); ok {
		defer c.Close()
	}
	s := ks.(sources.Store)
	var ids []int64
	got := map[int64][]float32{}
	if err := s.CollectionEmbeddings(ctx, "col_a", func(id int64, v []float32) error { ids = append(ids, id); got[id] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || !slices.Equal(got[ids[0]], []float32{1, -0.5, 2}) {
		t.Fatalf("embeddings after the upgrade: %v", got)
	}
	if cs, err := s.GetChunks(ctx, []int64{ids[0], ids[0] + 1}); err != nil || len(cs) != 2 || cs[0].Text != "the zorblat engine" || cs[1].Text != "not embedded yet" {
		t.Fatalf("chunks after the upgrade: %+v %v", cs, err)
	}
	if hits, err := s.KeywordSearch(ctx, []string{"col_a"}, "zorblat", 5); err != nil || len(hits) != 1 || hits[0].ChunkID != ids[0] {
		t.Fatalf("keyword search after the upgrade: %+v %v", hits, err)
	}
	if err := s.DeleteDocument(ctx, "doc_a"); err != nil {
		t.Fatal(err)
	}
	db, err = u.DB()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM chunk_embeddings`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("embeddings left after deleting their document: %d %v", n, err)
	}
}
