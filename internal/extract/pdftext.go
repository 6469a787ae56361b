package extract

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// pdfText interprets page content streams and lays the text they show out
// as words and lines: a new line where the baseline moves by more than half
// a line (a blank line where it moves by more than two), a space where the
// next string starts noticeably after the end of the previous one, judged
// from the fonts' glyph widths (or an average width where a font has none).
type pdfText struct {
	o             Options
	out           strings.Builder
	contentBudget int64 // decompressed bytes left to interpret
	fonts         map[string]*pdfFont

	newlines     int  // newlines ending out (2: nothing to separate from)
	pendingSpace bool // a space is due before the next character
	have         bool // a string was shown on this page
	last         point
	lastSize     float64
	lastGuessed  bool // the last string's widths were estimated
}

type point struct{ x, y float64 }

// matrix is a PDF transformation [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul returns m×n: apply m, then n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(p point) point {
	return point{p.x*m[0] + p.y*m[2] + m[4], p.x*m[1] + p.y*m[3] + m[5]}
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// gstate is the part of the graphics state that q and Q save and restore
// and text placement depends on.
type gstate struct {
	ctm                        matrix
	tc, tw, th, tl, tfs, trise float64
	font                       *pdfFont
}

// errBudget aborts interpretation when a limit of Options is passed.
type errBudget struct{ err error }

func newPDFText(o Options) *pdfText {
	return &pdfText{
		o:             o,
		contentBudget: int64(o.MaxTextBytes) * contentBudgetMult,
		fonts:         map[string]*pdfFont{},
		newlines:      2,
	}
}

// beginPage separates pages with a blank line.
func (x *pdfText) beginPage() {
	x.brk(2)
	x.have = false
}

// page interprets one page's content. Errors: an *Error wrapping
// ErrTooLarge when a budget is spent (extraction must stop), or any other
// error for a page whose content could not be (entirely) read; the text
// shown before the failure is kept.
func (x *pdfText) page(p pdf.Value) error {
	res := inherited(p, "Resources")
	g := gstate{ctm: identity, th: 1}
	return x.run(p.Key("Contents"), res, &g, 0)
}

