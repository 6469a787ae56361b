package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/events/eventstest"
)

// eventsServer serves the event stream from a bus on an in-memory log,
// for keys of two teams.
func eventsServer(t *testing.T) (*httptest.Server, *events.Bus, chan struct{}) {
	t.Helper()
	bus := events.New(events.Config{Store: &eventstest.Store{}, Poll: 50 * time.Millisecond})
	stop := make(chan struct{})
	keys := map[string]auth.Key{
		"sk-a-inf":   {ID: "key_ai", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeInference}},
		"sk-a-audit": {ID: "key_aa", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeInference, auth.ScopeRecordsRead}},
		"sk-b-audit": {ID: "key_ba", TeamID: "team_b", Scopes: []auth.Scope{auth.ScopeInference, auth.ScopeRecordsRead}},
		"sk-admin":   {ID: "key_ad", TeamID: "team_x", Scopes: []auth.Scope{auth.ScopeAdmin}},
	}
	s := &Server{
		Auth: fakeAuth{authenticate: func(ctx context.Context, secret string) (auth.Key, error) {
			if k, ok := keys[secret]; ok {
				return k, nil
			}
			return auth.Key{}, auth.ErrInvalidKey
		}},
		Events: bus, Stop: stop,
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		bus.Close()
	})
	return srv, bus, stop
}

// sseEvent is one received event; comment is set for a comment line.
type sseEvent struct {
	id, event, data, comment string
}

// eventStream is an open GET /v1/events.
type eventStream struct {
	t      *testing.T
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
	evs    chan sseEvent
}

// openEvents opens the stream; header is Last-Event-ID ("" for none).
func openEvents(t *testing.T, srv *httptest.Server, key, query, lastID string) (*eventStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events"+query, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return &eventStream{t: t, resp: resp}, resp
	}
	s := &eventStream{t: t, resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel, evs: make(chan sseEvent, 100)}
	go s.read()
	t.Cleanup(s.close)
	return s, resp
}

func (s *eventStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// read parses the stream into s.evs until it ends (then closes s.evs).
func (s *eventStream) read() {
	defer close(s.evs)
	var ev sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			s.evs <- ev
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		default:
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.event = v
			case "data":
				ev.data = v
			default:
				s.t.Errorf("unexpected line %q", line)
			}
		}
	}
}

// next returns the next event, skipping comments.
func (s *eventStream) next() sseEvent {
	s.t.Helper()
	if s.evs == nil {
		s.t.Fatalf("the stream did not open: status %d", s.resp.StatusCode)
	}
	for {
		select {
		case ev, ok := <-s.evs:
			if !ok {
				s.t.Fatal("the stream ended")
			}
			if ev.comment != "" && ev.id == "" {
				continue
			}
			return ev
		case <-time.After(5 * time.Second):
			s.t.Fatal("no event within 5 s")
		}
	}
}

// expect checks that the next events are exactly ids, in order, with a
// payload that matches the "id:" and "event:" lines.
func (s *eventStream) expect(ids ...string) {
	s.t.Helper()
	for _, id := range ids {
		ev := s.next()
		if ev.id != id {
			s.t.Fatalf("event %q (%s), want %q", ev.id, ev.event, id)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(ev.data), &obj); err != nil {
			s.t.Fatalf("data %q: %v", ev.data, err)
		}
		if obj["id"] != id || obj["object"] != "event" || obj["type"] != ev.event || obj["created_at"] == nil || obj["data"] == nil || len(obj) != 5 {
			s.t.Fatalf("payload %s for id %s event %s", ev.data, ev.id, ev.event)
		}
	}
}

// quiet checks that nothing but comments arrives for a while.
func (s *eventStream) quiet(d time.Duration) {
	s.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-s.evs:
			if ok && ev.id != "" {
				s.t.Fatalf("unexpected event %s (%s): %s", ev.id, ev.event, ev.data)
			}
			if !ok {
				return
			}
		case <-deadline:
			return
		}
	}
}

