package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/upstream/upstreamtest"
)

// teamWithKey creates a team and an inference key in it.
func teamWithKey(t *testing.T, e *env, name string, scopes ...string) (teamID, key string) {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{"inference"}
	}
	team := e.json("POST", "/v1/teams", map[string]any{"name": name}, 201)
	k := e.json("POST", "/v1/keys", map[string]any{"name": name, "team_id": team["id"], "scopes": scopes}, 201)
	return team["id"].(string), k["key"].(string)
}

// limitsOf maps GET /v1/limits by scope/name.
func limitsOf(t *testing.T, e *env, key string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, l := range e.jsonWith(key, "GET", "/v1/limits", nil, 200)["data"].([]any) {
		m := l.(map[string]any)
		out[m["scope"].(string)+"/"+m["name"].(string)] = m
	}
	return out
}

// TestLimitsOnOneServer: rules set through the admin API govern a team's
// requests on a local model — headers on every response, the day's token
// budget counting down by the real usage after each call, 429s with an
// honest Retry-After — and another team sees none of it.
func TestLimitsOnOneServer(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	teamA, keyA := teamWithKey(t, e, "limited")
	_, keyB := teamWithKey(t, e, "free")

	// Only admins set rules; a bad one is a 400 naming the field.
	e.jsonWith(keyA, "PUT", "/v1/limits/rules/team/"+teamA, map[string]any{"requests_per_minute": 1}, 403)
	if out := e.json("PUT", "/v1/limits/rules/team/"+teamA, map[string]any{"tokens_per_day": -5}, 400); errParam(out) != "tokens_per_day" {
		t.Fatalf("negative limit: %v", out)
	}
	if out := e.json("PUT", "/v1/limits/rules/user/"+teamA, map[string]any{"tokens_per_day": 5}, 400); errParam(out) != "scope" {
		t.Fatalf("bad scope: %v", out)
	}
	if out := e.json("PUT", "/v1/limits/rules/team/"+teamA, map[string]any{"tokens_per_hour": 5}, 400); errParam(out) != "tokens_per_hour" {
		t.Fatalf("unknown field: %v", out)
	}
	const perDay = 400
	rule := e.json("PUT", "/v1/limits/rules/team/"+teamA, map[string]any{"requests_per_minute": 100, "tokens_per_minute": 300, "tokens_per_day": perDay}, 200)
	if rule["source"] != "api" || rule["tokens_per_day"].(float64) != perDay {
		t.Fatalf("rule: %v", rule)
	}

	chat := func(key string, maxTokens int) (*http.Response, map[string]any) {
		resp := e.request(key, "POST", "/v1/chat/completions", map[string]any{"model": "tiny", "max_tokens": maxTokens, "temperature": 0,
			"messages": []map[string]any{{"role": "user", "content": "count"}}})
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	// More than the per-minute token limit at once can never fit.
	resp, out := chat(keyA, 350)
	if resp.StatusCode != 429 || errCode(out) != "rate_limit_exceeded" || resp.Header.Get("Retry-After") != "" ||
		resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "" || resp.Header.Get("x-should-retry") != "false" {
		t.Fatalf("oversized request: %d %v Retry-After=%q", resp.StatusCode, out, resp.Header.Get("Retry-After"))
	}
	left := float64(perDay)
	for i := 0; i < 2; i++ {
		resp, out = chat(keyA, 8)
		if resp.StatusCode != 200 {
			t.Fatalf("chat %d: %d %v", i, resp.StatusCode, out)
		}
		for _, h := range []string{"Limit-Requests", "Remaining-Requests", "Reset-Requests", "Limit-Tokens", "Remaining-Tokens", "Reset-Tokens"} {
			if resp.Header.Get("X-Ratelimit-"+h) == "" {
				t.Fatalf("chat %d: no x-ratelimit-%s header", i, strings.ToLower(h))
			}
		}
		if resp.Header.Get("X-Ratelimit-Limit-Tokens") != "300" {
			t.Fatalf("the token headers describe %s, want the per-minute limit", resp.Header.Get("X-Ratelimit-Limit-Tokens"))
		}
		// The day's budget went down by exactly what the call used.
		u := out["usage"].(map[string]any)
		left -= u["total_tokens"].(float64)
		day := limitsOf(t, e, keyA)["team/tokens_per_day"]
		if day["remaining"].(float64) != left {
			t.Fatalf("after chat %d (usage %v): %v tokens left today, want %v", i, u, day["remaining"], left)
		}
	}
	// Exhaust the day: a budget is a quota, retried after midnight UTC.
	e.json("PUT", "/v1/limits/rules/team/"+teamA, map[string]any{"tokens_per_day": int(perDay - left)}, 200)
	resp, out = chat(keyA, 8)
	if resp.StatusCode != 429 || errCode(out) != "quota_exceeded" {
		t.Fatalf("over the day's budget: %d %v", resp.StatusCode, out)
	}
	now := time.Now().UTC()
	untilMidnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now)
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < int(untilMidnight.Seconds())-5 || ra > int(untilMidnight.Seconds())+5 {
		t.Fatalf("Retry-After %q, want about %v", resp.Header.Get("Retry-After"), untilMidnight)
	}

	// Team B is not governed and sees none of team A's limits.
	resp, out = chat(keyB, 4)
	if resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Limit-Tokens") != "" {
		t.Fatalf("team B: %d %v %v", resp.StatusCode, out, resp.Header)
	}
	if l := limitsOf(t, e, keyB); len(l) != 0 {
		t.Fatalf("team B sees limits %v", l)
	}
	rules := e.json("GET", "/v1/limits/rules", nil, 200)["data"].([]any)
	if len(rules) != 1 {
		t.Fatalf("rules: %v", rules)
	}
	e.json("DELETE", "/v1/limits/rules/team/"+teamA, nil, 200)
	e.json("DELETE", "/v1/limits/rules/team/"+teamA, nil, 404)
	if resp, out = chat(keyA, 4); resp.StatusCode != 200 {
		t.Fatalf("after the rule was removed: %d %v", resp.StatusCode, out)
	}
}

