package postgres

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sqlstore"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

func TestUpgradeMovesEmbeddings(t *testing.T) {
	url := storetest.PostgresURL(t)
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunEmbeddingsUpgrade(t, storetest.EmbeddingsUpgrade{
		DB:         func() (*sql.DB, error) { return sql.Open("pgx", url) },
		Dialect:    goose.DialectPostgres,
		Migrations: sub,
		Version:    4,
		Store:      func(db *sql.DB) auth.KeyStore { return &Store{keyStore: sqlstore.New(db, dialect), db: db} },
		InsertOldChunk: `INSERT INTO chunks (document_id, collection_id, seq, start_char, end_char, text, embedding, search_text)
			VALUES ('doc_a', 'col_a', $1, 0, 1, $2, $3, $2)`,
		Open: func() (auth.KeyStore, error) { return Open(context.Background(), url) },
	})
}
