package extract

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// buildPDF writes a PDF whose objects 1..n are objs (the text between
// "N 0 obj" and "endobj"), with a correct cross-reference table and a
// trailer naming object 1 as /Root, plus trailerExtra.
func buildPDF(header string, objs []string, trailerExtra string) []byte {
	var b bytes.Buffer
	b.WriteString(header + "\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailerExtra, xref)
	return b.Bytes()
}

func stream(content string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
}

// flateStream is a FlateDecode stream of content, with extra entries in its
// dictionary.
func flateStream(content, extra string) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write([]byte(content))
	w.Close()
	return fmt.Sprintf("<< /Length %d /Filter /FlateDecode %s>>\nstream\n%s\nendstream", z.Len(), extra, z.String())
}

// formStream is a form XObject drawing content, with extra entries in its
// dictionary.
func formStream(content, extra string) string {
	return fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Length %d %s>>\nstream\n%s\nendstream", len(content), extra, content)
}

const helvetica = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"

// pagesPDF is a PDF with one page per content stream, all using
// Helvetica as /F1; info, if not empty, is the document information
// dictionary.
func pagesPDF(info string, contents ...string) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", helvetica}
	var kids []string
	for _, c := range contents {
		page := len(objs) + 1
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", page+1),
			stream(c))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(contents))
	extra := ""
	if info != "" {
		objs = append(objs, info)
		extra = fmt.Sprintf("/Info %d 0 R ", len(objs))
	}
	return buildPDF("%PDF-1.4", objs, extra)
}

func extractPDFText(t *testing.T, data []byte) Document {
	t.Helper()
	doc, err := Extract("doc.pdf", "application/pdf", data)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if doc.Format != FormatPDF {
		t.Errorf("Format = %q", doc.Format)
	}
	return doc
}

func TestPDFSimple(t *testing.T) {
	data := pagesPDF("<< /Title (Quarterly Report) /Author (Me) >>",
		"BT /F1 24 Tf 72 720 Td (Hello, PDF world!) Tj ET")
	doc := extractPDFText(t, data)
	if doc.Text != "Hello, PDF world!" {
		t.Errorf("Text = %q", doc.Text)
	}
	if doc.Title != "Quarterly Report" {
		t.Errorf("Title = %q", doc.Title)
	}
}

func TestPDFTwoPages(t *testing.T) {
	data := pagesPDF("",
		"BT /F1 12 Tf 72 720 Td (Page one text.) Tj ET",
		"BT /F1 12 Tf 72 720 Td (Page two text.) Tj ET")
	doc := extractPDFText(t, data)
	if want := "Page one text.\n\nPage two text."; doc.Text != want {
		t.Errorf("Text = %q, want %q", doc.Text, want)
	}
	if doc.Title != "" {
		t.Errorf("Title = %q, want none", doc.Title)
	}
}

func TestPDFLayout(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"lines by Td", "BT /F1 12 Tf 72 720 Td (First line) Tj 0 -14 Td (Second line) Tj ET", "First line\nSecond line"},
		{"lines by T*", "BT /F1 12 Tf 14 TL 72 720 Td (One) Tj T* (Two) Tj (Three) ' ET", "One\nTwo\nThree"},
		{"paragraph gap", "BT /F1 12 Tf 72 720 Td (Para one.) Tj 0 -60 Td (Para two.) Tj ET", "Para one.\n\nPara two."},
		{"TJ word gap", "BT /F1 12 Tf 72 720 Td [(Word)-350(spacing) -20 (s)] TJ ET", "Word spacings"},
		{"TJ kerning", "BT /F1 12 Tf 72 720 Td [(Ke)20(rn)-15(ing)] TJ ET", "Kerning"},
		{"strings glued", "BT /F1 12 Tf 72 720 Td (Hel) Tj (lo) Tj ET", "Hello"},
		{"words by Td", "BT /F1 12 Tf 72 720 Td (Hello) Tj 40 0 Td (World) Tj ET", "Hello World"},
		{"words by Tm", "BT /F1 12 Tf 1 0 0 1 72 720 Tm (Left) Tj 1 0 0 1 300 720 Tm (Right) Tj ET", "Left Right"},
		{"separate BT blocks", "BT /F1 12 Tf 72 720 Td (Top) Tj ET BT /F1 12 Tf 72 700 Td (Bottom) Tj ET", "Top\nBottom"},
		{"escapes", `BT /F1 12 Tf 72 720 Td (a \(b\) caf\351 \\ d) Tj ET`, `a (b) café \ d`},
		{"hex string", "BT /F1 12 Tf 72 720 Td <48656C6C6F> Tj ET", "Hello"},
		{"spaces collapsed", "BT /F1 12 Tf 72 720 Td (a    b\t c) Tj ET", "a b c"},
		{"space glyphs", "BT /F1 12 Tf 72 720 Td (one) Tj ( ) Tj (two) Tj ET", "one two"},
		{"rotated page", "q 0 1 -1 0 612 0 cm BT /F1 12 Tf 72 720 Td (Up) Tj 40 0 Td (there) Tj 0 -14 Td (next) Tj ET Q", "Up there\nnext"},
		{"superscript stays on line", "BT /F1 12 Tf 72 720 Td (E = mc) Tj 5 Ts (2) Tj 0 Ts ET", "E = mc2"},
		{"ligature", "BT /F1 12 Tf 72 720 Td (\\002le) Tj ET", "le"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := extractPDFText(t, pagesPDF("", tc.content))
			if doc.Text != tc.want {
				t.Errorf("Text = %q, want %q", doc.Text, tc.want)
			}
		})
	}
}

