package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/store"
)

// openDatabase opens a fresh database of kind "sqlite" or "postgres" (a new
// database on the server in SOVEREIGN_TEST_POSTGRES_URL, which `make test`
// starts).
func openDatabase(t testing.TB, kind string) store.Store {
	st, _ := openDatabaseDSN(t, kind)
	return st
}

// openDatabaseDSN is openDatabase, also returning the database's address
// (a file path or a postgres:// URL) for tests that reach under the store.
func openDatabaseDSN(t testing.TB, kind string) (store.Store, string) {
	t.Helper()
	ctx := context.Background()
	if kind == "sqlite" {
		path := filepath.Join(t.TempDir(), "sovereign.db")
		st, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, path
	}
	base := os.Getenv("SOVEREIGN_TEST_POSTGRES_URL")
	if base == "" {
		t.Fatal("SOVEREIGN_TEST_POSTGRES_URL is not set: run `make test`, which starts PostgreSQL (scripts/postgres-test.sh)")
	}
	if base == "skip" {
		t.Skip("SOVEREIGN_TEST_POSTGRES_URL=skip: PostgreSQL tests skipped on purpose")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "e2e_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	u, _ := url.Parse(base)
	u.Path = "/" + name
	st, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		if a, err := sql.Open("pgx", base); err == nil {
			a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			a.Close()
		}
	})
	return st, u.String()
}

// TestKeysAPIOnSQLiteAndPostgres runs the same key and team scenario
// through the HTTP API on both stores: create, scopes, team isolation,
// revoke, rotate with a grace period, expiry.
func TestKeysAPIOnSQLiteAndPostgres(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnvWithDB(t, tinyStore(t, "tiny"), engine.Config{}, openDatabase(t, kind))
			admin := e.key
			call := func(key, method, path string, body any) (int, map[string]any) {
				t.Helper()
				resp := e.request(key, method, path, body)
				defer resp.Body.Close()
				var out map[string]any
				json.NewDecoder(resp.Body).Decode(&out)
				return resp.StatusCode, out
			}
			chat := map[string]any{"model": "tiny", "max_tokens": 2, "messages": []map[string]string{{"role": "user", "content": "hi"}}}

			code, team := call(admin, "POST", "/v1/teams", map[string]any{"name": "research"})
			if code != 201 || team["object"] != "team" {
				t.Fatalf("create team: %d %v", code, team)
			}
			if code, _ := call(admin, "POST", "/v1/teams", map[string]any{"name": "research"}); code != 409 {
				t.Fatalf("duplicate team: %d, want 409", code)
			}
			teamID := team["id"].(string)
			code, k := call(admin, "POST", "/v1/keys", map[string]any{"name": "app", "team_id": teamID, "scopes": []string{"inference", "keys:read"}})
			if code != 201 || k["key"] == nil || k["team_id"] != teamID {
				t.Fatalf("create key: %d %v", code, k)
			}
			appKey, appID := k["key"].(string), k["id"].(string)
			if code, _ := call(appKey, "POST", "/v1/chat/completions", chat); code != 200 {
				t.Fatalf("inference with new key: %d", code)
			}
			if code, body := call(appKey, "GET", "/v1/models", nil); code != 403 {
				t.Fatalf("key without models:read listed models: %d %v", code, body)
			}
			// keys:read sees its own team only; the secret is never listed.
			code, list := call(appKey, "GET", "/v1/keys", nil)
			data, _ := list["data"].([]any)
			if code != 200 || len(data) != 1 || data[0].(map[string]any)["key"] != nil {
				t.Fatalf("team key list: %d %v", code, list)
			}
			code, adminKeys := call(admin, "GET", "/v1/keys", nil)
			if all, _ := adminKeys["data"].([]any); code != 200 || len(all) != 2 {
				t.Fatalf("admin key list: %d %v", code, adminKeys)
			}
			adminID := adminKeys["data"].([]any)[0].(map[string]any)["id"].(string)
			if code, _ := call(appKey, "GET", "/v1/keys/"+adminID, nil); code != 404 {
				t.Fatalf("another team's key visible: %d", code)
			}
			// Rotate: the new key works, the old one keeps working for the grace period.
			code, rot := call(admin, "POST", "/v1/keys/"+appID+"/rotate", map[string]any{"grace_seconds": 3600})
			if code != 201 || rot["key"] == nil {
				t.Fatalf("rotate: %d %v", code, rot)
			}
			newKey := rot["key"].(string)
			for _, key := range []string{newKey, appKey} {
				if code, _ := call(key, "POST", "/v1/chat/completions", chat); code != 200 {
					t.Fatalf("after rotation a key got %d", code)
				}
			}
			// Revoke: 401 at once.
			if code, _ := call(admin, "DELETE", "/v1/keys/"+rot["id"].(string), nil); code != 200 {
				t.Fatalf("revoke: %d", code)
			}
			if code, body := call(newKey, "POST", "/v1/chat/completions", chat); code != 401 || errCode(body) != "invalid_api_key" {
				t.Fatalf("revoked key: %d %v", code, body)
			}
			// A revoked key has no successor to give: 409, not 500.
			if code, body := call(admin, "POST", "/v1/keys/"+rot["id"].(string)+"/rotate", nil); code != 409 || errCode(body) != "conflict" {
				t.Fatalf("rotating a revoked key: %d %v", code, body)
			}
			// Rotate with grace 0: the old key ends at once.
			code, now := call(admin, "POST", "/v1/keys", map[string]any{"name": "now", "scopes": []string{"inference"}})
			if code != 201 {
				t.Fatalf("key: %d %v", code, now)
			}
			if code, _ := call(now["key"].(string), "POST", "/v1/chat/completions", chat); code != 200 {
				t.Fatalf("before rotation: %d", code)
			}
			if code, rot := call(admin, "POST", "/v1/keys/"+now["id"].(string)+"/rotate", map[string]any{"grace_seconds": 0}); code != 201 {
				t.Fatalf("rotate with grace 0: %d %v", code, rot)
			}
			if code, body := call(now["key"].(string), "POST", "/v1/chat/completions", chat); code != 401 {
				t.Fatalf("the old key after a rotation with grace 0: %d %v", code, body)
			}
			// Expiry.
			code, short := call(admin, "POST", "/v1/keys", map[string]any{"name": "short", "scopes": []string{"inference"}, "expires_in": 1})
			if code != 201 {
				t.Fatalf("short key: %d %v", code, short)
			}
			time.Sleep(1500 * time.Millisecond)
			if code, body := call(short["key"].(string), "POST", "/v1/chat/completions", chat); code != 401 {
				t.Fatalf("expired key: %d %v", code, body)
			}
			if code, body := call(admin, "POST", "/v1/keys/"+short["id"].(string)+"/rotate", nil); code != 409 || errCode(body) != "conflict" {
				t.Fatalf("rotating an expired key: %d %v", code, body)
			}
			if code, _ := call(admin, "POST", "/v1/keys", map[string]any{"name": "x", "scopes": []string{"root"}}); code != 400 {
				t.Fatalf("unknown scope accepted: %d", code)
			}
		})
	}
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}
