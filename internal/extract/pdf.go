package extract

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"
)

// PDF reading is done by github.com/ledongthuc/pdf, which parses the file
// structure, content streams, fonts and their ToUnicode maps; the layout of
// glyphs into words and lines is ours (pdftext.go), since the library's
// GetPlainText drops the spaces and line breaks that PDFs express by glyph
// positions rather than by space characters.
//
// The library reports most malformations by panicking, and a few kinds of
// hostile input would make it allocate without bound or loop for ever, so
// extractPDF recovers every panic, checks the cross-reference structure
// first (preflightPDF), walks the page tree itself with bounds, and counts
// the decompressed bytes it interprets.

// Bounds on structures of a PDF that no real file comes near.
const (
	maxPDFObjects     = 8 << 20 // cross-reference entries (40 bytes each in the library)
	maxXrefSections   = 1000    // /Prev chain length
	maxObjStmObjects  = 100000  // /N of one object stream
	maxObjStmBytes    = 8 << 20 // one object stream, decompressed
	maxPageTreeDepth  = 64
	maxParentChain    = 64
	maxFormDepth      = 8
	contentBudgetMult = 8 // decompressed content bytes allowed per byte of MaxTextBytes
)

func extractPDF(data []byte, o Options) (doc Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = Document{}, errorf(ErrMalformed, "the PDF could not be read: %v", panicMessage(r))
		}
	}()
	if err := preflightPDF(data); err != nil {
		return Document{}, err
	}
	r, err := pdf.NewReader(headerFix{data}, int64(len(data)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) {
			return Document{}, errorf(ErrUnsupported, "the PDF is encrypted with a password; upload an unprotected copy")
		}
		return Document{}, errorf(ErrMalformed, "the PDF could not be read: %v", err)
	}
	root := r.Trailer().Key("Root").Key("Pages")
	if root.Kind() != pdf.Dict {
		return Document{}, errorf(ErrMalformed, "the PDF could not be read: it has no page tree")
	}
	if n := root.Key("Count").Int64(); n > int64(o.MaxPages) {
		return Document{}, errorf(ErrTooLarge, "the PDF has %d pages, more than the limit of %d", n, o.MaxPages)
	}
	pages, err := pdfPages(root, o.MaxPages)
	if err != nil {
		return Document{}, err
	}
	x := newPDFText(o)
	var firstErr error
	for _, p := range pages {
		x.beginPage()
		if err := x.page(p); err != nil {
			if errors.Is(err, ErrTooLarge) {
				return Document{}, err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	text := finishText(x.out.String())
	if strings.TrimSpace(text) == "" {
		if firstErr != nil {
			return Document{}, errorf(ErrMalformed, "the PDF could not be read: %v", firstErr)
		}
		return Document{}, errorf(ErrEmpty, "the PDF contains no extractable text (a scanned document needs OCR first)")
	}
	return Document{Text: text, Title: pdfTitle(r)}, nil
}

func pdfTitle(r *pdf.Reader) (title string) {
	defer func() {
		if recover() != nil {
			title = ""
		}
	}()
	return collapseSpace(r.Trailer().Key("Info").Key("Title").Text())
}

// panicMessage renders a recovered panic value without a stack.
func panicMessage(r any) string {
	if e, ok := r.(runtime.Error); ok {
		return "internal error in the PDF reader (" + e.Error() + ")"
	}
	s := fmt.Sprint(r)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// pdfPages returns the page dictionaries in order, walking the tree from
// root with its depth and size bounded (the library's own Page(i) walk
// trusts /Count and loops on cyclic trees).
func pdfPages(root pdf.Value, maxPages int) ([]pdf.Value, error) {
	var pages []pdf.Value
	visits, maxVisits := 0, 4*maxPages+1024
	var walk func(n pdf.Value, depth int) error
	walk = func(n pdf.Value, depth int) error {
		if visits++; visits > maxVisits || depth > maxPageTreeDepth {
			return errorf(ErrMalformed, "the PDF could not be read: its page tree is cyclic or too deep")
		}
		kids := n.Key("Kids")
		if n.Key("Type").Name() == "Page" || (kids.Kind() != pdf.Array && n.Kind() == pdf.Dict) {
			if len(pages) == maxPages {
				return errorf(ErrTooLarge, "the PDF has more than the limit of %d pages", maxPages)
			}
			pages = append(pages, n)
			return nil
		}
		for i := 0; i < kids.Len(); i++ {
			if err := walk(kids.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return nil, err
	}
	return pages, nil
}

// inherited looks key up in page and then its /Parent chain, bounded (the
// library's lookup loops for ever on a cyclic /Parent).
func inherited(page pdf.Value, key string) pdf.Value {
	for i, v := 0, page; i < maxParentChain && !v.IsNull(); i, v = i+1, v.Key("Parent") {
		if x := v.Key(key); !x.IsNull() {
			return x
		}
	}
	return pdf.Value{}
}

// headerFix serves the PDF with its first line rewritten to "%PDF-1.7\n"
// when it names another version or is not followed by a line end: the
// library refuses anything but %PDF-1.0 to %PDF-1.7 followed by CR or LF,
// which leaves out PDF 2.0 and headers followed by a comment on one line.
type headerFix struct{ data []byte }

var fixedHeader = []byte("%PDF-1.7\n")

func (h headerFix) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(h.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.data[off:])
	if off < int64(len(fixedHeader)) && len(h.data) >= len(fixedHeader) && needsHeaderFix(h.data) {
		copy(p[:n], fixedHeader[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func needsHeaderFix(data []byte) bool {
	if !bytes.HasPrefix(data, []byte("%PDF-")) || len(data) < len(fixedHeader) {
		return false
	}
	v := data[5:9]
	ok := v[0] == '1' && v[1] == '.' && v[2] >= '0' && v[2] <= '7' && (v[3] == '\r' || v[3] == '\n')
	return !ok
}

var (
	reInt      = regexp.MustCompile(`^\s*(\d+)`)
	reObjStart = regexp.MustCompile(`^\s*\d+\s+\d+\s+obj\b`)
	rePrev     = regexp.MustCompile(`/Prev\s+(\d+)`)
	reSize     = regexp.MustCompile(`/Size\s+(\d+)`)
	reW        = regexp.MustCompile(`/W\s*\[([^\]]*)\]`)
	reIndex    = regexp.MustCompile(`/Index\s*\[([^\]]*)\]`)
	reN        = regexp.MustCompile(`/N\s+(\d+)`)
	reFilter   = regexp.MustCompile(`/([A-Za-z0-9]+Decode)\b`)
)

// preflightPDF checks, before the library sees them, the structures with
// which a small hostile file could make it allocate gigabytes or loop for
// ever: cross-reference sections (a /Prev loop, object numbers or /Size
// far past anything real, huge /W field widths), object streams (a huge /N,
// /Extends chains, which the library follows without a cycle check). Files
// it cannot make sense of are left for the library to report.
func preflightPDF(data []byte) error {
	maxObjects := min(int64(len(data))+65536, maxPDFObjects)
	if err := checkXrefChain(data, maxObjects); err != nil {
		return err
	}
	return checkObjectStreams(data, maxObjects)
}

// checkXrefChain follows startxref and the /Prev chain of cross-reference
// sections, checking each.
func checkXrefChain(data []byte, maxObjects int64) error {
	bad := func(detail string) error {
		return errorf(ErrMalformed, "the PDF could not be read: %s", detail)
	}
	tail := data[max(0, len(data)-1024):]
	i := bytes.LastIndex(tail, []byte("startxref"))
	if i < 0 {
		return nil
	}
	m := reInt.FindSubmatch(tail[i+len("startxref"):])
	if m == nil {
		return nil
	}
	off, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		return bad("invalid startxref")
	}
	seen := map[int64]bool{}
	for steps := 0; ; steps++ {
		if off <= 0 || off >= int64(len(data)) {
			return nil
		}
		if seen[off] {
			return bad("its cross-reference sections form a loop")
		}
		if steps >= maxXrefSections {
			return bad("too many cross-reference sections")
		}
		seen[off] = true
		sec := data[off:]
		var dict []byte
		switch {
		case bytes.HasPrefix(bytes.TrimLeft(sec, " \t\r\n\f\x00"), []byte("xref")):
			end := bytes.Index(sec, []byte("trailer"))
			if end < 0 {
				return nil
			}
			if err := checkXrefTable(sec[:end], maxObjects); err != nil {
				return bad(err.Error())
			}
			dict = sec[end:min(len(sec), end+4096)]
			if j := bytes.Index(dict, []byte("startxref")); j >= 0 {
				dict = dict[:j]
			}
		case reObjStart.Match(sec[:min(len(sec), 64)]):
			end := bytes.Index(sec[:min(len(sec), 65536)], []byte("stream"))
			if end < 0 {
				return nil
			}
			dict = sec[:end]
			if err := checkXrefStream(dict, maxObjects); err != nil {
				return bad(err.Error())
			}
		default:
			return nil
		}
		m := rePrev.FindSubmatch(dict)
		if m == nil {
			return nil
		}
		if off, err = strconv.ParseInt(string(m[1]), 10, 64); err != nil {
			return bad("invalid /Prev")
		}
	}
}

// checkXrefTable checks the subsection headers ("first count") of a
// classic cross-reference table.
func checkXrefTable(sec []byte, maxObjects int64) error {
	lines := bytes.FieldsFunc(sec, func(r rune) bool { return r == '\n' || r == '\r' })
	for _, l := range lines[1:] {
		f := bytes.Fields(l)
		if len(f) != 2 {
			continue // an entry, "0000000017 00000 n"
		}
		first, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		count, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if first < 0 || count < 0 || first+count > maxObjects {
			return fmt.Errorf("its cross-reference table names object %d, far more than the file can hold", first+count)
		}
	}
	return nil
}

// checkXrefStream checks /Size, /W and /Index of a cross-reference stream's
// dictionary.
func checkXrefStream(dict []byte, maxObjects int64) error {
	if m := reSize.FindSubmatch(dict); m != nil {
		if n, err := strconv.ParseInt(string(m[1]), 10, 64); err != nil || n > maxObjects {
			return fmt.Errorf("its cross-reference stream has /Size %s, far more than the file can hold", m[1])
		}
	}
	if m := reW.FindSubmatch(dict); m != nil {
		for _, f := range bytes.Fields(m[1]) {
			if n, err := strconv.ParseInt(string(f), 10, 64); err != nil || n < 0 || n > 8 {
				return fmt.Errorf("its cross-reference stream has an invalid /W")
			}
		}
	}
	if m := reIndex.FindSubmatch(dict); m != nil {
		f := bytes.Fields(m[1])
		for i := 0; i+1 < len(f); i += 2 {
			first, err1 := strconv.ParseInt(string(f[i]), 10, 64)
			count, err2 := strconv.ParseInt(string(f[i+1]), 10, 64)
			if err1 != nil || err2 != nil || first < 0 || count < 0 || first+count > maxObjects {
				return fmt.Errorf("its cross-reference stream has an invalid /Index")
			}
		}
	}
	return nil
}

// checkObjectStreams refuses object streams with an /N no producer writes,
// and /Extends (the library follows that chain without a cycle check; no
// mainstream producer writes it).
func checkObjectStreams(data []byte, maxObjects int64) error {
	if bytes.Contains(data, []byte("/ObjStm")) && bytes.Contains(data, []byte("/Encrypt")) {
		// Encrypted object streams cannot be checked with lexScanner
		// before the library reads them.
		return errorf(ErrUnsupported, "encrypted PDFs with compressed object streams are not supported; upload an unprotected copy")
	}
	for rest := data; ; {
		i := bytes.Index(rest, []byte("/ObjStm"))
		if i < 0 {
			return nil
		}
		lo := max(0, i-512)
		if j := bytes.LastIndex(rest[lo:i], []byte("<<")); j >= 0 {
			lo += j
		}
		hi := min(len(rest), i+512)
		if j := bytes.Index(rest[i:hi], []byte(">>")); j >= 0 {
			hi = i + j
		}
		if bytes.Contains(rest[lo:hi], []byte("/Extends")) {
			return errorf(ErrUnsupported, "the PDF uses object streams with /Extends, which are not supported")
		}
		if m := reN.FindSubmatch(rest[lo:hi]); m != nil {
			if n, err := strconv.ParseInt(string(m[1]), 10, 64); err != nil || n > maxObjStmObjects || n > maxObjects {
				return errorf(ErrMalformed, "the PDF could not be read: an object stream claims %s objects", m[1])
			}
		}
		if j := bytes.Index(rest[i:min(len(rest), i+2048)], []byte("stream")); j >= 0 {
			if err := checkObjStmData(rest[lo:i+j], rest[i+j:]); err != nil {
				return err
			}
		}
		rest = rest[i+len("/ObjStm"):]
	}
}

// checkObjStmData checks that the library can read the object stream whose
// dictionary is dict and whose "stream" keyword begins after: that its
// data does not end inside a hex string (see lexScanner) nor inflate past
// maxObjStmBytes. Only unfiltered and FlateDecode streams are checked;
// object streams with other filters are refused.
func checkObjStmData(dict, after []byte) error {
	body := after[len("stream"):]
	body = bytes.TrimPrefix(body, []byte("\r"))
	body = bytes.TrimPrefix(body, []byte("\n"))
	var r io.Reader
	switch filters := reFilter.FindAllSubmatch(dict, -1); {
	case !bytes.Contains(dict, []byte("/Filter")):
		if end := bytes.Index(body, []byte("endstream")); end >= 0 {
			body = body[:end]
		}
		r = bytes.NewReader(body)
	case len(filters) == 1 && string(filters[0][1]) == "FlateDecode" && !bytes.Contains(dict, []byte("/DecodeParms")):
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil // the library fails on it too, without hanging
		}
		r = zr
	default:
		return errorf(ErrUnsupported, "the PDF's object streams use a compression that is not supported")
	}
	var lex lexScanner
	n, err := io.Copy(&lex, io.LimitReader(r, maxObjStmBytes+1))
	if n > maxObjStmBytes {
		return errorf(ErrTooLarge, "an object stream of the PDF is more than %s decompressed", sizeString(maxObjStmBytes))
	}
	if err == nil && lex.Hangs() {
		return errorf(ErrMalformed, "the PDF could not be read: an object stream ends inside a hex string")
	}
	return nil
}
