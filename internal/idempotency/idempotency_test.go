package idempotency

import (
	"bytes"
	"context"
	"mime/multipart"
	"strings"
	"testing"
	"time"
)

// memStore is a function-field fake: it keeps one entry, as claimed.
type memStore struct {
	entries map[string]Entry
}

func (m *memStore) ClaimIdempotency(_ context.Context, e Entry, _ time.Time) (Entry, bool, error) {
	if got, ok := m.entries[e.ID]; ok {
		return got, false, nil
	}
	m.entries[e.ID] = e
	return e, true, nil
}

func (m *memStore) FinishIdempotency(_ context.Context, id, f string, status int, body []byte) error {
	e := m.entries[id]
	e.Fingerprint, e.Done, e.Status, e.Body = f, true, status, body
	m.entries[id] = e
	return nil
}

func (m *memStore) ReleaseIdempotency(_ context.Context, id string) error {
	delete(m.entries, id)
	return nil
}

func (m *memStore) PurgeIdempotency(context.Context, time.Time) (int64, error) { return 0, nil }

// TestStoredSealed: what the store holds names neither the key nor, in
// plain text, the answer (a new API key's secret), and the answer comes
// back whole with the key.
func TestStoredSealed(t *testing.T) {
	st := &memStore{entries: map[string]Entry{}}
	s := &Service{Store: st}
	ctx := context.Background()
	a, _, err := s.Begin(ctx, "key_1", "client-key-123", "POST", "/v1/keys", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	secret := `{"key":"sk-sov-SECRETSECRETSECRET"}`
	a.Finish(ctx, 201, []byte(secret))
	for id, e := range st.entries {
		if strings.Contains(id, "client-key-123") || bytes.Contains(e.Body, []byte("SECRET")) || !e.Done {
			t.Fatalf("stored in the clear: %s %+v", id, e)
		}
	}
	_, r, err := s.Begin(ctx, "key_1", "client-key-123", "POST", "/v1/keys", "application/json", strings.NewReader(`{}`))
	if err != nil || r == nil || string(r.Body) != secret {
		t.Fatalf("replay: %+v %v", r, err)
	}
	// Another caller with the same client key reaches another entry.
	if a, _, err := s.Begin(ctx, "key_2", "client-key-123", "POST", "/v1/keys", "application/json", strings.NewReader(`{}`)); err != nil || a == nil {
		t.Fatalf("another caller: %v", err)
	}
}

func form(t testing.TB, fields map[string]string, file string) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, err := mw.CreateFormFile("file", "a.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(file))
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// TestFingerprint: multipart bodies compare by their parts, whatever
// their boundary; every other body by its bytes; method and path count.
func TestFingerprint(t *testing.T) {
	fp := func(method, path, ct string, body []byte) string {
		f, err := Fingerprint(method, path, ct, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ct1, b1 := form(t, map[string]string{"purpose": "batch"}, "line\n")
	ct2, b2 := form(t, map[string]string{"purpose": "batch"}, "line\n")
	if bytes.Equal(b1, b2) {
		t.Fatal("the boundaries should differ")
	}
	if fp("POST", "/v1/files", ct1, b1) != fp("POST", "/v1/files", ct2, b2) {
		t.Fatal("the same form with another boundary fingerprints differently")
	}
	ct3, b3 := form(t, map[string]string{"purpose": "batch"}, "line2\n")
	ct4, b4 := form(t, map[string]string{"purpose": "fine-tune"}, "line\n")
	base := fp("POST", "/v1/files", ct1, b1)
	for i, other := range []string{
		fp("POST", "/v1/files", ct3, b3),
		fp("POST", "/v1/files", ct4, b4),
		fp("POST", "/v1/other", ct1, b1),
		fp("POST", "/v1/files", "application/octet-stream", b1),
	} {
		if other == base {
			t.Fatalf("case %d: a different request has the same fingerprint", i)
		}
	}
	if fp("POST", "/v1/teams", "application/json", []byte(`{"a":1}`)) == fp("POST", "/v1/teams", "application/json", []byte(`{"a":2}`)) {
		t.Fatal("JSON bodies are compared by their bytes")
	}
	// A broken multipart body is compared by its bytes, read whole.
	broken := []byte("--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end")
	if fp("POST", "/v1/files", "multipart/form-data; boundary=x", broken) == fp("POST", "/v1/files", "multipart/form-data; boundary=x", append(broken, '!')) {
		t.Fatal("broken multipart bodies that differ fingerprint the same")
	}
}

// FuzzFingerprint: any body and content type fingerprints without error
// or panic, deterministically, reading the body whole.
func FuzzFingerprint(f *testing.F) {
	ct, b := form(f, map[string]string{"purpose": "batch"}, "x\n")
	f.Add(ct, b)
	f.Add("application/json", []byte(`{"name":"x"}`))
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\n\r\n--x--"))
	f.Add("multipart/mixed; boundary=\"", []byte("--"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		r := bytes.NewReader(body)
		a, err := Fingerprint("POST", "/v1/files", ct, r)
		if err != nil {
			t.Fatal(err)
		}
		if r.Len() != 0 {
			t.Fatalf("%d bytes left unread", r.Len())
		}
		if b, _ := Fingerprint("POST", "/v1/files", ct, bytes.NewReader(body)); a != b {
			t.Fatal("not deterministic")
		}
	})
}