func TestPDFFlateAndForm(t *testing.T) {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		helvetica,
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> /XObject << /X1 6 0 R >> >> /Contents 5 0 R >>",
		flateStream("BT /F1 12 Tf 72 720 Td (Compressed body.) Tj ET q 1 0 0 1 0 -100 cm /X1 Do Q", ""),
		formStream("BT /F1 12 Tf 72 720 Td (Inside a form.) Tj ET", ""),
	}
	doc := extractPDFText(t, buildPDF("%PDF-1.5", objs, ""))
	if want := "Compressed body.\n\nInside a form."; doc.Text != want {
		t.Errorf("Text = %q, want %q", doc.Text, want)
	}
}

// A composite (Type0, Identity-H) font with a ToUnicode map, as Word and
// browsers write: two-byte codes, widths from /W.
func TestPDFType0ToUnicode(t *testing.T) {
	cmap := `/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CMapName /Test def
/CMapType 2 def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
4 beginbfchar
<0001> <0048>
<0002> <0069>
<0003> <4E2D>
<0004> <D83DDE00>
endbfchar
endcmap
CMapName currentdict /CMap defineresource pop
end
end`
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F2 5 0 R >> >> /Contents 4 0 R >>",
		stream("BT /F2 12 Tf 72 720 Td <00010002> Tj 30 0 Td [<0003>-600<0004>] TJ ET"),
		"<< /Type /Font /Subtype /Type0 /BaseFont /Test /Encoding /Identity-H /DescendantFonts [7 0 R] /ToUnicode 6 0 R >>",
		stream(cmap),
		"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Test /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 /W [1 [722 222] 3 4 1000] >>",
	}
	doc := extractPDFText(t, buildPDF("%PDF-1.6", objs, ""))
	if want := "Hi 中 😀"; doc.Text != want {
		t.Errorf("Text = %q, want %q", doc.Text, want)
	}
}

func TestPDFUTF16Title(t *testing.T) {
	// "Über" in UTF-16BE with a BOM.
	data := pagesPDF("<< /Title <FEFF00DC006200650072> >>", "BT /F1 12 Tf 72 720 Td (x) Tj ET")
	if doc := extractPDFText(t, data); doc.Title != "Über" {
		t.Errorf("Title = %q", doc.Title)
	}
}

// PDF 2.0 headers, and a header followed by a comment on its line, are
// read although the library only accepts %PDF-1.0 to 1.7 and a line end.
func TestPDFHeaderVariants(t *testing.T) {
	for _, header := range []string{"%PDF-2.0", "%PDF-1.4 %comment", "%PDF-1.7"} {
		objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [4 0 R] /Count 1 >>", helvetica,
			"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
			stream("BT /F1 12 Tf 72 720 Td (Versioned.) Tj ET")}
		if doc := extractPDFText(t, buildPDF(header, objs, "")); doc.Text != "Versioned." {
			t.Errorf("%s: Text = %q", header, doc.Text)
		}
	}
}

