package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) auth.KeyStore {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sovereign.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestStoreInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) auth.KeyStore {
		s, err := sqlite.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestReopen checks that data survives a restart, that migrations are not
// applied twice, and that the file is in WAL mode.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "sovereign.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	team := auth.Team{ID: "team_x", Name: "x", CreatedAt: time.Now().UTC()}
	if err := s.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetTeam(ctx, "team_x"); err != nil || got.Name != "x" {
		t.Fatalf("after reopen GetTeam = %+v, %v", got, err)
	}
	head := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Read(head); err != nil {
		t.Fatal(err)
	}
	// Bytes 18 and 19 of the header are 2 in WAL mode (1 in rollback mode).
	if head[18] != 2 || head[19] != 2 {
		t.Errorf("database is not in WAL mode (header bytes %d %d)", head[18], head[19])
	}
}

func TestOpenRejectsQueryInPath(t *testing.T) {
	if _, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "x.db?mode=ro")); err == nil {
		t.Fatal("want an error for '?' in the path")
	}
}
