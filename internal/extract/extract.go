// Package extract turns an uploaded file into plain UTF-8 text for indexing:
// plain text and markdown are kept as uploaded (BOM stripped, line endings
// normalised), HTML is rendered to readable text with golang.org/x/net/html,
// and PDF text is read with github.com/ledongthuc/pdf and laid out into
// words and lines from the glyph positions.
//
// Every failure wraps one of the sentinel errors ErrEmpty, ErrUnsupported,
// ErrMalformed or ErrTooLarge, so that a caller can classify it with
// errors.Is and answer 400 (or 413) with the error's message, which is
// written for the person who uploaded the file. Extract never panics on any
// input: panics inside the PDF library are recovered and reported as
// ErrMalformed, and the work done for one file is bounded by Options.
package extract

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"
)

// Format names, as found in Document.Format.
const (
	FormatText     = "txt"
	FormatMarkdown = "md"
	FormatHTML     = "html"
	FormatPDF      = "pdf"
)

// Document is the text extracted from one file.
type Document struct {
	// Text is the extracted text: valid UTF-8, never empty or whitespace
	// only, lines separated by "\n", paragraphs (where the format shows
	// them) by a blank line. For txt and md it is the uploaded text itself,
	// less a byte-order mark and with CRLF and CR turned into LF, so that
	// offsets into Text point into what the user uploaded.
	Text string
	// Title is the document's own title, or "" when it has none: the first
	// "# " heading of markdown, the <title> (else the first <h1>) of HTML,
	// the /Title of a PDF's document information.
	Title string
	// Format is FormatText, FormatMarkdown, FormatHTML or FormatPDF.
	Format string
}

// The sentinel errors every Extract error wraps; test with errors.Is.
var (
	// ErrEmpty: the file is empty, or holds no extractable text (only
	// whitespace, markup without text, a scanned PDF with no text layer).
	ErrEmpty = errors.New("the file contains no text")
	// ErrUnsupported: the file's type is not one Extract reads, or its
	// text is not UTF-8, or it uses a PDF feature that is refused.
	ErrUnsupported = errors.New("unsupported file type")
	// ErrMalformed: the file claims a supported type but cannot be parsed
	// (a truncated or corrupt PDF).
	ErrMalformed = errors.New("the file is malformed")
	// ErrTooLarge: the file exceeds a limit in Options (size, pages, text).
	ErrTooLarge = errors.New("the file is too large")
)

// Error is the type of every error Extract returns. Its message is the
// detail alone ("the PDF could not be read: …"), written to be shown to the
// uploader as is; Unwrap returns the sentinel (ErrEmpty, ErrUnsupported,
// ErrMalformed or ErrTooLarge) it belongs to.
type Error struct {
	Kind error  // one of the sentinel errors
	Msg  string // the detail shown to the user
}

// Error returns the detail message.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel error e belongs to.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Default limits, used for the zero fields of Options.
const (
	DefaultMaxBytes     = 50 << 20 // 50 MiB of input
	DefaultMaxPages     = 2000     // pages in one PDF
	DefaultMaxTextBytes = 32 << 20 // 32 MiB of extracted text
)

// Options bounds the work Extract does for one file. A zero field takes its
// default; the zero Options is the defaults.
type Options struct {
	// MaxBytes refuses larger inputs with ErrTooLarge (default
	// DefaultMaxBytes).
	MaxBytes int
	// MaxPages refuses PDFs with more pages with ErrTooLarge (default
	// DefaultMaxPages).
	MaxPages int
	// MaxTextBytes refuses files whose extracted text grows past it, or
	// PDFs whose decompressed content streams add up to more than eight
	// times it, with ErrTooLarge (default DefaultMaxTextBytes).
	MaxTextBytes int
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	return o
}

// Extract returns the text of the file called name (only its extension is
// used), sent with the given Content-Type (may be ""), whose bytes are data,
// under the default Options. See Options.Extract.
func Extract(name, contentType string, data []byte) (Document, error) {
	return Options{}.Extract(name, contentType, data)
}