func TestPDFNoText(t *testing.T) {
	data := pagesPDF("", "0 0 m 100 100 l S")
	_, err := Extract("scan.pdf", "", data)
	if !errors.Is(err, ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
	if !strings.Contains(err.Error(), "no extractable text") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestPDFMalformed(t *testing.T) {
	good := pagesPDF("", "BT /F1 12 Tf 72 720 Td (Some text here.) Tj ET")
	cyclicPrev := func() []byte {
		// The trailer's /Prev points at its own xref table.
		s := string(good)
		i := strings.LastIndex(s, "startxref\n")
		var off int
		fmt.Sscanf(s[i+len("startxref\n"):], "%d", &off)
		return []byte(strings.Replace(s, "/Root 1 0 R", fmt.Sprintf("/Root 1 0 R /Prev %d", off), 1))
	}
	cases := map[string][]byte{
		"garbage":        []byte("%PDF-1.4 garbage"),
		"garbage eof":    []byte("%PDF-1.4\ngarbage\n%%EOF\n"),
		"truncated":      good[:len(good)/2],
		"truncated tail": good[:len(good)-20],
		"cyclic prev":    cyclicPrev(),
		"unknown filter": buildPDF("%PDF-1.4", []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>", "<< /Length 4 /Filter /Bogus >>\nstream\nabcd\nendstream"}, ""),
		"cyclic page tree": buildPDF("%PDF-1.4", []string{
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [2 0 R 2 0 R] /Count 1 >>",
		}, ""),
		"no pages": buildPDF("%PDF-1.4", []string{"<< /Type /Catalog >>"}, ""),
	}
	// An xref subsection that names object 4000000000 (the library would
	// allocate its table up to it).
	huge := strings.Replace(string(good), "xref\n0 ", "xref\n4000000000 1\n0000000000 65535 f \n0 ", 1)
	cases["huge xref"] = []byte(huge)
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			var err error
			go func() {
				defer close(done)
				_, err = Extract("bad.pdf", "application/pdf", data)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Extract did not return")
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if !strings.HasPrefix(err.Error(), "the PDF could not be read") {
				t.Errorf("message = %q", err.Error())
			}
		})
	}
}

func TestPDFLimits(t *testing.T) {
	two := pagesPDF("", "BT /F1 12 Tf 72 720 Td (one) Tj ET", "BT /F1 12 Tf 72 720 Td (two) Tj ET")
	if _, err := (Options{MaxPages: 1}).Extract("a.pdf", "", two); !errors.Is(err, ErrTooLarge) {
		t.Errorf("MaxPages 1, two pages: err = %v, want ErrTooLarge", err)
	}
	if _, err := (Options{MaxPages: 2}).Extract("a.pdf", "", two); err != nil {
		t.Errorf("MaxPages 2, two pages: err = %v", err)
	}
	// /Count lies: the walk still stops at MaxPages.
	lying := bytes.Replace(two, []byte("/Count 2"), []byte("/Count 1"), 1)
	if _, err := (Options{MaxPages: 1}).Extract("a.pdf", "", lying); !errors.Is(err, ErrTooLarge) {
		t.Errorf("lying /Count: err = %v, want ErrTooLarge", err)
	}
	// A compression bomb: a small file whose content inflates past the budget.
	bomb := "BT /F1 12 Tf 72 720 Td (x) Tj ET " + strings.Repeat(" ", 1<<20)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [4 0 R] /Count 1 >>", helvetica,
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>", flateStream(bomb, "")}
	data := buildPDF("%PDF-1.4", objs, "")
	if len(data) > 10<<10 {
		t.Fatalf("bomb is %d bytes", len(data))
	}
	if _, err := (Options{MaxTextBytes: 64 << 10}).Extract("a.pdf", "", data); !errors.Is(err, ErrTooLarge) {
		t.Errorf("bomb: err = %v, want ErrTooLarge", err)
	}
	// A form drawn again and again spends the same budget.
	objs = []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [4 0 R] /Count 1 >>", helvetica,
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> /XObject << /X 6 0 R >> >> /Contents 5 0 R >>",
		stream(strings.Repeat("/X Do ", 20000)),
		formStream("BT /F1 12 Tf (y) Tj ET "+strings.Repeat(" ", 4096), "")}
	if _, err := (Options{MaxTextBytes: 64 << 10}).Extract("a.pdf", "", buildPDF("%PDF-1.4", objs, "")); !errors.Is(err, ErrTooLarge) {
		t.Errorf("repeated form: err = %v, want ErrTooLarge", err)
	}
	// A form that draws itself stops at the nesting bound.
	objs[4] = stream("/X Do")
	objs[5] = formStream("BT /F1 12 Tf (z) Tj ET /X Do", "/Resources << /XObject << /X 6 0 R >> /Font << /F1 3 0 R >> >> ")
	doc, err := Extract("a.pdf", "", buildPDF("%PDF-1.4", objs, ""))
	if err != nil || strings.Count(doc.Text, "z") != maxFormDepth {
		t.Errorf("recursive form: %q, %v", doc.Text, err)
	}
}

