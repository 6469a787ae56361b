package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sqlstore"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

func TestUpgradeMovesEmbeddings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunEmbeddingsUpgrade(t, storetest.EmbeddingsUpgrade{
		DB:         func() (*sql.DB, error) { return sql.Open("sqlite", path+"?_pragma=foreign_keys(1)") },
		Dialect:    goose.DialectSQLite3,
		Migrations: sub,
		Version:    5,
		Store:      func(db *sql.DB) auth.KeyStore { return &Store{keyStore: sqlstore.New(db, dialect), db: db} },
		InsertOldChunk: `INSERT INTO chunks (document_id, collection_id, seq, start_char, end_char, text, embedding)
			VALUES ('doc_a', 'col_a', ?, 0, 1, ?, ?)`,
		Open: func() (auth.KeyStore, error) { return Open(context.Background(), path) },
	})
}
