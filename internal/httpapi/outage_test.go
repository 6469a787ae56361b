package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/inference"
	_ "github.com/sovereign-ai/sovereign/internal/postgres" // classifies the driver's errors
)

// downStore is an auth.KeyStore over a map of keys that can be switched
// down: then every call fails with the error pgx gives for a server that
// refuses connections, wrapped as the store wraps it. Methods the tests
// do not reach are the nil embedded interface's (they panic).
type downStore struct {
	auth.KeyStore
	mu   sync.Mutex
	keys map[string]auth.Key // by string(hash)
	down atomic.Bool
	err  error
}

// refusedError is pgx's error for a PostgreSQL server nobody listens for.
func refusedError(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = pgconn.Connect(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=5")
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("connecting to %s: %v, want a ConnectError", addr, err)
	}
	return err
}

func (s *downStore) add(scopes ...auth.Scope) string {
	secret := auth.NewSecret()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("key_%d", len(s.keys))
	s.keys[string(auth.HashSecret(secret))] = auth.Key{ID: id, TeamID: "team_a", Hash: auth.HashSecret(secret), Scopes: scopes}
	return secret
}

func (s *downStore) fail(what string) error {
	if s.down.Load() {
		return fmt.Errorf("postgres: %s: %w", what, s.err)
	}
	return nil
}