func errParam(body map[string]any) string {
	if e, ok := body["error"].(map[string]any); ok {
		p, _ := e["param"].(string)
		return p
	}
	return ""
}

// auditEvents collects audit.triggered events from the bus.
func (e *env) auditEvents(within time.Duration, n int) []policy.Decision {
	e.t.Helper()
	var out []policy.Decision
	deadline := time.After(within)
	for len(out) < n {
		select {
		case ev := <-e.sub.C:
			if ev.Type == policy.AuditTriggered {
				out = append(out, ev.Data.(policy.Decision))
			}
		case <-deadline:
			e.t.Fatalf("%d audit.triggered events within %s, want %d", len(out), within, n)
		}
	}
	return out
}

// TestPolicies runs the policy engine end to end on an upstream model: a
// deny never reaches the model, input redaction reaches it redacted, a
// streamed answer is redacted even when a match is split across chunks, a
// flag is recorded and announced, decisions hold no matched text, and
// another team sees none of them.
func TestPolicies(t *testing.T) {
	up := upstreamtest.New(t, "p")
	spec := upstreamSpec("up", up.BaseURL())
	spec.Tags = []string{"us"}
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{spec})
	teamA, keyA := teamWithKey(t, e, "governed")
	_, readerB := teamWithKey(t, e, "others", "inference", "records:read")
	readerA := e.json("POST", "/v1/keys", map[string]any{"name": "auditor", "team_id": teamA, "scopes": []string{"records:read"}}, 201)["key"].(string)

	// Validation points at the rule and the CEL position.
	bad := map[string]any{"name": "bad", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{{"name": "r", "stage": "input", "when": `model == "x" && nosuch > 1`, "action": "deny"}}}
	out := e.json("POST", "/v1/policies", bad, 400)
	if errParam(out) != "rules[0].when" || !strings.Contains(out["error"].(map[string]any)["message"].(string), "1:") {
		t.Fatalf("bad CEL: %v", out)
	}
	e.jsonWith(keyA, "POST", "/v1/policies", bad, 403)

	// Data residency: the team may only use models tagged eu.
	residency := e.json("POST", "/v1/policies", map[string]any{"name": "eu-only", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{{"name": "residency", "stage": "input", "when": `!("eu" in model_tags)`, "action": "deny", "reason": "EU data stays on EU models"}}}, 201)
	before := up.Requests.Load()
	resp := e.request(keyA, "POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), `"policy_violation"`) ||
		!strings.Contains(string(body), `"policy":"eu-only"`) || !strings.Contains(string(body), `"rule":"residency"`) {
		t.Fatalf("denied request: %d %s", resp.StatusCode, body)
	}
	if up.Requests.Load() != before {
		t.Fatal("a denied request reached the model")
	}
	if d := e.auditEvents(5*time.Second, 1)[0]; d.Action != "deny" || d.Rule != "residency" || d.TeamID != teamA {
		t.Fatalf("the deny's audit event: %+v", d)
	}
	e.json("DELETE", "/v1/policies/"+residency["id"].(string), nil, 200)

	// PII: emails are redacted on the way in and out, cards are flagged.
	pol := e.json("POST", "/v1/policies", map[string]any{"name": "pii", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{
			{"name": "redact-email-in", "stage": "input", "when": `"email" in pii`, "action": "redact", "redact": []string{"email"}},
			{"name": "flag-card", "stage": "input", "when": `"card" in pii`, "action": "flag", "reason": "card number sent"},
			{"name": "redact-email-out", "stage": "output", "when": `"email" in pii`, "action": "redact", "redact": []string{"email"}},
		}}, 201)
	// Another deployment-wide policy that does not match must not matter.
	e.json("POST", "/v1/policies", map[string]any{"name": "long", "scope": "deployment", "enabled": true,
		"rules": []map[string]any{{"name": "max", "stage": "input", "when": `max_tokens > 100000`, "action": "deny"}}}, 201)

	secret := "jane.doe@example.com"
	resp = e.request(keyA, "POST", "/v1/chat/completions", map[string]any{"model": "up",
		"messages": []map[string]any{{"role": "user", "content": "mail " + secret + " card 4111 1111 1111 1111"}}})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("redacted request: %d", resp.StatusCode)
	}
	sent := string(up.LastRawBody())
	if strings.Contains(sent, secret) || !strings.Contains(sent, "[REDACTED:email]") || !strings.Contains(sent, "4111 1111 1111 1111") {
		t.Fatalf("the upstream got %s", sent)
	}
	flags := e.auditEvents(5*time.Second, 1)
	if flags[0].Rule != "flag-card" || flags[0].Action != "flag" || len(flags[0].Spans) != 1 || flags[0].Spans[0].Kind != "card" {
		t.Fatalf("audit event: %+v", flags[0])
	}

	// The team captures prompts and outputs from now on: records keep
	// them, redacted as the model and the client saw them.
	e.jsonWith(keyA, "PATCH", "/v1/teams/"+teamA, map[string]any{"capture": true}, 403)
	e.json("PATCH", "/v1/teams/team_nope", map[string]any{"capture": true}, 404)
	e.json("PATCH", "/v1/teams/"+teamA, map[string]any{}, 400)
	if tm := e.json("PATCH", "/v1/teams/"+teamA, map[string]any{"capture": true}, 200); tm["capture"] != true {
		t.Fatalf("team: %v", tm)
	}

	// The answer streams back with an email split across chunks.
	events := []string{
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"mock","choices":[{"index":0,"delta":{"role":"assistant","content":"Write to jane.d"},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"mock","choices":[{"index":0,"delta":{"content":"oe@exam"},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"mock","choices":[{"index":0,"delta":{"content":"ple.com please."},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"mock","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: [DONE]`,
	}
	up.SetScript(&upstreamtest.Script{Events: events})
	req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(`{"model": "up", "stream": true, "messages": [{"role": "user", "content": "who is `+secret+`?"}]}`))
	req.Header.Set("Authorization", "Bearer "+keyA)
	req.Header.Set("X-Request-Id", "req-captured")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	chunks, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	text, _ := streamText(chunks)
	raw, _ := json.Marshal(chunks)
	if !done || text != "Write to [REDACTED:email] please." || strings.Contains(string(raw), "jane") || strings.Contains(string(raw), "exam") {
		t.Fatalf("streamed answer %q (done %v): %s", text, done, raw)
	}
	// Not streamed: the same.
	up.SetScript(&upstreamtest.Script{Body: `{"id":"x","object":"chat.completion","created":7,"model":"mock","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Mail ` + secret + `."}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`})
	answer := e.jsonWith(keyA, "POST", "/v1/chat/completions", map[string]any{"model": "up", "messages": []map[string]any{{"role": "user", "content": "who?"}}}, 200)
	if got := answer["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "Mail [REDACTED:email]." {
		t.Fatalf("answer: %v", got)
	}
	up.SetScript(nil)

	// The captured record: prompt and output, both redacted.
	var rec map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := e.request(readerA, "GET", "/v1/logs/req-captured", nil)
		json.NewDecoder(r.Body).Decode(&rec)
		r.Body.Close()
		if r.StatusCode == 200 || time.Now().After(deadline) {
			break
		}
	}
	if rec["prompt"] != "who is [REDACTED:email]?\n" || rec["output"] != "Write to [REDACTED:email] please." {
		t.Fatalf("captured record: prompt %q output %q", rec["prompt"], rec["output"])
	}

	// Decisions: the team's auditor sees them, without the matched text;
	// another team sees none, and another team's id is a 404.
	var ds []any
	for deadline := time.Now().Add(5 * time.Second); ; {
		ds = e.jsonWith(readerA, "GET", "/v1/policy_decisions?policy_id="+pol["id"].(string), nil, 200)["data"].([]any)
		if len(ds) >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ds) != 5 {
		t.Fatalf("decisions: %v", ds)
	}
	all, _ := json.Marshal(ds)
	if strings.Contains(string(all), "jane") || strings.Contains(string(all), "4111") {
		t.Fatalf("a decision holds the matched text: %s", all)
	}
	if other := e.jsonWith(readerB, "GET", "/v1/policy_decisions", nil, 200)["data"].([]any); len(other) != 0 {
		t.Fatalf("another team sees %v", other)
	}
	id := ds[0].(map[string]any)["id"].(string)
	e.jsonWith(readerA, "GET", "/v1/policy_decisions/"+id, nil, 200)
	e.jsonWith(readerB, "GET", "/v1/policy_decisions/"+id, nil, 404)
	if out := e.jsonWith(readerA, "GET", "/v1/policy_decisions?after=pdec_nope", nil, 400); errParam(out) != "after" {
		t.Fatalf("bad cursor: %v", out)
	}
	if out := e.jsonWith(readerA, "GET", "/v1/policy_decisions?limit=0", nil, 400); errParam(out) != "limit" {
		t.Fatalf("bad limit: %v", out)
	}

	// A dry run stores nothing.
	stored := len(e.jsonWith(readerA, "GET", "/v1/policy_decisions", nil, 200)["data"].([]any))
	tried := e.json("POST", "/v1/policies/test", map[string]any{"policy_id": pol["id"], "input": map[string]any{"input": "reach me at a.b@example.org"}}, 200)
	if tried["action"] != "redact" || tried["redacted_text"] != "reach me at [REDACTED:email]" {
		t.Fatalf("dry run: %v", tried)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(e.jsonWith(readerA, "GET", "/v1/policy_decisions", nil, 200)["data"].([]any)); n != stored {
		t.Fatalf("a dry run stored decisions: %d, was %d", n, stored)
	}
}

// TestResponsesStreamRedaction: a Responses API stream relayed from an
// upstream is redacted as it goes — an email split across deltas is never
// partly sent, the held-back text arrives as one more delta before
// output_text.done, sequence numbers stay consecutive, and the done and
// completed events carry the redacted text.
func TestResponsesStreamRedaction(t *testing.T) {
	up := upstreamtest.New(t, "r")
	spec := upstreamSpec("serving", up.BaseURL())
	spec.Capabilities = []string{"chat", "responses"}
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{spec})
	e.json("POST", "/v1/policies", map[string]any{"name": "no-email-out", "scope": "deployment",
		"rules": []map[string]any{{"name": "redact", "stage": "output", "when": `"email" in pii`, "action": "redact", "redact": []string{"email"}}}}, 201)
	const full = "Mail jane.doe@example.com now"
	events := []string{
		`event: response.created` + "\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_up","model":"mock","status":"in_progress"}}`,
		`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"m","output_index":0,"content_index":0,"delta":"Mail jane.d"}`,
		`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"m","output_index":0,"content_index":0,"delta":"oe@example.com"}`,
		`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":3,"item_id":"m","output_index":0,"content_index":0,"delta":" now"}`,
		`event: response.output_text.done` + "\n" + `data: {"type":"response.output_text.done","sequence_number":4,"item_id":"m","output_index":0,"content_index":0,"text":"` + full + `"}`,
		`event: response.completed` + "\n" + `data: {"type":"response.completed","sequence_number":5,"response":{"id":"resp_up","model":"mock","status":"completed","output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"` + full + `","annotations":[]}]}]}}`,
	}
	up.SetScript(&upstreamtest.Script{Events: events})
	resp := e.request(e.key, "POST", "/v1/responses", map[string]any{"model": "serving", "input": "who?", "stream": true})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(raw), "jane") || strings.Contains(string(raw), "example") {
		t.Fatalf("stream: %d\n%s", resp.StatusCode, raw)
	}
	var deltas strings.Builder
	var seqs []int
	var doneText, completedText string
	for _, block := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		var ev map[string]any
		for _, line := range strings.Split(block, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				json.Unmarshal([]byte(d), &ev)
			}
		}
		seqs = append(seqs, int(ev["sequence_number"].(float64)))
		switch ev["type"] {
		case "response.output_text.delta":
			deltas.WriteString(ev["delta"].(string))
		case "response.output_text.done":
			doneText = ev["text"].(string)
		case "response.completed":
			completedText = ev["response"].(map[string]any)["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
		}
	}
	want := "Mail [REDACTED:email] now"
	if deltas.String() != want || doneText != want || completedText != want {
		t.Fatalf("deltas %q, done %q, completed %q; want %q", deltas.String(), doneText, completedText, want)
	}
	for i, s := range seqs {
		if s != i {
			t.Fatalf("sequence numbers %v are not consecutive", seqs)
		}
	}
}

