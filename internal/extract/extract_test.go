package extract

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDetect(t *testing.T) {
	pdfData := pagesPDF("", "BT /F1 12 Tf 72 720 Td (x) Tj ET")
	for _, tc := range []struct {
		name, contentType string
		data              []byte
		want              string
	}{
		{"notes.txt", "", []byte("hi"), FormatText},
		{"NOTES.TXT", "application/octet-stream", []byte("hi"), FormatText},
		{"dir/readme.md", "", []byte("hi"), FormatMarkdown},
		{`C:\docs\guide.Markdown`, "", []byte("hi"), FormatMarkdown},
		{"page.htm", "", []byte("hi"), FormatHTML},
		{"page.html", "text/plain", []byte("hi"), FormatHTML}, // extension first
		{"paper.pdf", "", pdfData, FormatPDF},
		{"upload", "text/plain; charset=utf-8", []byte("hi"), FormatText},
		{"upload", "text/markdown", []byte("hi"), FormatMarkdown},
		{"upload", "text/html; charset=utf-8", []byte("hi"), FormatHTML},
		{"upload", "application/pdf", pdfData, FormatPDF},
		{"upload.bin", "application/octet-stream", pdfData, FormatPDF}, // sniffed
		{"", "", []byte("  <!DOCTYPE html><p>x"), FormatHTML},
		{"", "", []byte("\xef\xbb\xbf<HTML><body>x"), FormatHTML},
		{"", "", []byte("plain words"), ""},
		{"report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", []byte("PK\x03\x04"), ""},
	} {
		if got := detect(tc.name, tc.contentType, tc.data); got != tc.want {
			t.Errorf("detect(%q, %q) = %q, want %q", tc.name, tc.contentType, got, tc.want)
		}
	}
}

func TestUnsupported(t *testing.T) {
	_, err := Extract("report.docx", "application/msword", []byte("PK\x03\x04 zip"))
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrUnsupported {
		t.Fatalf("err is %T, want *Error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, ".docx") || !strings.Contains(msg, "supported are") {
		t.Errorf("message = %q", msg)
	}
	if _, err := Extract("data", "", []byte("no extension, no type")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown: err = %v, want ErrUnsupported", err)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in, text, title string
	}{
		{"a.txt", "hello\nworld\n", "hello\nworld\n", ""},
		{"a.txt", "# Not a title in plain text\nbody", "# Not a title in plain text\nbody", ""},
		{"a.txt", "crlf\r\nlines\r\nold mac\rend", "crlf\nlines\nold mac\nend", ""},
		{"a.txt", "\xef\xbb\xbfwith BOM", "with BOM", ""},
		{"a.txt", "日本語のテキスト 😀", "日本語のテキスト 😀", ""},
		{"a.md", "Intro\n\n# The Title #\n\n## Sub\n# Second", "Intro\n\n# The Title #\n\n## Sub\n# Second", "The Title"},
		{"a.md", "```\n# code comment\n```\n  # Real &amp; *raw*\r\n", "```\n# code comment\n```\n  # Real &amp; *raw*\n", "Real &amp; *raw*"},
		{"a.md", "#NoSpace\n    # indented code\n## two\n", "#NoSpace\n    # indented code\n## two\n", ""},
		{"a.md", "~~~~\n# in fence\n~~~\n# still in fence\n~~~~\n# Out", "~~~~\n# in fence\n~~~\n# still in fence\n~~~~\n# Out", "Out"},
	} {
		doc, err := Extract(tc.name, "", []byte(tc.in))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if doc.Text != tc.text || doc.Title != tc.title {
			t.Errorf("%q: got (%q, %q), want (%q, %q)", tc.in, doc.Text, doc.Title, tc.text, tc.title)
		}
	}
}

func TestTextErrors(t *testing.T) {
	for _, tc := range []struct {
		desc string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrEmpty, "the file is empty"},
		{"empty slice", []byte{}, ErrEmpty, "the file is empty"},
		{"whitespace", []byte(" \n\t\r\n  "), ErrEmpty, "contains no text"},
		{"only BOM", []byte("\xef\xbb\xbf"), ErrEmpty, "contains no text"},
		{"latin-1", []byte("caf\xe9 au lait"), ErrUnsupported, "not UTF-8 text (invalid byte at offset 3)"},
		{"truncated rune", []byte("ok \xe6\x97"), ErrUnsupported, "offset 3"},
		{"NUL", []byte("bin\x00ary"), ErrUnsupported, "NUL byte at offset 3"},
	} {
		for _, name := range []string{"f.txt", "f.md"} {
			_, err := Extract(name, "", tc.data)
			if !errors.Is(err, tc.want) {
				t.Errorf("%s %s: err = %v, want %v", tc.desc, name, err, tc.want)
				continue
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s %s: message %q lacks %q", tc.desc, name, err.Error(), tc.msg)
			}
		}
	}
}