// run interprets a content stream (or array of them) with resources res,
// starting from graphics state g.
func (x *pdfText) run(content, res pdf.Value, g *gstate, depth int) (err error) {
	if content.Kind() != pdf.Stream && content.Kind() != pdf.Array {
		return nil
	}
	if content.Kind() == pdf.Array && content.Len() > 10000 {
		return errors.New("too many content streams")
	}
	if err := x.spend(content); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			if b, ok := r.(errBudget); ok {
				err = b.err
				return
			}
			err = errors.New(panicMessage(r))
		}
	}()
	var (
		gs     []gstate
		tm     = identity
		tlm    = identity
		fonts  = map[string]*pdfFont{}
		args   []pdf.Value
		setFnt = func(name string, size float64) {
			f, ok := fonts[name]
			if !ok {
				f = x.font(res.Key("Font").Key(name))
				fonts[name] = f
			}
			g.font, g.tfs = f, size
		}
	)
	nextLine := func(tx, ty float64) {
		tlm = translate(tx, ty).mul(tlm)
		tm = tlm
	}
	num := func(i int) float64 {
		if i >= len(args) {
			return 0
		}
		v := args[i]
		if v.Kind() == pdf.Integer {
			return float64(v.Int64())
		}
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0
		}
		return f
	}
	pdf.Interpret(content, func(stk *pdf.Stack, op string) {
		n := stk.Len()
		args = args[:0]
		for i := 0; i < n; i++ {
			args = append(args, pdf.Value{})
		}
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "q":
			if len(gs) < 1024 {
				gs = append(gs, *g)
			}
		case "Q":
			if len(gs) > 0 {
				*g = gs[len(gs)-1]
				gs = gs[:len(gs)-1]
			}
		case "cm":
			if len(args) == 6 {
				g.ctm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}.mul(g.ctm)
			}
		case "BT":
			tm, tlm = identity, identity
		case "Tc":
			g.tc = num(0)
		case "Tw":
			g.tw = num(0)
		case "Tz":
			g.th = num(0) / 100
		case "TL":
			g.tl = num(0)
		case "Ts":
			g.trise = num(0)
		case "Tf":
			if len(args) == 2 {
				setFnt(args[0].Name(), num(1))
			}
		case "Td":
			nextLine(num(0), num(1))
		case "TD":
			g.tl = -num(1)
			nextLine(num(0), num(1))
		case "Tm":
			if len(args) == 6 {
				tlm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}
				tm = tlm
			}
		case "T*":
			nextLine(0, -g.tl)
		case "Tj":
			if len(args) == 1 {
				x.show(g, &tm, args[0].RawString())
			}
		case "'":
			if len(args) == 1 {
				nextLine(0, -g.tl)
				x.show(g, &tm, args[0].RawString())
			}
		case "\"":
			if len(args) == 3 {
				g.tw, g.tc = num(0), num(1)
				nextLine(0, -g.tl)
				x.show(g, &tm, args[2].RawString())
			}
		case "TJ":
			if len(args) == 1 {
				a := args[0]
				for i := 0; i < a.Len(); i++ {
					e := a.Index(i)
					switch e.Kind() {
					case pdf.String:
						x.show(g, &tm, e.RawString())
					case pdf.Integer, pdf.Real:
						adj := e.Float64()
						if e.Kind() == pdf.Integer {
							adj = float64(e.Int64())
						}
						if !math.IsNaN(adj) && !math.IsInf(adj, 0) {
							tm = translate(-adj/1000*g.tfs*g.th, 0).mul(tm)
						}
					}
				}
			}
		case "Do":
			if len(args) == 1 && depth < maxFormDepth {
				xo := res.Key("XObject").Key(args[0].Name())
				if xo.Kind() == pdf.Stream && xo.Key("Subtype").Name() == "Form" {
					sub := *g
					if m := xo.Key("Matrix"); m.Len() == 6 {
						var fm matrix
						for i := range fm {
							fm[i] = m.Index(i).Float64()
						}
						sub.ctm = fm.mul(sub.ctm)
					}
					r := xo.Key("Resources")
					if r.IsNull() {
						r = res
					}
					if err := x.run(xo, r, &sub, depth+1); err != nil {
						var e *Error
						if errors.As(err, &e) && errors.Is(e, ErrTooLarge) {
							panic(errBudget{err})
						}
					}
				}
			}
		}
	})
	return nil
}

// errHexHang: a stream ends inside a hex string (see lexScanner).
var errHexHang = errors.New("a content stream ends inside a hex string")

// spend counts the decompressed size of a content stream (or array of
// them, read as one) against the budget before it is interpreted, which
// bounds the work of a compression bomb and of a form drawn many times,
// and checks that the library can read it without hanging (errHexHang).
func (x *pdfText) spend(v pdf.Value) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a content stream could not be read: %s", panicMessage(r))
		}
	}()
	streams := []pdf.Value{v}
	if v.Kind() == pdf.Array {
		streams = streams[:0]
		for i := 0; i < v.Len(); i++ {
			streams = append(streams, v.Index(i))
		}
	}
	var lex lexScanner
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		n, err := io.Copy(&lex, io.LimitReader(s.Reader(), x.contentBudget+1))
		x.contentBudget -= n
		if x.contentBudget < 0 {
			return errorf(ErrTooLarge, "the PDF's content is too large to extract: its page content passes %s decompressed", sizeString(x.o.MaxTextBytes*contentBudgetMult))
		}
		if err != nil {
			return fmt.Errorf("a content stream could not be read: %v", err)
		}
	}
	if lex.Hangs() {
		return errHexHang
	}
	return nil
}