func TestEventStream(t *testing.T) {
	srv, bus, stop := eventsServer(t)
	ctx := context.Background()
	publish := func(team, typ string) string {
		ev, err := bus.Append(ctx, events.Event{Type: typ, Team: team, Data: map[string]string{"team": team}})
		if err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	a1 := publish("team_a", events.AuditTriggered)
	m2 := publish("", events.ModelReady)
	b3 := publish("team_b", events.AuditTriggered)
	a4 := publish("team_a", events.WorkflowRunSucceeded)
	a5 := publish("team_a", events.AuditTriggered)

	// Replay after Last-Event-ID: team A's events and the deployment's,
	// never team B's; then live.
	a, resp := openEvents(t, srv, "sk-a-audit", "", a1)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	a.expect(m2, a4, a5)
	b6 := publish("team_b", events.AuditTriggered)
	live := bus.PublishTeam("team_a", events.AuditTriggered, map[string]string{"rule": "flag"}) // through the writer
	a.expect(live.ID)
	m8 := publish("", events.ModelUnloaded)
	a.expect(m8)
	a.quiet(200 * time.Millisecond)

	// Team B: its own and the deployment's.
	b, _ := openEvents(t, srv, "sk-b-audit", "", m2)
	b.expect(b3, b6, m8)

	// A key without records:read does not get audit.triggered.
	inf, _ := openEvents(t, srv, "sk-a-inf", "?after="+a1, "")
	inf.expect(m2, a4, m8)

	// Types filter; Last-Event-ID wins over ?after (an EventSource
	// reconnects to the same URL with the header).
	typed, _ := openEvents(t, srv, "sk-a-audit", "?types=model.ready,model.unloaded&after="+a5, a1)
	typed.expect(m2, m8)

	// The admin follows every team; team_id narrows.
	adm, _ := openEvents(t, srv, "sk-admin", "", a4)
	adm.expect(a5, b6, live.ID, m8)
	nar, _ := openEvents(t, srv, "sk-admin", "?team_id=team_b", m2)
	nar.expect(b3, b6, m8)

	// Without a resume point the stream starts now.
	now, _ := openEvents(t, srv, "sk-a-audit", "", "")
	a9 := publish("team_a", events.DocumentReady)
	now.expect(a9)
	a.expect(a9)

	// A reconnect after the last event seen misses nothing and repeats
	// nothing, across the replay-to-live switch.
	a.close()
	a10 := publish("team_a", events.DocumentFailed)
	again, _ := openEvents(t, srv, "sk-a-audit", "", a9)
	a11 := publish("team_a", events.DocumentReady)
	again.expect(a10, a11)

	// Server shutdown ends the streams.
	close(stop)
	select {
	case _, ok := <-again.evs:
		for ok {
			_, ok = <-again.evs
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end at shutdown")
	}
}

func TestEventStreamErrors(t *testing.T) {
	srv, bus, _ := eventsServer(t)
	evA, err := bus.Append(context.Background(), events.Event{Type: events.AuditTriggered, Team: "team_a"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, key, query, last string
		status                 int
		code, param            string
	}{
		{"unknown Last-Event-ID", "sk-a-audit", "", "evt_nope", 400, "invalid_request_error", "Last-Event-ID"},
		{"unknown after", "sk-a-audit", "?after=evt_nope", "", 400, "invalid_request_error", "after"},
		{"another team's event", "sk-b-audit", "", evA.ID, 400, "invalid_request_error", "Last-Event-ID"},
		{"unknown type", "sk-a-audit", "?types=model.ready,model.exploded", "", 400, "invalid_request_error", "types"},
		{"empty types", "sk-a-audit", "?types=,", "", 400, "invalid_request_error", "types"},
		{"audit without records:read", "sk-a-inf", "?types=audit.triggered", "", 403, "permission_denied", "types"},
		{"another team", "sk-a-audit", "?team_id=team_b", "", 400, "invalid_request_error", "team_id"},
		{"no key", "", "", "", 401, "missing_api_key", ""},
	}
	for _, c := range cases {
		_, resp := openEvents(t, srv, c.key, c.query, c.last)
		var body map[string]map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != c.status || body["error"]["code"] != c.code || (c.param != "" && body["error"]["param"] != c.param) {
			t.Errorf("%s: %d %v, want %d %s param %q", c.name, resp.StatusCode, body, c.status, c.code, c.param)
		}
	}
	// Without an event log the route is not there.
	s := &Server{Auth: fakeAuth{authenticate: func(context.Context, string) (auth.Key, error) {
		return auth.Key{TeamID: "t", Scopes: []auth.Scope{auth.ScopeInference}}, nil
	}}}
	plain := httptest.NewServer(s.Handler())
	defer plain.Close()
	if _, resp := openEvents(t, plain, "k", "", ""); resp.StatusCode != 404 {
		t.Fatalf("without a log: %d", resp.StatusCode)
	}
}

func TestEventStreamKeepAlive(t *testing.T) {
	saved := keepAlive
	keepAlive = 30 * time.Millisecond
	defer func() { keepAlive = saved }()
	srv, _, _ := eventsServer(t)
	s, _ := openEvents(t, srv, "sk-a-audit", "", "")
	select {
	case ev := <-s.evs:
		if ev.comment != "keep-alive" {
			t.Fatalf("%+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no keep-alive")
	}
}
