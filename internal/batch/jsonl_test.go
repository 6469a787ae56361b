package batch

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	good := `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}`
	r, err := ParseLine([]byte(good))
	if err != nil || r.CustomID != "r1" || r.URL != "/v1/chat/completions" || string(r.Body) != `{"model":"m","messages":[]}` {
		t.Fatalf("good line: %+v %v", r, err)
	}
	if _, err := ParseLine([]byte("  " + good + "\r")); err != nil {
		t.Fatalf("surrounding space: %v", err)
	}
	for _, url := range Endpoints {
		if _, err := ParseLine([]byte(`{"custom_id":"a","method":"POST","url":"` + url + `","body":{}}`)); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
	bad := []struct{ line, want string }{
		{``, "not a JSON object"},
		{`[1]`, "not a JSON object"},
		{`{"custom_id":"a"`, "not a JSON object"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{}} {}`, "more than one JSON value"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{}}x`, "more than one JSON value"},
		{`{"method":"POST","url":"/v1/embeddings","body":{}}`, "'custom_id' is missing"},
		{`{"custom_id":7,"method":"POST","url":"/v1/embeddings","body":{}}`, "'custom_id' must be a string"},
		{`{"custom_id":"","method":"POST","url":"/v1/embeddings","body":{}}`, "'custom_id' must not be empty"},
		{`{"custom_id":"` + strings.Repeat("x", MaxCustomID+1) + `","method":"POST","url":"/v1/embeddings","body":{}}`, "longer than"},
		{`{"custom_id":"a","method":"GET","url":"/v1/embeddings","body":{}}`, `'method' must be "POST"`},
		{`{"custom_id":"a","url":"/v1/embeddings","body":{}}`, "'method' is missing"},
		{`{"custom_id":"a","method":"POST","url":"/v1/images/generations","body":{}}`, "is not one of /v1/chat/completions"},
		{`{"custom_id":"a","method":"POST","body":{}}`, "'url' is missing"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings"}`, "'body' is missing"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":null}`, "'body' is missing"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":"text"}`, "'body' must be a JSON object"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":[]}`, "'body' must be a JSON object"},
		{`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"stream":true}}`, "'body.stream' must not be true"},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{},"extra":1}`, `unknown field "extra"`},
		{"{\"custom_id\":\"a\xff\",\"method\":\"POST\",\"url\":\"/v1/embeddings\",\"body\":{}}", "not valid UTF-8"},
	}
	for _, c := range bad {
		_, err := ParseLine([]byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: err %v, want %q", c.line, err, c.want)
		}
	}
}

func line(id, url string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":%q,"body":{"model":"m","input":"x"}}`, id, url)
}

