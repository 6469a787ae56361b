package extract

import (
	"bytes"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// extractHTML renders an HTML page as plain text: the character set comes
// from the content type, a BOM or a <meta> tag (UTF-8 by default); script,
// style and the like are dropped; block elements end lines (paragraph-like
// ones with a blank line); whitespace runs within a line become one space;
// entities are decoded by the parser. Title is the <title>, else the first
// <h1>.
func extractHTML(data []byte, contentType string) (Document, error) {
	enc, name, _ := charset.DetermineEncoding(data, contentType)
	if name != "utf-8" && enc != nil {
		if decoded, err := enc.NewDecoder().Bytes(data); err == nil {
			data = decoded
		}
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil { // only reader errors, which a bytes.Reader has not
		return Document{}, errorf(ErrMalformed, "the HTML could not be read: %v", err)
	}
	w := &htmlWriter{newlines: 2}
	w.walk(root, 0)
	title := ""
	if t := findElement(root, atom.Title, 0); t != nil {
		title = collapseSpace(nodeText(t))
	}
	if title == "" {
		title = w.h1
	}
	return Document{Text: finishText(w.b.String()), Title: title}, nil
}

// htmlSkipped elements contribute no text.
var htmlSkipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Iframe: true, atom.Object: true,
	atom.Embed: true, atom.Canvas: true, atom.Select: true, atom.Datalist: true,
	atom.Audio: true, atom.Video: true, atom.Map: true,
}

// htmlParagraphs end with a blank line; htmlLines with a line break.
var (
	htmlParagraphs = map[atom.Atom]bool{
		atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
		atom.H5: true, atom.H6: true, atom.Blockquote: true, atom.Pre: true,
		atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Dl: true,
		atom.Section: true, atom.Article: true, atom.Header: true,
		atom.Footer: true, atom.Main: true, atom.Nav: true, atom.Aside: true,
		atom.Figure: true, atom.Form: true, atom.Fieldset: true,
		atom.Address: true, atom.Details: true, atom.Hr: true, atom.Dialog: true,
		atom.Hgroup: true, atom.Menu: true,
	}
	htmlLines = map[atom.Atom]bool{
		atom.Div: true, atom.Li: true, atom.Dt: true, atom.Dd: true,
		atom.Tr: true, atom.Caption: true, atom.Figcaption: true,
		atom.Summary: true, atom.Legend: true, atom.Center: true,
		atom.Thead: true, atom.Tbody: true, atom.Tfoot: true, atom.Body: true,
		atom.Html: true, atom.Option: true, atom.Textarea: true,
	}
)

type htmlWriter struct {
	b            strings.Builder
	newlines     int    // newlines ending b (2 at the start: nothing to separate)
	pendingSpace bool   // whitespace seen since the last word, within a line
	pre          int    // depth of <pre>: whitespace kept as is
	h1           string // text of the first <h1>
}

// maxHTMLDepth bounds the recursion; the parser itself caps the open
// element stack well below this, so it is a guard, not a limit met.
const maxHTMLDepth = 10000

func (w *htmlWriter) walk(n *html.Node, depth int) {
	if depth > maxHTMLDepth {
		return
	}
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
		if n.DataAtom == atom.Title {
			return
		}
		if htmlSkipped[n.DataAtom] || hasAttr(n, "hidden") {
			return
		}
		if n.DataAtom == atom.H1 && w.h1 == "" {
			w.h1 = collapseSpace(nodeText(n))
		}
		switch {
		case n.DataAtom == atom.Br:
			w.lineBreak()
			return
		case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
			if w.newlines == 0 {
				w.b.WriteByte('\t')
				w.pendingSpace = false
			}
		case htmlParagraphs[n.DataAtom]:
			w.brk(2)
		case htmlLines[n.DataAtom]:
			w.brk(1)
		}
		if n.DataAtom == atom.Pre || n.DataAtom == atom.Textarea || n.DataAtom == atom.Listing {
			w.pre++
			defer func() { w.pre-- }()
		}
		defer func() {
			switch {
			case htmlParagraphs[n.DataAtom]:
				w.brk(2)
			case htmlLines[n.DataAtom]:
				w.brk(1)
			}
		}()
	case html.CommentNode, html.DoctypeNode:
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c, depth+1)
	}
}

// text writes a text node: whitespace collapsed to one space between words,
// or kept as is inside <pre>.
func (w *htmlWriter) text(s string) {
	if w.pre > 0 {
		s = normalizeNewlines(s)
		if s == "" {
			return
		}
		if w.pendingSpace {
			w.b.WriteByte(' ')
			w.pendingSpace = false
		}
		w.b.WriteString(s)
		w.newlines = len(s) - len(strings.TrimRight(s, "\n"))
		if w.newlines == len(s) {
			w.newlines = min(2, w.newlines)
		}
		return
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			if w.newlines == 0 {
				w.pendingSpace = true
			}
			continue
		}
		if w.pendingSpace {
			w.b.WriteByte(' ')
			w.pendingSpace = false
		}
		w.b.WriteRune(r)
		w.newlines = 0
	}
}

// brk ends the current line with at least n newlines (1: line, 2: blank
// line), unless nothing has been written since the last such break.
func (w *htmlWriter) brk(n int) {
	w.pendingSpace = false
	for w.newlines < n {
		w.b.WriteByte('\n')
		w.newlines++
	}
}

// lineBreak writes one newline (<br>), at most two in a row.
func (w *htmlWriter) lineBreak() {
	w.pendingSpace = false
	if w.newlines < 2 {
		w.b.WriteByte('\n')
		w.newlines++
	}
}

// findElement returns the first element a below n (in document order, not
// inside <svg>), or nil.
func findElement(n *html.Node, a atom.Atom, depth int) *html.Node {
	if depth > maxHTMLDepth {
		return nil
	}
	if n.Type == html.ElementNode {
		if n.DataAtom == a {
			return n
		}
		if n.DataAtom == atom.Svg {
			return nil
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findElement(c, a, depth+1); f != nil {
			return f
		}
	}
	return nil
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

// nodeText is the concatenated text below n.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node, int)
	rec = func(n *html.Node, depth int) {
		if depth > maxHTMLDepth || b.Len() > 4096 {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.Script || n.DataAtom == atom.Style) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c, depth+1)
		}
	}
	rec(n, 0)
	return b.String()
}

// collapseSpace trims s and turns each run of whitespace into one space;
// invalid UTF-8 and control characters are dropped.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(cleanText(s)), " ")
}

// finishText cleans extracted text: invalid UTF-8 and control characters
// dropped, trailing blanks of each line removed, at most one blank line in
// a row, no leading or trailing blank lines.
func finishText(s string) string {
	s = cleanText(s)
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if strings.TrimSpace(l) == "" {
			blank++
			if blank > 1 {
				continue
			}
			l = ""
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}