// TestPoliciesOnLocalGeneration: a local model's answer is governed on its
// native events by the generation service, not on the rendered bytes. The
// echoed prompt makes the answer hold an email: it is redacted whole and
// streamed, a deny over the whole answer is a 403 or the stream's error
// event, and the captured record keeps the answer as the client saw it.
func TestPoliciesOnLocalGeneration(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	teamA, keyA := teamWithKey(t, e, "local-governed")
	readerA := e.json("POST", "/v1/keys", map[string]any{"name": "auditor", "team_id": teamA, "scopes": []string{"records:read"}}, 201)["key"].(string)
	e.json("PATCH", "/v1/teams/"+teamA, map[string]any{"capture": true}, 200)
	e.json("POST", "/v1/policies", map[string]any{"name": "scrub", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{{"name": "redact-email-out", "stage": "output", "when": "true", "action": "redact", "redact": []string{"email"}}}}, 201)
	const secret = "jane.doe@example.com"
	body := map[string]any{"model": "tiny", "prompt": "mail " + secret + " now", "echo": true, "max_tokens": 3, "temperature": 0}

	var whole textCompletion
	resp := e.request(keyA, "POST", "/v1/completions", body)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || json.Unmarshal(raw, &whole) != nil || !strings.HasPrefix(whole.Choices[0].Text, "mail [REDACTED:email] now") || strings.Contains(string(raw), "jane") {
		t.Fatalf("whole answer: %d %s", resp.StatusCode, raw)
	}

	body["stream"] = true
	req, _ := http.NewRequest("POST", e.url+"/v1/completions", bytes.NewReader(mustJSON(t, body)))
	req.Header.Set("Authorization", "Bearer "+keyA)
	req.Header.Set("X-Request-Id", "req-local-captured")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	chunks, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	var streamed strings.Builder
	for _, c := range chunks {
		for _, ch := range c["choices"].([]any) {
			streamed.WriteString(ch.(map[string]any)["text"].(string))
		}
	}
	if !done || streamed.String() != whole.Choices[0].Text {
		t.Fatalf("streamed %q (done %v), whole %q", streamed.String(), done, whole.Choices[0].Text)
	}
	var rec map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := e.request(readerA, "GET", "/v1/logs/req-local-captured", nil)
		rec = map[string]any{}
		json.NewDecoder(r.Body).Decode(&rec)
		r.Body.Close()
		if r.StatusCode == 200 || time.Now().After(deadline) {
			break
		}
	}
	if rec["output"] != streamed.String() || rec["model"] != "tiny" || rec["backend"] != "local" {
		t.Fatalf("captured record: %v", rec)
	}

	// A deny over the whole answer.
	e.json("POST", "/v1/policies", map[string]any{"name": "no-mail", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{{"name": "no-mail", "stage": "output", "when": `output.contains("mail")`, "action": "deny", "reason": "no mail talk"}}}, 201)
	body["stream"] = false
	resp = e.request(keyA, "POST", "/v1/completions", body)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(raw), `"rule":"no-mail"`) {
		t.Fatalf("denied whole answer: %d %s", resp.StatusCode, raw)
	}
	body["stream"] = true
	resp = e.request(keyA, "POST", "/v1/completions", body)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"code":"policy_violation"`) || strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("denied stream: %d %s", resp.StatusCode, raw)
	}
}