// show lays out one string shown with the current font and advances the
// text matrix past it.
func (x *pdfText) show(g *gstate, tm *matrix, raw string) {
	f := g.font
	if f == nil {
		f = defaultFont
	}
	trm := tm.mul(g.ctm)
	start := translate(0, g.trise).mul(trm).apply(point{})
	size := math.Abs(g.tfs) * math.Hypot(trm[2], trm[3])
	if size < 0.01 || math.IsNaN(size) || math.IsInf(size, 0) {
		size = 0.01
	}
	text := f.decode(raw)

	// Advance: glyph widths (in thousandths of text space), character and
	// word spacing, horizontal scaling.
	var adv float64
	guessed := false
	for i := 0; i+f.codeBytes <= len(raw); i += f.codeBytes {
		code := int(raw[i])
		if f.codeBytes == 2 {
			code = code<<8 | int(raw[i+1])
		}
		w, ok := f.width(code)
		if !ok {
			w, guessed = 500, true
		}
		adv += w/1000*g.tfs + g.tc
		if f.codeBytes == 1 && code == ' ' {
			adv += g.tw
		}
	}
	adv *= g.th
	if math.IsNaN(adv) || math.IsInf(adv, 0) {
		adv = 0
	}
	*tm = translate(adv, 0).mul(*tm)
	end := translate(0, g.trise).mul(tm.mul(g.ctm)).apply(point{})

	if strings.TrimSpace(text) == "" {
		// Spaces drawn as glyphs separate words; keep the position.
		if text != "" && x.have {
			x.pendingSpace = true
		}
		x.last, x.lastSize = end, size
		return
	}
	if x.have {
		x.separate(trm, start, size)
	}
	x.write(text)
	x.have = true
	x.last, x.lastSize, x.lastGuessed = end, size, guessed
	if x.out.Len() > x.o.MaxTextBytes {
		panic(errBudget{errorf(ErrTooLarge, "the PDF's text is more than the limit of %s", sizeString(x.o.MaxTextBytes))})
	}
}

// separate decides what goes between the previous string and one starting
// at start: nothing, a space, a line break or a blank line. Distances are
// measured along and across the direction of the text, so rotated pages
// work too.
func (x *pdfText) separate(trm matrix, start point, size float64) {
	ux, uy := trm[0], trm[1]
	if l := math.Hypot(ux, uy); l > 0 && !math.IsInf(l, 0) {
		ux, uy = ux/l, uy/l
	} else {
		ux, uy = 1, 0
	}
	dx, dy := start.x-x.last.x, start.y-x.last.y
	along := dx*ux + dy*uy
	across := -dx*uy + dy*ux // positive: upwards
	line := max(size, x.lastSize)
	switch {
	case math.Abs(across) > 2*line:
		x.brk(2)
	case math.Abs(across) > 0.5*line:
		x.brk(1)
	default:
		gap := 0.15
		if x.lastGuessed {
			gap = 0.3
		}
		if along > gap*line || along < -line {
			x.pendingSpace = true
		}
	}
}

// write appends text, turning each run of whitespace into one space.
func (x *pdfText) write(text string) {
	for _, r := range text {
		if unicode.IsSpace(r) {
			if x.newlines == 0 {
				x.pendingSpace = true
			}
			continue
		}
		if s, ok := ligatures[r]; ok {
			x.writeRaw(s)
			continue
		}
		if r == utf8.RuneError || unicode.IsControl(r) {
			continue
		}
		x.writeRaw(string(r))
	}
}

func (x *pdfText) writeRaw(s string) {
	if x.pendingSpace && x.newlines == 0 {
		x.out.WriteByte(' ')
	}
	x.pendingSpace = false
	x.out.WriteString(s)
	x.newlines = 0
}

// brk ends the line with at least n newlines.
func (x *pdfText) brk(n int) {
	x.pendingSpace = false
	for x.newlines < n {
		x.out.WriteByte('\n')
		x.newlines++
	}
}

// ligatures spelled out, so that "ﬁle" is found as "file".
var ligatures = map[rune]string{
	'\uFB00': "ff", '\uFB01': "fi", '\uFB02': "fl", '\uFB03': "ffi",
	'\uFB04': "ffl", '\uFB05': "st", '\uFB06': "st",
}

// pdfFont is what layout needs of a font: how to decode its codes to text
// and how wide each code is.
type pdfFont struct {
	enc       pdf.TextEncoding
	codeBytes int // 1 for simple fonts, 2 for composite (Type0) fonts
	first     int
	widths    []float64       // simple fonts, from FirstChar
	cidW      map[int]float64 // composite fonts, from /W
	cidRanges []cidRange      // composite fonts, from /W "first last w"
	dw        float64         // composite fonts' default width
	scale     float64         // Type3: FontMatrix in thousandths
}

