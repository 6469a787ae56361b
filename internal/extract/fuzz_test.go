package extract

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var fuzzNames = []string{"a.txt", "a.md", "a.html", "a.pdf", "upload"}

// FuzzExtract: no input panics or hangs; a nil error means valid UTF-8 text
// with something other than whitespace in it; an error is always an *Error
// wrapping a sentinel.
func FuzzExtract(f *testing.F) {
	f.Add(uint8(0), []byte("plain text\r\nline two"))
	f.Add(uint8(0), []byte("\xef\xbb\xbf  \n"))
	f.Add(uint8(1), []byte("# Title\n\nSome *markdown* text.\n```\n# code\n```"))
	f.Add(uint8(2), []byte(`<html><head><title>T</title><script>x()</script></head><body><p>a &amp; b</p><pre> x </pre><table><tr><td>1<td>2</table></body></html>`))
	f.Add(uint8(2), []byte("<meta charset=iso-8859-1><p>caf\xe9"))
	f.Add(uint8(3), pagesPDF("<< /Title (T) >>", "BT /F1 12 Tf 72 720 Td (Hello) Tj [(a)-300(b)] TJ T* (c) ' ET", "BT /F1 9 Tf 1 0 0 1 10 10 Tm (two) Tj ET"))
	f.Add(uint8(3), []byte("%PDF-1.4 garbage"))
	good := pagesPDF("", "BT /F1 12 Tf 72 720 Td (x) Tj ET")
	f.Add(uint8(3), good[:len(good)/2])
	f.Add(uint8(4), good)
	f.Add(uint8(4), []byte("<!doctype html><p>sniffed"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		defer hangWatch(fmt.Sprintf("%q", data))()
		name := fuzzNames[int(which)%len(fuzzNames)]
		doc, err := Options{MaxTextBytes: 1 << 20, MaxPages: 50}.Extract(name, "", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *Error", err, err)
			}
			switch e.Kind {
			case ErrEmpty, ErrUnsupported, ErrMalformed, ErrTooLarge:
			default:
				t.Fatalf("error %v wraps %v", err, e.Kind)
			}
			return
		}
		if !utf8.ValidString(doc.Text) || !utf8.ValidString(doc.Title) {
			t.Fatalf("invalid UTF-8: %q / %q", doc.Text, doc.Title)
		}
		if strings.TrimSpace(doc.Text) == "" {
			t.Fatalf("nil error with empty text %q", doc.Text)
		}
		if doc.Format == "" {
			t.Fatal("no format")
		}
	})
}

// FuzzPDFContent fuzzes a page's content stream inside a valid PDF, where
// FuzzExtract seldom reaches: the layout interpreter and the library's
// content lexer must not panic or hang, whatever the operators.
func FuzzPDFContent(f *testing.F) {
	f.Add("BT /F1 12 Tf 72 720 Td (Hello) Tj 0 -14 Td [(W)120(orld)-400(!)] TJ ET")
	f.Add("q 0 1 -1 0 612 0 cm BT /F1 12 Tf 14 TL (a) ' 1 2 (b) \" T* 5 Ts 50 Tz 2 Tc 3 Tw (c) Tj ET Q Q Q")
	f.Add("BT /F9 0 Tf 1e308 1e308 Td (x) Tj /F1 -12 Tf 0 0 0 0 0 0 Tm (y) Tj ET /X1 Do")
	f.Add("BI /W 1 /H 1 /BPC 8 /CS /G ID \x00\xff EI BT /F1 12 Tf (after image) Tj ET")
	f.Fuzz(func(t *testing.T, content string) {
		defer hangWatch(fmt.Sprintf("%q", content))()
		doc, err := Options{MaxTextBytes: 1 << 20}.Extract("a.pdf", "", pagesPDF("", content))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *Error", err, err)
			}
			return
		}
		if !utf8.ValidString(doc.Text) || strings.TrimSpace(doc.Text) == "" {
			t.Fatalf("bad text %q", doc.Text)
		}
	})
}

// hangWatch crashes the test process, naming the input and with every
// goroutine's stack, if the fuzzed call has not returned in 10 seconds: a
// hang then fails the fuzz run with its input instead of stalling it. Call
// the function it returns when the call is done.
func hangWatch(input string) func() {
	timer := time.AfterFunc(10*time.Second, func() {
		debug.SetTraceback("all")
		panic("Extract hangs on " + input)
	})
	return func() { timer.Stop() }
}
