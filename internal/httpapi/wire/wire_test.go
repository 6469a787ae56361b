package wire

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// TestSSEFormat: events as OpenAI's streams write them, an upstream's
// event passed on with its type, the event log's id/event/data lines, a
// comment, the end, and an error event in the OpenAI envelope.
func TestSSEFormat(t *testing.T) {
	w := httptest.NewRecorder()
	s := StartSSE(w)
	s.Send(map[string]int{"a": 1})
	s.Raw("response.created", []byte(`{"x":1}`))
	s.Raw("", []byte(`{"y":2}`))
	s.Event("evt_1", "run.updated", []byte(`{}`))
	s.Flush()
	s.Comment("keep-alive")
	s.Fail(apierr.New(apierr.ModelCrashed, "boom"))
	s.Done()
	want := "data: {\"a\":1}\n\n" +
		"event: response.created\ndata: {\"x\":1}\n\n" +
		"data: {\"y\":2}\n\n" +
		"id: evt_1\nevent: run.updated\ndata: {}\n\n" +
		": keep-alive\n\n" +
		"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":\"model_crashed\"}}\n\n" +
		"data: [DONE]\n\n"
	if got := w.Body.String(); got != want {
		t.Errorf("stream:\n%q\nwant\n%q", got, want)
	}
	if w.Header().Get("Content-Type") != "text/event-stream" || w.Header().Get("X-Accel-Buffering") != "no" {
		t.Errorf("headers %v", w.Header())
	}
}

// TestJSONHasALength: a whole answer carries its length, so the client has
// all of it before the handler's deferred work ends.
func TestJSONHasALength(t *testing.T) {
	w := httptest.NewRecorder()
	if err := JSON(w, 201, map[string]string{"id": "x"}); err != nil {
		t.Fatal(err)
	}
	if w.Code != 201 || w.Header().Get("Content-Length") != "11" || w.Body.String() != "{\"id\":\"x\"}\n" {
		t.Errorf("%d %v %q", w.Code, w.Header(), w.Body.String())
	}
}

// TestListParams: limit within 1–100 and unix-second bounds, or a 400
// naming the parameter.
func TestListParams(t *testing.T) {
	var since time.Time
	limit := 20
	if err := ListParams(url.Values{"limit": {"5"}, "since": {"60"}}, &limit, Bound{Name: "since", Dst: &since}); err != nil || limit != 5 || since.Unix() != 60 {
		t.Fatalf("%v %d %v", err, limit, since)
	}
	for q, param := range map[string]string{"limit=0": "limit", "limit=101": "limit", "limit=x": "limit", "since=-1": "since", "since=soon": "since"} {
		v, _ := url.ParseQuery(q)
		if e := apierr.From(ListParams(v, &limit, Bound{Name: "since", Dst: &since})); e.Status() != 400 || e.Param != param {
			t.Errorf("%s: %+v", q, e)
		}
	}
}

// TestDecodeStrict: a member the object does not declare, at any depth,
// is a 400 naming it.
func TestDecodeStrict(t *testing.T) {
	var v struct {
		Name  string `json:"name"`
		Inner struct {
			N int `json:"n"`
		} `json:"inner"`
	}
	if err := DecodeStrict(strings.NewReader(`{"name":"a","inner":{"n":1}}`), &v); err != nil || v.Inner.N != 1 {
		t.Fatalf("%v %+v", err, v)
	}
	if e := apierr.From(DecodeStrict(strings.NewReader(`{"name":"a","inner":{"m":1}}`), &v)); e.Status() != 400 || e.Param != "m" {
		t.Errorf("unknown nested member: %+v", e)
	}
}

// TestBuffer keeps a whole answer: the first status, 200 when none was
// written, and the body.
func TestBuffer(t *testing.T) {
	b := NewBuffer()
	if b.Status() != 200 {
		t.Errorf("no status: %d", b.Status())
	}
	b.WriteHeader(404)
	b.WriteHeader(500)
	b.Write([]byte("x"))
	if b.Status() != 404 || string(b.Bytes()) != "x" {
		t.Errorf("%d %q", b.Status(), b.Bytes())
	}
	r := httptest.NewRequestWithContext(context.Background(), "GET", "/", nil)
	r.RemoteAddr = "10.1.2.3:4567"
	if ClientIP(r) != "10.1.2.3" {
		t.Errorf("client ip %q", ClientIP(r))
	}
}
