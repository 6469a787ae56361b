package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// The suite needs a server: `make test` starts one with
// scripts/postgres-test.sh and sets SOVEREIGN_TEST_POSTGRES_URL.
func TestStore(t *testing.T) {
	storetest.RequirePostgres(t)
	storetest.Run(t, func(t *testing.T) auth.KeyStore {
		s, err := postgres.Open(context.Background(), storetest.PostgresURL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestConcurrentOpen starts several "replicas" on one empty schema at
// once: the migration lock must let exactly one apply the migrations and
// the others find them applied.
func TestConcurrentOpen(t *testing.T) {
	url := storetest.PostgresURL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if _, err := s.CountKeys(context.Background()); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestReopen checks that opening a migrated database again is a no-op
// that keeps the data.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	svc := auth.NewService(s)
	secret, created, err := svc.Bootstrap(ctx, "")
	if err != nil || !created {
		t.Fatalf("Bootstrap: %v %v", created, err)
	}
	s.Close()

	s, err = postgres.Open(ctx, url)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.NewService(s).Authenticate(ctx, secret); err != nil {
		t.Fatalf("bootstrap key after reopen: %v", err)
	}
}

// TestRecordChainAcrossServers appends request records from four stores
// on one database at once, as four servers would: the advisory lock makes
// them one chain, which verifies.
func TestRecordChainAcrossServers(t *testing.T) {
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	var stores []*postgres.Store
	for range 4 {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*20)
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				batch := []records.Record{{ID: fmt.Sprintf("r%d-%d-a", i, j), Time: time.Now(), Status: 200}, {ID: fmt.Sprintf("r%d-%d-b", i, j), Time: time.Now(), Status: 500}}
				if err := s.AppendRecords(ctx, batch); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, br, err := records.Verify(ctx, stores[0])
	if err != nil || br != nil || n != 4*20*2 {
		t.Fatalf("verify: %d records, %v, %v", n, br, err)
	}
}
