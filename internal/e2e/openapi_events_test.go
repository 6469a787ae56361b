package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// The event stream is checked live by TestOpenAPIEventsMatch.
func init() { pendingLiveChecks = append(pendingLiveChecks, "streamEvents") }

// specStream is an open GET /v1/events whose events are parsed as they
// arrive; finish validates the response against the document.
type specStream struct {
	c      *specChecker
	req    *http.Request
	resp   *http.Response
	cancel context.CancelFunc
	evs    chan [3]string // id, event, data

	mu  sync.Mutex
	raw bytes.Buffer
}

// openStream sends GET path (with Last-Event-ID when set), which must
// answer 200 with an event stream.
func (c *specChecker) openStream(path, lastID string) *specStream {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := c.newRequest("GET", path, nil).WithContext(ctx)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	if err := openapi3filter.ValidateRequest(context.Background(), c.requestInput(req, nil, route, params)); err != nil {
		c.t.Fatalf("GET %s: the request does not match the document: %v", path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		c.t.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
	s := &specStream{c: c, req: req, resp: resp, cancel: cancel, evs: make(chan [3]string, 64)}
	go func() {
		defer close(s.evs)
		r := bufio.NewReader(resp.Body)
		var ev [3]string
		for {
			line, err := r.ReadString('\n')
			s.mu.Lock()
			s.raw.WriteString(line)
			s.mu.Unlock()
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev[0] != "" {
					s.evs <- ev
				}
				ev = [3]string{}
			case strings.HasPrefix(line, "id: "):
				ev[0] = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev[1] = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev[2] = line[6:]
			}
		}
	}()
	return s
}

// next returns the next event's id, type and payload, checked against the
// document's Event and against its own id: and event: lines.
func (s *specStream) next() (id, typ string, payload map[string]any) {
	t := s.c.t
	t.Helper()
	select {
	case ev, ok := <-s.evs:
		if !ok {
			t.Fatal("the event stream ended")
		}
		if err := json.Unmarshal([]byte(ev[2]), &payload); err != nil {
			t.Fatalf("data %q: %v", ev[2], err)
		}
		if err := s.c.validateSchema("Event", payload); err != nil {
			t.Fatalf("event does not match Event: %v\n%s", err, ev[2])
		}
		if payload["id"] != ev[0] || payload["type"] != ev[1] {
			t.Fatalf("id: %s, event: %s, data: %s", ev[0], ev[1], ev[2])
		}
		return ev[0], ev[1], payload
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return
}

// finish ends the stream and validates the response (status, headers and
// what was received) against the document.
func (s *specStream) finish() {
	c := s.c
	c.t.Helper()
	s.cancel()
	for range s.evs {
	}
	s.resp.Body.Close()
	route, params, _ := c.router.FindRoute(s.req)
	s.mu.Lock()
	body := append([]byte(nil), s.raw.Bytes()...)
	s.mu.Unlock()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: c.requestInput(s.req, nil, route, params),
		Status:                 s.resp.StatusCode,
		Header:                 s.resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		c.t.Fatalf("GET %s: the response does not match the document: %v", s.req.URL.Path, err)
	}
	c.mu.Lock()
	c.hit[fmt.Sprintf("%s %d", route.Operation.OperationID, s.resp.StatusCode)] = true
	c.mu.Unlock()
}

// TestOpenAPIEventsMatch checks GET /v1/events live against the document:
// a model's lifecycle events as they happen, a resume with Last-Event-ID,
// and the errors.
func TestOpenAPIEventsMatch(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	c := newSpecChecker(t, loadSpec(t), e)

	live := c.openStream("/v1/events?types=model.ready,model.unloaded", "")
	expectStatus(t, c.call("POST", "/v1/models/tiny/load", nil), 200)
	readyID, typ, ready := live.next()
	if typ != "model.ready" || ready["data"].(map[string]any)["model"] != "tiny" {
		t.Fatalf("%s %v", typ, ready)
	}
	expectStatus(t, c.call("POST", "/v1/models/tiny/unload", nil), 200)
	unloadedID, typ, _ := live.next()
	if typ != "model.unloaded" {
		t.Fatalf("second event %s", typ)
	}
	live.finish()

	// A reconnect after model.ready replays what followed it.
	again := c.openStream("/v1/events", readyID)
	if id, _, _ := again.next(); id != unloadedID {
		t.Fatalf("resumed with %s, want %s", id, unloadedID)
	}
	again.finish()

	x := c.newRequest("GET", "/v1/events", nil)
	x.Header.Set("Last-Event-ID", "evt_doesnotexist")
	if e := expectError(t, c.send(x, nil, true), 400, "invalid_request_error"); e["param"] != "Last-Event-ID" {
		t.Fatalf("param %v", e["param"])
	}
	expectError(t, c.call("GET", "/v1/events?types=model.exploded", nil), 400, "invalid_request_error")
	if missing := c.uncovered(operationsExcept(c.doc, "streamEvents")...); len(missing) > 0 {
		t.Errorf("not exercised: %v", missing)
	}
}