func (s *downStore) GetKeyByHash(_ context.Context, h []byte) (auth.Key, error) {
	if err := s.fail("get key by hash"); err != nil {
		return auth.Key{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[string(h)]
	if !ok {
		return k, auth.ErrNotFound
	}
	return k, nil
}

func (s *downStore) UpdateKey(context.Context, string, auth.KeyUpdate) error {
	return s.fail("update key")
}

func (s *downStore) ListKeys(context.Context, string) ([]auth.Key, error) {
	if err := s.fail("list keys"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.Key
	for _, k := range s.keys {
		out = append(out, k)
	}
	return out, nil
}

// TestDatabaseOutage runs the real middleware and key service over a key
// store that goes down: keys used before the outage keep working (plain
// and streamed chat), a key not seen before and a route that needs the
// database get 503 database_unavailable with Retry-After — a streamed
// request too, before its first byte — and nothing is a 401 or a 500.
func TestDatabaseOutage(t *testing.T) {
	store := &downStore{keys: map[string]auth.Key{}, err: refusedError(t)}
	admin, unseen := store.add(auth.ScopeAdmin), store.add(auth.ScopeAdmin)
	keys := auth.NewService(store)
	// A cache TTL of 1 ns: every request asks the store, and meets the
	// outage (a negative TTL would disable the cache, and the grace).
	keys.CacheTTL = 1
	s := &Server{
		Models: fakeCatalog{backend: fakeBackend{complete: func(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
			return &sliceStream{evs: []inference.Event{{Text: "Hel"}, {Text: "lo"}, {Done: true, FinishReason: "stop", Usage: &inference.Usage{PromptTokens: 3, CompletionTokens: 2}}}}, nil
		}}},
		Auth: keys, Keys: keys,
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	chat := `{"model":"chat","messages":[{"role":"user","content":"hi"}]}`
	stream := `{"model":"chat","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if resp, body := do(t, srv, "POST", "/v1/chat/completions", admin, chat); resp.StatusCode != 200 {
		t.Fatalf("before the outage: %d %v", resp.StatusCode, body)
	}

	store.down.Store(true)
	wantDown := func(what string, resp *http.Response, body map[string]any) {
		t.Helper()
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != 503 || errCode(body) != "database_unavailable" || e["type"] != "server_error" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d %v Retry-After %q, want 503 database_unavailable with Retry-After", what, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
		if m, _ := e["message"].(string); strings.Contains(m, "127.0.0.1") || strings.Contains(m, "postgres") {
			t.Errorf("%s: the message shows the driver's text: %q", what, m)
		}
	}
	if resp, body := do(t, srv, "POST", "/v1/chat/completions", admin, chat); resp.StatusCode != 200 {
		t.Errorf("a key used before the outage: %d %v", resp.StatusCode, body)
	}
	resp, body := do(t, srv, "GET", "/v1/keys", admin, "")
	wantDown("GET /v1/keys", resp, body)
	resp, body = do(t, srv, "POST", "/v1/chat/completions", unseen, chat)
	wantDown("a key not seen before the outage", resp, body)
	resp, body = do(t, srv, "POST", "/v1/chat/completions", unseen, stream)
	wantDown("a streamed request with a key not seen before", resp, body)

	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(stream))
	req.Header.Set("Authorization", "Bearer "+admin)
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	var text bytes.Buffer
	sc := bufio.NewScanner(sresp.Body)
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
	}
	if sresp.StatusCode != 200 || !strings.Contains(text.String(), `"Hel"`) || !strings.Contains(text.String(), "[DONE]") {
		t.Errorf("a streamed request with a key used before the outage: %d\n%s", sresp.StatusCode, text.String())
	}

	store.down.Store(false)
	if resp, body := do(t, srv, "GET", "/v1/keys", unseen, ""); resp.StatusCode != 200 {
		t.Errorf("after the outage: %d %v", resp.StatusCode, body)
	}
}

// TestReadyz: every check's state is reported; a needed dependency down
// is 503 not_ready, one the server can do without is 200 degraded, and
// shutting down is not_ready whatever the checks say.
func TestReadyz(t *testing.T) {
	var dbDown, redisDown, stopping atomic.Bool
	check := func(down *atomic.Bool, msg string) func(context.Context) error {
		return func(context.Context) error {
			if down.Load() {
				return errors.New(msg)
			}
			return nil
		}
	}
	newServer := func(failOpen bool) *httptest.Server {
		s := &Server{
			Ready: func(context.Context) error {
				if stopping.Load() {
					return errors.New("shutting down")
				}
				return nil
			},
			ReadyChecks: []ReadyCheck{
				{Name: "database", Check: check(&dbDown, "connection refused")},
				{Name: "redis", Check: check(&redisDown, "redis down"), Degrades: failOpen, Impact: "limits"},
			},
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return srv
	}
	open, closed := newServer(true), newServer(false)
	for _, c := range []struct {
		name                    string
		db, redis, stop         bool
		srv                     *httptest.Server
		status                  int
		want, wantDB, wantRedis string
	}{
		{"all up", false, false, false, open, 200, "ready", "ok", "ok"},
		{"redis down, fail open", false, true, false, open, 200, "degraded", "ok", "unavailable"},
		{"redis down, fail closed", false, true, false, closed, 503, "not_ready", "ok", "unavailable"},
		{"database down", true, false, false, open, 503, "not_ready", "unavailable", "ok"},
		{"both down, fail open", true, true, false, open, 503, "not_ready", "unavailable", "unavailable"},
		{"shutting down", false, false, true, open, 503, "not_ready", "ok", "ok"},
	} {
		dbDown.Store(c.db)
		redisDown.Store(c.redis)
		stopping.Store(c.stop)
		resp, body := do(t, c.srv, "GET", "/readyz", "", "")
		checks, _ := body["checks"].(map[string]any)
		if resp.StatusCode != c.status || body["status"] != c.want || checks["database"] != c.wantDB || checks["redis"] != c.wantRedis {
			t.Errorf("%s: %d %v, want %d %s database %s redis %s", c.name, resp.StatusCode, body, c.status, c.want, c.wantDB, c.wantRedis)
		}
		if reason, _ := body["reason"].(string); (c.want == "ready") != (reason == "") {
			t.Errorf("%s: reason %q", c.name, reason)
		} else if strings.Contains(reason, "refused") || strings.Contains(reason, "redis down") {
			t.Errorf("%s: reason %q shows the driver's error to a caller without a key", c.name, reason)
		}
	}
}