func TestScan(t *testing.T) {
	file := line("a", "/v1/embeddings") + "\r\n\n" + line("b", "/v1/embeddings") + "\n   \n" + line("c", "/v1/embeddings")
	var seen []string
	size, n, err := Scan(strings.NewReader(file), ScanOptions{}, func(l int, r Request) error {
		seen = append(seen, fmt.Sprintf("%d:%s", l, r.CustomID))
		return nil
	})
	if err != nil || n != 3 || size != int64(len(file)) || fmt.Sprint(seen) != "[1:a 3:b 5:c]" {
		t.Fatalf("Scan: %d %d %v %v", size, n, seen, err)
	}
	problem := func(file string, o ScanOptions) *LineProblem {
		t.Helper()
		_, _, err := Scan(strings.NewReader(file), o, nil)
		var lp *LineProblem
		if !errors.As(err, &lp) {
			t.Fatalf("Scan(%.40q): err %v, want a LineProblem", file, err)
		}
		return lp
	}
	if lp := problem(line("a", "/v1/embeddings")+"\n"+line("b", "/v1/x")+"\n", ScanOptions{}); lp.Line != 2 || !strings.Contains(lp.Error(), "line 2: 'url'") {
		t.Errorf("bad url: %v", lp)
	}
	if lp := problem(line("a", "/v1/embeddings")+"\n\n"+line("a", "/v1/embeddings"), ScanOptions{}); lp.Line != 3 || !strings.Contains(lp.Message, "used by line 1") {
		t.Errorf("duplicate custom_id: %v", lp)
	}
	if lp := problem("\n \n", ScanOptions{}); lp.Line != 0 || !strings.Contains(lp.Message, "no request") {
		t.Errorf("empty file: %v", lp)
	}
	long := line("a", "/v1/embeddings") + "\n" + line(strings.Repeat("y", 200), "/v1/embeddings") + "\n"
	if lp := problem(long, ScanOptions{MaxLine: 150}); lp.Line != 2 || !strings.Contains(lp.Message, "longer than 150 bytes") {
		t.Errorf("long line: %v", lp)
	}
	// Too large is the file's size, wherever the limit cuts a line.
	for _, max := range []int64{100, int64(len(long)) - 5} {
		var tl *TooLargeError
		if _, _, err := Scan(strings.NewReader(long), ScanOptions{MaxBytes: max}, nil); !errors.As(err, &tl) || tl.Limit != max ||
			!strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", max)) {
			t.Errorf("large file, limit %d: %v", max, err)
		}
	}
	three := line("a", "/v1/embeddings") + "\n" + line("b", "/v1/embeddings") + "\n" + line("c", "/v1/embeddings")
	if lp := problem(three, ScanOptions{MaxLines: 2}); lp.Line != 3 || !strings.Contains(lp.Message, "at most 2 requests") {
		t.Errorf("too many lines: %v", lp)
	}
	// A callback's error ends the scan as it is.
	stop := errors.New("stop")
	if _, _, err := Scan(strings.NewReader(three), ScanOptions{}, func(int, Request) error { return stop }); err != stop {
		t.Errorf("callback error: %v", err)
	}
}

// FuzzParseLine holds the line parser to its contract on any input: it
// never panics, and a line it accepts has a custom_id, method POST, a
// batch endpoint and an object body that a second parse of the same line
// accepts identically (surrounding blanks aside).
func FuzzParseLine(f *testing.F) {
	f.Add([]byte(line("a", "/v1/embeddings")))
	f.Add([]byte(`{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"stream":false,"messages":[{"role":"user","content":"hi"}]}}`))
	f.Add([]byte(`{"custom_id":"x","method":"POST","url":"/v1/responses","body":{"stream":true}}`))
	f.Add([]byte(`{"custom_id":"\u00e9","method":"POST","url":"/v1/completions","body":{}} `))
	f.Add([]byte(`{"custom_id":1}`))
	f.Add([]byte(`{}{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseLine(b)
		if err != nil {
			if r.Body != nil {
				t.Fatalf("a refused line kept a body: %q", b)
			}
			return
		}
		if r.CustomID == "" || len(r.CustomID) > MaxCustomID || r.Method != "POST" || len(r.Body) == 0 || r.Body[0] != '{' {
			t.Fatalf("accepted %q as %+v", b, r)
		}
		ok := false
		for _, e := range Endpoints {
			ok = ok || e == r.URL
		}
		if !ok {
			t.Fatalf("accepted url %q", r.URL)
		}
		again, err := ParseLine([]byte(" " + string(b) + "\n"))
		if err != nil || again.CustomID != r.CustomID || string(again.Body) != string(r.Body) {
			t.Fatalf("second parse of %q: %+v %v", b, again, err)
		}
		// A file of the line alone scans to the same request.
		_, n, err := Scan(strings.NewReader(string(b)), ScanOptions{}, nil)
		if strings.ContainsAny(string(b), "\n") {
			return // the scanner splits lines the parser saw as one
		}
		if err != nil || n != 1 {
			t.Fatalf("Scan of an accepted line %q: %d %v", b, n, err)
		}
	})
}