// withDeadline fails the test if f does not return within 10 seconds.
func withDeadline(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Extract did not return")
	}
}

// The library loops for ever on a hex string left open at the end of a
// stream it reads to its end: content, ToUnicode maps, object streams.
func TestPDFOpenHexString(t *testing.T) {
	var err error
	withDeadline(t, func() { _, err = Extract("a.pdf", "", pagesPDF("", "BT /F1 12 Tf (text) Tj ET <4")) })
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "hex string") {
		t.Errorf("content: err = %v, want ErrMalformed", err)
	}
	// Hex strings that are closed, or broken (the library stops or resumes
	// there), are fine, and so is a '<' in a string or a comment.
	for _, c := range []string{
		"BT /F1 12 Tf <74657874> Tj ET",
		"BT /F1 12 Tf (text) Tj ET [<zz(> <",
		"BT /F1 12 Tf (te\\)<xt) Tj ET % <",
		"BT /F1 12 Tf (text) Tj ET /N#3C<>",
	} {
		withDeadline(t, func() { _, err = Extract("a.pdf", "", pagesPDF("", c)) })
		if err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}

	// A ToUnicode map ending in "<": the font is read without it.
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		stream("BT /F1 12 Tf (Plain) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
		stream("begincmap 1 begincodespacerange <00> <FF> endcodespacerange <")}
	var doc Document
	withDeadline(t, func() { doc, err = Extract("a.pdf", "", buildPDF("%PDF-1.4", objs, "")) })
	if err != nil || doc.Text != "Plain" {
		t.Errorf("ToUnicode: %q, %v", doc.Text, err)
	}

	// An object stream ending in "<".
	withDeadline(t, func() { _, err = Extract("a.pdf", "", objStmPDF("<< /Type /Pages /Kids [] /Count 0 >> <")) })
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "object stream") {
		t.Errorf("object stream: err = %v, want ErrMalformed", err)
	}
	withDeadline(t, func() { doc, err = Extract("a.pdf", "", objStmPDF("<< /Type /Pages /Kids [4 0 R] /Count 1 >>")) })
	if err != nil || doc.Text != "From an object stream." {
		t.Errorf("good object stream: %q, %v", doc.Text, err)
	}
}

// objStmPDF is a PDF 1.5 with a cross-reference stream whose page tree
// root, object 2, is stored in a compressed object stream as pages.
func objStmPDF(pages string) []byte { return objStmPDFDict(pages, "/Type /ObjStm /N 1", 2) }

// objStmPDFDict is objStmPDF with the object stream's dictionary entries
// (less /First) given, and the number the stream gives the object it
// holds (not 2: object 2 is not found in it, and a reader looks for it in
// the stream it /Extends).
func objStmPDFDict(pages, dict string, id int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	offsets := map[int]int{}
	obj := func(n int, body string) {
		offsets[n] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, body)
	}
	obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	header := fmt.Sprintf("%d 0 ", id)
	obj(3, flateStream(header+pages, fmt.Sprintf("%s /First %d ", dict, len(header))))
	obj(4, "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 6 0 R >>")
	obj(5, helvetica)
	obj(6, stream("BT /F1 12 Tf 72 720 Td (From an object stream.) Tj ET"))
	xref := b.Len()
	var rows bytes.Buffer
	row := func(typ byte, f2 int, f3 int) {
		rows.Write([]byte{typ, byte(f2 >> 24), byte(f2 >> 16), byte(f2 >> 8), byte(f2), byte(f3 >> 8), byte(f3)})
	}
	row(0, 0, 65535)
	row(1, offsets[1], 0)
	row(2, 3, 0) // object 2: index 0 in object stream 3
	for n := 3; n <= 6; n++ {
		row(1, offsets[n], 0)
	}
	row(1, xref, 0)
	fmt.Fprintf(&b, "7 0 obj\n<< /Type /XRef /Size 8 /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n%s\nendstream\nendobj\n", rows.Len(), rows.String())
	fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}