// Extract returns the text of the file called name, sent with contentType,
// whose bytes are data, within the limits of o.
//
// The format comes from the name's extension (.txt, .md, .markdown, .html,
// .htm, .pdf), else from the content type (text/plain, text/markdown,
// text/html, application/pdf), else from the first bytes (%PDF-, <html,
// <!doctype html).
//
// Errors, each an *Error wrapping a sentinel: ErrEmpty for an empty file or
// one without text; ErrUnsupported for an unknown format, text that is not
// UTF-8 or that holds NUL bytes; ErrMalformed for a PDF that cannot be read;
// ErrTooLarge when a limit of o is passed. A nil error means Document.Text
// is valid UTF-8 with at least one non-whitespace character.
func (o Options) Extract(name, contentType string, data []byte) (Document, error) {
	o = o.withDefaults()
	if err := o.checkSize(data); err != nil {
		return Document{}, err
	}
	format := detect(name, contentType, data)
	if len(data) == 0 {
		return Document{}, errorf(ErrEmpty, "the file is empty")
	}
	var (
		doc Document
		err error
	)
	switch format {
	case FormatText, FormatMarkdown:
		doc, err = extractText(data, format == FormatMarkdown)
	case FormatHTML:
		doc, err = extractHTML(data, contentType)
	case FormatPDF:
		doc, err = extractPDF(data, o)
	default:
		return Document{}, unsupported(name, contentType)
	}
	if err != nil {
		return Document{}, err
	}
	doc.Format = format
	if strings.TrimSpace(doc.Text) == "" {
		return Document{}, errorf(ErrEmpty, "the %s file contains no text", formatNoun(format))
	}
	if len(doc.Text) > o.MaxTextBytes {
		return Document{}, errorf(ErrTooLarge, "the extracted text is %s, more than the limit of %s", sizeString(len(doc.Text)), sizeString(o.MaxTextBytes))
	}
	return doc, nil
}

// checkSize refuses a file over o.MaxBytes (o with its defaults).
func (o Options) checkSize(data []byte) error {
	if len(data) > o.MaxBytes {
		return errorf(ErrTooLarge, "the file is %s, more than the limit of %s", sizeString(len(data)), sizeString(o.MaxBytes))
	}
	return nil
}

func unsupported(name, contentType string) error {
	what := ""
	if ext := extension(name); ext != "" {
		what = " " + ext
	}
	if contentType != "" {
		what += " (" + contentType + ")"
	}
	return errorf(ErrUnsupported, "unsupported file type%s: supported are .txt, .md, .html and .pdf", what)
}

// detect picks the format by extension, then by content type, then by the
// first bytes; "" when none matches.
func detect(name, contentType string, data []byte) string {
	switch extension(name) {
	case ".txt", ".text":
		return FormatText
	case ".md", ".markdown":
		return FormatMarkdown
	case ".html", ".htm", ".xhtml":
		return FormatHTML
	case ".pdf":
		return FormatPDF
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		switch mt {
		case "text/plain":
			return FormatText
		case "text/markdown", "text/x-markdown":
			return FormatMarkdown
		case "text/html", "application/xhtml+xml":
			return FormatHTML
		case "application/pdf", "application/x-pdf":
			return FormatPDF
		}
	}
	return sniff(data)
}

// sniff recognises a PDF by its %PDF- magic within the first KiB (as readers
// do) and HTML by a leading <html or <!doctype html.
func sniff(data []byte) string {
	head := data[:min(len(data), 1024)]
	if bytes.HasPrefix(head, []byte("%PDF-")) {
		return FormatPDF
	}
	head = bytes.TrimPrefix(head, utf8BOM)
	head = bytes.TrimLeft(head, " \t\r\n\f")
	lower := bytes.ToLower(head[:min(len(head), 64)])
	if bytes.HasPrefix(lower, []byte("<html")) || bytes.HasPrefix(lower, []byte("<!doctype html")) {
		return FormatHTML
	}
	return ""
}

// extension returns the lower-cased extension of the last path element of
// name ("" if none), whether the path uses / or \.
func extension(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	return strings.ToLower(name[i:])
}

func formatNoun(format string) string {
	switch format {
	case FormatText:
		return "text"
	case FormatMarkdown:
		return "markdown"
	case FormatHTML:
		return "HTML"
	case FormatPDF:
		return "PDF"
	}
	return format
}

func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// cleanText makes extracted (not uploaded) text safe to store and index:
// invalid UTF-8 is dropped, CR becomes LF, and control characters other
// than tab and newline (NUL included, which PostgreSQL text refuses) and
// U+FFFD (what undecodable glyphs become) are removed.
func cleanText(s string) string {
	ok := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || r == '\r' || (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			ok = false
			break
		}
		i += size
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError:
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue
			}
			b.WriteByte('\n')
		case r < 0x20 && r != '\t' && r != '\n', r == 0x7f, r >= 0x80 && r < 0xa0:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
