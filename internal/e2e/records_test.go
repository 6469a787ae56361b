package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// TestRequestLogOnSQLiteAndPostgres: every API call leaves one record
// (model, backend, tokens, TTFT, user, key id — never the key), readable
// by its own team only, filtered and paged; the records form a hash chain
// that `sovereign audit verify` checks, and changing or removing a stored
// row makes it fail at that row.
func TestRequestLogOnSQLiteAndPostgres(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			db, dsn := openDatabaseDSN(t, kind)
			e := newEnvWithDB(t, tinyStore(t, "tiny"), engine.Config{}, db)
			send := func(key, id string, body map[string]any) int {
				t.Helper()
				req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", bytes.NewReader(mustJSON(t, body)))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("X-Request-Id", id)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body) // the whole answer: a client that leaves is recorded as cancelled
				resp.Body.Close()
				return resp.StatusCode
			}
			chat := map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_tokens": 4, "user": "u1", "stream": true}
			if st := send(e.key, "req-log-ok", chat); st != 200 {
				t.Fatalf("chat: %d", st)
			}
			if st := send(e.key, "req-log-404", map[string]any{"model": "nope", "messages": []map[string]any{{"role": "user", "content": "hi"}}}); st != 404 {
				t.Fatalf("unknown model: %d", st)
			}
			if st := send("sk-sov-not-a-key", "req-log-401", chat); st != 401 {
				t.Fatalf("bad key: %d", st)
			}
			other := teamKey(t, e, "others")
			if st := send(other, "req-log-other", chat); st != 200 {
				t.Fatalf("other team's chat: %d", st)
			}
			// A reader of another team (a key of its own team, records:read).
			team := e.json("POST", "/v1/teams", map[string]any{"name": "readers"}, 201)
			otherReader := e.json("POST", "/v1/keys", map[string]any{"name": "r", "team_id": team["id"], "scopes": []string{"records:read"}}, 201)["key"].(string)

			// Records are written off the request path: wait for them.
			var rec map[string]any
			for deadline := time.Now().Add(5 * time.Second); ; {
				resp := e.request(e.key, "GET", "/v1/logs/req-log-ok", nil)
				if resp.StatusCode == 200 {
					json.NewDecoder(resp.Body).Decode(&rec)
					resp.Body.Close()
					break
				}
				resp.Body.Close()
				if time.Now().After(deadline) {
					t.Fatalf("no record after 5s: %d", resp.StatusCode)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if rec["object"] != "request_log" || rec["model"] != "tiny" || rec["backend"] != "local" || rec["status"] != 200.0 ||
				rec["route"] != "POST /v1/chat/completions" || rec["user"] != "u1" || rec["ttft_ms"] == nil ||
				rec["prompt_tokens"].(float64) == 0 || rec["completion_tokens"].(float64) == 0 || rec["client_ip"] != "127.0.0.1" ||
				len(rec["hash"].(string)) != 64 || !strings.HasPrefix(rec["key_id"].(string), "key_") {
				t.Fatalf("record: %v", rec)
			}
			if bytes.Contains(mustJSON(t, rec), []byte("sk-sov-")) {
				t.Fatalf("a key in a record: %v", rec)
			}
			page := e.json("GET", "/v1/logs?status=4xx", nil, 200)
			var ids []string
			for _, d := range page["data"].([]any) {
				m := d.(map[string]any)
				ids = append(ids, m["id"].(string)+"/"+m["error_code"].(string))
			}
			if !strings.Contains(strings.Join(ids, " "), "req-log-404/model_not_found") || !strings.Contains(strings.Join(ids, " "), "req-log-401/invalid_api_key") {
				t.Fatalf("4xx records: %v", ids)
			}
			if p := e.json("GET", "/v1/logs?model=tiny&user=u1&limit=1", nil, 200); len(p["data"].([]any)) != 1 || p["data"].([]any)[0].(map[string]any)["team_id"] == "" {
				t.Fatalf("filtered: %v", p)
			}
			for q, param := range map[string]string{"status=abc": "status", "limit=0": "limit", "since=-1": "since", "after=req-nope": "after"} {
				resp := e.request(e.key, "GET", "/v1/logs?"+q, nil)
				var body map[string]any
				json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if resp.StatusCode != 400 || body["error"].(map[string]any)["param"] != param {
					t.Errorf("%s: %d %v", q, resp.StatusCode, body)
				}
			}
			// A call refused for its scope is the key's call too: its
			// record names the key and team, so the team finds it.
			if st := send(otherReader, "req-log-403", chat); st != 403 {
				t.Fatalf("a records:read key's chat: %d", st)
			}
			var refused map[string]any
			for deadline := time.Now().Add(5 * time.Second); refused == nil; time.Sleep(50 * time.Millisecond) {
				resp := e.request(otherReader, "GET", "/v1/logs/req-log-403", nil)
				if resp.StatusCode == 200 {
					json.NewDecoder(resp.Body).Decode(&refused)
				} else if time.Now().After(deadline) {
					t.Fatalf("the refused call's record, read by its own team: %d", resp.StatusCode)
				}
				resp.Body.Close()
			}
			if refused["team_id"] != team["id"] || !strings.HasPrefix(refused["key_id"].(string), "key_") || refused["error_code"] != "permission_denied" {
				t.Fatalf("the refused call's record: %v", refused)
			}
			// Another team reads none of this team's records.
			resp := e.request(otherReader, "GET", "/v1/logs/req-log-ok", nil)
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Fatalf("another team's record: %d", resp.StatusCode)
			}
			for _, d := range e.jsonWith(otherReader, "GET", "/v1/logs", nil, 200)["data"].([]any) {
				if id := d.(map[string]any)["id"]; id == "req-log-ok" || id == "req-log-404" {
					t.Fatalf("another team listed %v", id)
				}
			}
			// The export streams every record the list would page through.
			resp = e.request(e.key, "GET", "/v1/logs/export", nil)
			sc := bufio.NewScanner(resp.Body)
			lines := 0
			for sc.Scan() {
				lines++
			}
			resp.Body.Close()
			if resp.Header.Get("Content-Type") != "application/x-ndjson" || lines < 5 {
				t.Fatalf("export: %s, %d lines", resp.Header.Get("Content-Type"), lines)
			}

			// Usage from the same records: by model for this team, by team
			// for the admin; another team sees only its own.
			usage := e.json("GET", "/v1/usage?group_by=model", nil, 200)
			var tiny map[string]any
			for _, d := range usage["data"].([]any) {
				if m := d.(map[string]any); m["group"] == "tiny" {
					tiny = m
				}
			}
			if tiny == nil || tiny["requests"].(float64) < 1 || tiny["completion_tokens"].(float64) < 1 ||
				tiny["total_tokens"].(float64) != tiny["prompt_tokens"].(float64)+tiny["completion_tokens"].(float64) {
				t.Fatalf("usage by model: %v", usage)
			}
			byTeam := e.json("GET", "/v1/usage?group_by=team", nil, 200)["data"].([]any)
			if len(byTeam) < 2 {
				t.Fatalf("an admin's usage by team: %v", byTeam)
			}
			for _, d := range e.jsonWith(otherReader, "GET", "/v1/usage?group_by=team", nil, 200)["data"].([]any) {
				if g := d.(map[string]any)["group"]; g != team["id"] {
					t.Fatalf("another team's usage shows team %v", g)
				}
			}
			if day := e.json("GET", "/v1/usage?group_by=day", nil, 200)["data"].([]any); len(day) != 1 || day[0].(map[string]any)["group"] != time.Now().UTC().Format("2006-01-02") {
				t.Fatalf("usage by day: %v", day)
			}
			resp = e.request(e.key, "GET", "/v1/usage?group_by=planet", nil)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Fatalf("bad group_by: %d", resp.StatusCode)
			}

			// An inclusion proof of the record verifies against the root.
			proofObj := e.json("GET", "/v1/logs/req-log-ok/proof", nil, 200)
			var in records.Inclusion
			b, _ := json.Marshal(proofObj)
			json.Unmarshal(b, &in)
			if err := records.VerifyInclusion(in); err != nil || in.TreeSize < 5 {
				t.Fatalf("inclusion proof %v: %v", proofObj, err)
			}
			resp = e.request(otherReader, "GET", "/v1/logs/req-log-ok/proof", nil)
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Fatalf("another team's proof: %d", resp.StatusCode)
			}

			// A stored checkpoint: listed, and a proof against it verifies.
			ctx := context.Background()
			cp, stored, err := records.TakeCheckpoint(ctx, db, time.Now())
			if err != nil || !stored || cp.Size < 5 {
				t.Fatalf("checkpoint: %+v %v %v", cp, stored, err)
			}
			// Records still being written may make a second one; once the
			// log is still, no more are stored.
			for i := 0; ; i++ {
				next, again, err := records.TakeCheckpoint(ctx, db, time.Now())
				if err != nil || (again && next.LastSeq <= cp.LastSeq) || i > 50 {
					t.Fatalf("checkpoint %d: %+v %v %v", i, next, again, err)
				}
				if !again {
					break
				}
				cp = next
				time.Sleep(20 * time.Millisecond)
			}
			cps := e.jsonWith(e.key, "GET", "/v1/logs/checkpoints", nil, 200)["data"].([]any)
			if len(cps) < 1 || cps[0].(map[string]any)["root"] != cp.Root {
				t.Fatalf("checkpoints: %v", cps)
			}
			pr := e.jsonWith(e.key, "GET", fmt.Sprintf("/v1/logs/req-log-ok/proof?checkpoint=%d", cp.ID), nil, 200)
			var inCP records.Inclusion
			pb, _ := json.Marshal(pr)
			json.Unmarshal(pb, &inCP)
			if inCP.Root != cp.Root || records.VerifyInclusion(inCP) != nil {
				t.Fatalf("proof in the checkpoint: %v", pr)
			}
			e.jsonWith(e.key, "GET", "/v1/logs/req-log-ok/proof?checkpoint=999", nil, 400)

			// The chain holds; then a changed row and a removed row break it there.
			if n, br, err := records.Verify(ctx, db); err != nil || br != nil || n < 5 {
				t.Fatalf("verify: %d %v %v", n, br, err)
			}
			audit := func() (string, error) {
				out, err := exec.Command(testutil.Binary(t), "audit", "verify", "--database-url", dsn).CombinedOutput()
				return string(out), err
			}
			if out, err := audit(); err != nil || !strings.Contains(out, "OK:") || !strings.Contains(out, "Merkle root") {
				t.Fatalf("audit verify on an intact chain: %v\n%s", err, out)
			}
			driver := map[string]string{"sqlite": "sqlite", "postgres": "pgx"}[kind]
			raw, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			var seq int64
			if err := raw.QueryRow(`SELECT seq FROM request_logs WHERE id = 'req-log-404'`).Scan(&seq); err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(`UPDATE request_logs SET status = 200 WHERE seq = ` + strconv.FormatInt(seq, 10)); err != nil {
				t.Fatal(err)
			}
			if _, br, _ := records.Verify(ctx, db); br == nil || br.Seq != seq || br.ID != "req-log-404" {
				t.Fatalf("a changed row: %+v, want a break at %d", br, seq)
			}
			if out, err := audit(); err == nil || !strings.Contains(out, "req-log-404") {
				t.Fatalf("audit verify on a changed row: %v\n%s", err, out)
			}
			if _, err := raw.Exec(`DELETE FROM request_logs WHERE seq = ` + strconv.FormatInt(seq, 10)); err != nil {
				t.Fatal(err)
			}
			var next int64
			raw.QueryRow(`SELECT MIN(seq) FROM request_logs WHERE seq > ` + strconv.FormatInt(seq, 10)).Scan(&next)
			if _, br, _ := records.Verify(ctx, db); br == nil || br.Seq != next {
				t.Fatalf("a removed row: %+v, want a break at %d", br, next)
			}

			// A consistent rewrite — every hash recomputed from the first
			// record on — makes the chain verify again; the checkpoint
			// taken before does not.
			var all []records.Record
			db.ChainRecords(ctx, 0, func(r records.Record) bool { all = append(all, r); return true })
			prev := ""
			for _, r := range all {
				r.PrevHash, r.Hash = prev, r.ComputeHash(prev)
				if _, err := raw.Exec(fmt.Sprintf(`UPDATE request_logs SET prev_hash = '%s', hash = '%s' WHERE seq = %d`, r.PrevHash, r.Hash, r.Seq)); err != nil {
					t.Fatal(err)
				}
				prev = r.Hash
			}
			if _, br, err := records.Verify(ctx, db); br != nil || err != nil {
				t.Fatalf("the rewritten chain: %+v %v", br, err)
			}
			if _, _, cbr, err := records.VerifyCheckpoints(ctx, db, 10); err != nil || cbr == nil || cbr.Checkpoint.ID != cp.ID {
				t.Fatalf("the checkpoint against a rewritten chain: %+v %v", cbr, err)
			}
			if out, err := audit(); err == nil || !strings.Contains(out, "checkpoint") {
				t.Fatalf("audit verify on a rewritten chain: %v\n%s", err, out)
			}
		})
	}
}