func TestMaxBytes(t *testing.T) {
	o := Options{MaxBytes: 10}
	if _, err := o.Extract("a.txt", "", []byte("0123456789")); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	_, err := o.Extract("a.txt", "", []byte("0123456789A"))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "11 bytes, more than the limit of 10 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := (Options{MaxTextBytes: 4}).Extract("a.txt", "", []byte("hello")); !errors.Is(err, ErrTooLarge) {
		t.Errorf("text over MaxTextBytes: %v", err)
	}
	if got := sizeString(50 << 20); got != "50 MiB" {
		t.Errorf("sizeString = %q", got)
	}
}

func TestHTML(t *testing.T) {
	page := `<!DOCTYPE html>
<html><head>
  <title>  The   Page &amp; Title </title>
  <style>body { color: red }</style>
  <script>var x = "<p>not text</p>";</script>
  <meta charset="utf-8">
</head>
<body>
  <noscript>Enable JavaScript</noscript>
  <h1>Main   heading</h1>
  <p>First   paragraph with <b>bold</b> and <a href="#">a link</a>,
     spread over
     lines.</p>
  <p>Entities: &lt;tag&gt; &quot;q&quot; &eacute; &#x1F600; caf&#233;&nbsp;au&nbsp;lait</p>
  <div>Block one</div><div>Block two</div>
  <ul><li>Item one</li><li>Item <i>two</i></li></ul>
  Line<br>break<br/><br>after two
  <table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
  <pre>  code   keeps
    its  spacing</pre>
  <div hidden>secret</div>
  <template><p>template text</p></template>
  <svg><text>svg text</text></svg>
  <!-- a comment -->
  <p>End<script>document.write("x")</script>.</p>
</body></html>`
	doc, err := Extract("page.html", "", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := "Main heading\n\n" +
		"First paragraph with bold and a link, spread over lines.\n\n" +
		"Entities: <tag> \"q\" é 😀 café au lait\n\n" +
		"Block one\nBlock two\n\n" +
		"Item one\nItem two\n\n" +
		"Line\nbreak\n\nafter two\n\n" +
		"Name\tValue\na\t1\n\n" +
		"  code   keeps\n    its  spacing\n\n" +
		"End."
	if doc.Text != want {
		t.Errorf("Text =\n%s\nwant\n%s", doc.Text, want)
	}
	if doc.Title != "The Page & Title" {
		t.Errorf("Title = %q", doc.Title)
	}
	if doc.Format != FormatHTML {
		t.Errorf("Format = %q", doc.Format)
	}
}

func TestHTMLTitleFallbackAndFragments(t *testing.T) {
	doc, err := Extract("", "text/html", []byte("<h1>Only <em>heading</em></h1><p>text"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Only heading" || doc.Text != "Only heading\n\ntext" {
		t.Errorf("got (%q, %q)", doc.Text, doc.Title)
	}
	// Malformed markup still gives its text.
	doc, err = Extract("x.html", "", []byte("<p>unclosed <b>bold <i>both</p> tail</div></span>"))
	if err != nil || doc.Text != "unclosed bold both\n\ntail" {
		t.Errorf("malformed: %q, %v", doc.Text, err)
	}
}

func TestHTMLCharset(t *testing.T) {
	latin1 := []byte("<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9</title></head><body><p>cr\xe8me br\xfbl\xe9e</p></body></html>")
	doc, err := Extract("menu.html", "", latin1)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "crème brûlée" || doc.Title != "Café" {
		t.Errorf("meta charset: got (%q, %q)", doc.Text, doc.Title)
	}
	doc, err = Extract("menu.html", "text/html; charset=windows-1252", []byte("<p>\x93quoted\x94</p>"))
	if err != nil || doc.Text != "“quoted”" {
		t.Errorf("content type charset: %q, %v", doc.Text, err)
	}
	// Invalid UTF-8 in a UTF-8 page is dropped, never passed on.
	doc, err = Extract("x.html", "text/html; charset=utf-8", []byte("<p>ok \xff\xfe bytes\x00</p>"))
	if err != nil || !utf8.ValidString(doc.Text) || strings.ContainsRune(doc.Text, 0) {
		t.Errorf("invalid UTF-8: %q, %v", doc.Text, err)
	}
}

func TestHTMLEmpty(t *testing.T) {
	for _, page := range []string{
		"<html><head><title>Only a title</title></head><body>  </body></html>",
		"<script>alert(1)</script><style>p{}</style>",
		"<!-- just a comment -->",
		"<p>&nbsp;</p>",
	} {
		if _, err := Extract("x.html", "", []byte(page)); !errors.Is(err, ErrEmpty) {
			t.Errorf("%q: err = %v, want ErrEmpty", page, err)
		}
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":            "plain",
		"a\r\nb\rc":        "a\nb\nc",
		"nul\x00 bell\x07": "nul bell",
		"bad \xff utf8":    "bad  utf8",
		"c1 \u0085 ctl":    "c1  ctl",
		"repl \ufffd":      "repl ",
		"tab\tkept\n":      "tab\tkept\n",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
}