type cidRange struct {
	first, last int
	w           float64
}

var defaultFont = &pdfFont{enc: latin1Encoding{}, codeBytes: 1, scale: 1}

func (f *pdfFont) width(code int) (float64, bool) {
	if f.codeBytes == 2 {
		if w, ok := f.cidW[code]; ok {
			return w, true
		}
		for _, r := range f.cidRanges {
			if code >= r.first && code <= r.last {
				return r.w, true
			}
		}
		return f.dw, true
	}
	i := code - f.first
	if i < 0 || i >= len(f.widths) || f.widths[i] <= 0 {
		return 0, false
	}
	return f.widths[i] * f.scale, true
}

// decode turns codes into text; encodings the library passes through raw
// are read as Latin-1 rather than left as invalid UTF-8.
func (f *pdfFont) decode(raw string) (s string) {
	defer func() {
		if recover() != nil {
			s = latin1Encoding{}.Decode(raw)
		}
	}()
	s = f.enc.Decode(raw)
	if !utf8.ValidString(s) {
		s = latin1Encoding{}.Decode(raw)
	}
	return s
}

type latin1Encoding struct{}

func (latin1Encoding) Decode(raw string) string {
	r := make([]rune, len(raw))
	for i := 0; i < len(raw); i++ {
		r[i] = rune(raw[i])
	}
	return string(r)
}

// font loads a font dictionary, cached across pages by its printed form
// (which names its indirect parts by object number).
func (x *pdfText) font(v pdf.Value) (f *pdfFont) {
	if v.Kind() != pdf.Dict {
		return defaultFont
	}
	key := v.String()
	if f, ok := x.fonts[key]; ok {
		return f
	}
	defer func() {
		if r := recover(); r != nil {
			if b, ok := r.(errBudget); ok {
				panic(b)
			}
			f = defaultFont
		}
		x.fonts[key] = f
	}()
	f = &pdfFont{codeBytes: 1, scale: 1, dw: 1000}
	f.enc = latin1Encoding{}
	usable := true
	if tu := v.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		if err := x.spend(tu); err != nil {
			if errors.Is(err, ErrTooLarge) {
				panic(errBudget{err})
			}
			usable = false // the library would fail or hang reading it
		}
	}
	if usable {
		lf := pdf.Font{V: v}
		if enc := lf.Encoder(); enc != nil {
			f.enc = enc
		}
	}
	switch v.Key("Subtype").Name() {
	case "Type0":
		f.codeBytes = 2
		d := v.Key("DescendantFonts").Index(0)
		if dw := d.Key("DW"); !dw.IsNull() {
			f.dw = dw.Float64()
			if dw.Kind() == pdf.Integer {
				f.dw = float64(dw.Int64())
			}
		}
		f.cidW = map[int]float64{}
		w := d.Key("W")
		for i, n := 0, min(w.Len(), 1<<16); i < n; {
			first := int(w.Index(i).Int64())
			next := w.Index(i + 1)
			if next.Kind() == pdf.Array {
				for j := 0; j < min(next.Len(), 1<<16); j++ {
					f.cidW[first+j] = numberOf(next.Index(j))
				}
				i += 2
				continue
			}
			f.cidRanges = append(f.cidRanges, cidRange{first, int(next.Int64()), numberOf(w.Index(i + 2))})
			i += 3
		}
	case "Type3":
		if m := v.Key("FontMatrix"); m.Len() == 6 {
			f.scale = numberOf(m.Index(0)) * 1000
		}
		fallthrough
	default:
		f.first = int(v.Key("FirstChar").Int64())
		w := v.Key("Widths")
		for i := 0; i < min(w.Len(), 1<<16); i++ {
			f.widths = append(f.widths, numberOf(w.Index(i)))
		}
	}
	return f
}

func numberOf(v pdf.Value) float64 {
	var f float64
	if v.Kind() == pdf.Integer {
		f = float64(v.Int64())
	} else {
		f = v.Float64()
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
