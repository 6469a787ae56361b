package pii

import (
	"net/netip"
	"strings"
)

// The built-in detectors. Each has a next function (the candidate scan:
// find anchor bytes, check the left boundary, parse) and a parser that
// reads the text only through a window of the detector's hold bytes from
// the candidate's start, never past the first byte its matches cannot
// contain plus one byte of look-ahead: that is what lets a stream decide a
// position as soon as the window or a terminator is there (engine.go).
// The windows are a little larger than the longest match plus its
// look-ahead, so that they never cut a parse short.

const (
	emailWin = 330 // local part 64, '@', domain run read up to 255, look-ahead
	phoneWin = 40  // phoneSpan, look-ahead, and a group read past it
	ibanWin  = 48  // 34 characters in 9 groups, look-ahead
	cardWin  = 40  // 19 digits in up to 6 groups, the next group read, look-ahead
	ipWin    = 48  // the longest IPv6 text is 45 bytes, look-ahead

	// phoneSpan is the longest phone number, in bytes: 15 digits and
	// their separators.
	phoneSpan = 32
)

// Byte classes.
const (
	cDigit  = 1 << iota
	cUpper  // A-Z
	cAlpha  // A-Z a-z
	cWord   // A-Z a-z 0-9 _
	cLocal  // an e-mail local part: A-Z a-z 0-9 . _ % + -
	cDomain // an e-mail domain: A-Z a-z 0-9 . -
	cIPRun  // an IP address: hex digits . :
)

var ctype = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		digit := '0' <= b && b <= '9'
		upper := 'A' <= b && b <= 'Z'
		alpha := upper || 'a' <= b && b <= 'z'
		hex := digit || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
		set := func(ok bool, m uint8) {
			if ok {
				t[c] |= m
			}
		}
		set(digit, cDigit)
		set(upper, cUpper)
		set(alpha, cAlpha)
		set(alpha || digit || b == '_', cWord)
		set(alpha || digit || strings.IndexByte("._%+-", b) >= 0, cLocal)
		set(alpha || digit || b == '.' || b == '-', cDomain)
		set(hex || b == '.' || b == ':', cIPRun)
	}
	return t
}()

func is(c byte, m uint8) bool { return ctype[c]&m != 0 }
func isDigit(c byte) bool     { return ctype[c]&cDigit != 0 }
func isWord(c byte) bool      { return ctype[c]&cWord != 0 }

// terminators returns the table of bytes outside alphabet.
func terminators(alphabet func(byte) bool) *[256]bool {
	var t [256]bool
	for c := range t {
		t[c] = !alphabet(byte(c))
	}
	return &t
}

// builtins returns the built-in detectors in priority order.
func builtins() []*detector {
	ds := []*detector{
		{kind: IBAN, next: nextIBAN, hold: ibanWin, strong: true,
			term: terminators(func(c byte) bool { return is(c, cUpper|cDigit) || c == ' ' })},
		{kind: Card, next: nextCard, hold: cardWin, strong: true,
			term: terminators(func(c byte) bool { return isDigit(c) || c == ' ' || c == '-' })},
		{kind: Email, next: nextEmail, hold: emailWin, strong: true, email: true,
			term: terminators(func(c byte) bool { return is(c, cLocal) || c == '@' })},
		{kind: IP, next: nextIP, hold: ipWin, strong: true,
			term: terminators(func(c byte) bool { return is(c, cIPRun) })},
		{kind: Phone, next: nextPhone, hold: phoneWin, phone: true,
			term: terminators(func(c byte) bool { return isDigit(c) || strings.IndexByte(" -.()+", c) >= 0 })},
	}
	for i, d := range ds {
		d.rank = i
		// A parser reads at most the byte after a match's end, and the
		// number parsers one more for their right boundary ("5." vs "5.1").
		d.right = 2
		if d.kind == Email || d.kind == IBAN {
			d.right = 1
		}
	}
	return ds
}

// window returns s cut to the detector's window at p.
func window(s string, p, n int) string { return s[:min(len(s), p+n)] }

// digitsAt counts the digits at w[i:], up to max.
func digitsAt(w string, i, max int) int {
	n := 0
	for i+n < len(w) && n < max && isDigit(w[i+n]) {
		n++
	}
	return n
}

// numLeftOK reports whether a number may start at p: not inside a word
// or a number ("x4111…", "12.4111…", "2024-11-25" from its "11").
func numLeftOK(s string, p int) bool {
	if p == 0 {
		return true
	}
	switch c := s[p-1]; {
	case isWord(c):
		return false
	case c == '.' || c == ',' || c == '-' || c == ':' || c == '/':
		return p < 2 || !isDigit(s[p-2])
	}
	return true
}

// numRightOK reports whether a number may end at e: not followed by a
// word character or by punctuation that goes on with digits ("4.5",
// "1,000", "555-0173-12"). Sentence punctuation is fine.
func numRightOK(w string, e int) bool {
	if e >= len(w) {
		return true
	}
	switch c := w[e]; {
	case isWord(c):
		return false
	case c == '.' || c == ',' || c == '-' || c == ':' || c == '/':
		return e+1 >= len(w) || !isDigit(w[e+1])
	}
	return true
}

// ---- card ----

// nextCard finds card numbers: 13–19 digits, contiguous or in groups (a
// first group of 4, then groups of 3–6) separated by single spaces or
// single hyphens (the same throughout), passing the Luhn check. No issuer
// prefix is required.
func nextCard(s string, from, limit int) (int, int, bool) {
	for p := from; p < limit; p++ {
		if !isDigit(s[p]) || (p > 0 && isDigit(s[p-1])) || !numLeftOK(s, p) {
			continue
		}
		if e, ok := parseCard(window(s, p, cardWin), p); ok {
			return p, e, true
		}
	}
	return 0, 0, false
}

func parseCard(w string, p int) (int, bool) {
	n := digitsAt(w, p, 20)
	if n >= 13 && n <= 19 {
		e := p + n
		return e, numRightOK(w, e) && luhn(w[p:e])
	}
	if n != 4 || p+4 >= len(w) || (w[p+4] != ' ' && w[p+4] != '-') {
		return 0, false
	}
	sep := w[p+4]
	// The groups' ends with 13 digits or more: the longest whose number
	// passes wins, so "4111 1111 1111 1111 123" (a CVC after it) is still
	// the card.
	var ends [6]int
	ne, digits, i := 0, 4, p+4
	for ne < len(ends) && i < len(w) && w[i] == sep {
		g := digitsAt(w, i+1, 7)
		if g < 3 || g > 6 || digits+g > 19 {
			break
		}
		digits, i = digits+g, i+1+g
		if digits >= 13 {
			ends[ne] = i
			ne++
		}
	}
	for j := ne - 1; j >= 0; j-- {
		if e := ends[j]; numRightOK(w, e) && luhn(w[p:e]) {
			return e, true
		}
	}
	return 0, false
}

// luhn checks the digits of s (other bytes are skipped) with the Luhn
// algorithm.
func luhn(s string) bool {
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		if !isDigit(s[i]) {
			continue
		}
		n := int(s[i] - '0')
		if double {
			if n *= 2; n > 9 {
				n -= 9
			}
		}
		sum += n
		double = !double
	}
	return sum%10 == 0
}

// ---- iban ----

// ibanLength is the IBAN length of the countries whose length is checked;
// an IBAN of another country must have 15–34 characters.
var ibanLength = map[string]int{
	"AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22,
	"DK": 18, "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27,
	"HR": 21, "HU": 28, "IE": 22, "IS": 26, "IT": 27, "LI": 21, "LT": 20,
	"LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15, "PL": 28,
	"PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
}

// nextIBAN finds IBANs: a country code, two check digits and the BBAN,
// in capitals, either contiguous or in groups of four separated by single
// spaces (the paper format), valid by ISO 13616 mod-97 and of the
// country's length.
func nextIBAN(s string, from, limit int) (int, int, bool) {
	for p := from; p < limit; p++ {
		if !is(s[p], cUpper) {
			continue
		}
		if p+3 >= len(s) {
			break
		}
		if !is(s[p+1], cUpper) || !isDigit(s[p+2]) || !isDigit(s[p+3]) || (p > 0 && isWord(s[p-1])) {
			continue
		}
		if e, ok := parseIBAN(window(s, p, ibanWin), p); ok {
			return p, e, true
		}
	}
	return 0, 0, false
}

func parseIBAN(w string, p int) (int, bool) {
	want := ibanLength[w[p:p+2]]
	alnum := func(i, max int) int {
		n := 0
		for i+n < len(w) && n < max && is(w[i+n], cUpper|cDigit) {
			n++
		}
		return n
	}
	n := alnum(p, 35)
	var e, count int
	if n > 4 || p+4 >= len(w) || w[p+4] != ' ' {
		if n > 34 {
			return 0, false
		}
		e, count = p+n, n
	} else {
		// Groups of four; a shorter group ends the IBAN, and so does
		// reaching the country's length (the next group is other text).
		e, count = p+4, 4
		for e < len(w) && w[e] == ' ' && (want == 0 || count < want) {
			g := alnum(e+1, 5)
			if g == 0 || g > 4 || count+g > 34 {
				break
			}
			e, count = e+1+g, count+g
			if g < 4 {
				break
			}
		}
	}
	if want > 0 && count != want || want == 0 && (count < 15 || count > 34) {
		return 0, false
	}
	if e < len(w) && isWord(w[e]) {
		return 0, false
	}
	return e, mod97(w[p:e])
}

// mod97 checks an IBAN (spaces are skipped): with its first four
// characters moved to the end and letters read as 10–35, the number is 1
// modulo 97.
func mod97(s string) bool {
	r := 0
	add := func(c byte) {
		switch {
		case isDigit(c):
			r = (r*10 + int(c-'0')) % 97
		case is(c, cUpper):
			r = (r*100 + int(c-'A'+10)) % 97
		}
	}
	for i := 4; i < len(s); i++ {
		add(s[i])
	}
	for i := 0; i < 4; i++ {
		add(s[i])
	}
	return r == 1
}

// ---- email ----

// nextEmail finds e-mail addresses from their '@': the local part is the
// run of local-part characters before it (at most 64, not ending with a
// dot; see parseEmail for dots in a row), the domain two or more labels
// after it, ending in a top-level domain of two or more letters. Looking
// for '@' first is what keeps this fast: an address has nothing else to
// anchor on.
func nextEmail(s string, from, limit int) (int, int, bool) {
	for i := from; ; {
		k := strings.IndexByte(s[i:], '@')
		if k < 0 {
			return 0, 0, false
		}
		at := i + k
		i = at + 1
		st := at
		for st > from && at-st <= 64 && is(s[st-1], cLocal) {
			st--
		}
		if st == at || at-st > 64 || (st == from && st > 0 && is(s[st-1], cLocal)) {
			continue // empty, too long, or starting before from (inside a run)
		}
		if st >= limit {
			return 0, 0, false
		}
		if b, e, ok := parseEmail(window(s, st, emailWin), st, at); ok {
			return b, e, true
		}
	}
}

// parseEmail parses the address whose local part is the run w[p:at]. A
// local part cannot hold two dots in a row, so dots that the run starts
// with, or two or more in a row, are punctuation before the address
// ("wait...jane@example.com"); it returns where the address starts.
func parseEmail(w string, p, at int) (int, int, bool) {
	if p > 0 && w[p-1] == '@' {
		return 0, 0, false // "a@b@c.com" is no address
	}
	if i := strings.LastIndex(w[p:at], ".."); i >= 0 {
		p += i
	}
	for p < at && w[p] == '.' {
		p++
	}
	local := w[p:at]
	if local == "" || local[len(local)-1] == '.' {
		return 0, 0, false
	}
	j := at + 1
	d := j
	for d < len(w) && d-j < 255 && is(w[d], cDomain) {
		d++
	}
	if d-j >= 255 {
		return 0, 0, false
	}
	e := d
	for e > j && w[e-1] == '.' {
		e-- // a full stop after the address
	}
	if !validDomain(w[j:e]) || (e < len(w) && (isWord(w[e]) || w[e] == '@')) {
		return 0, 0, false
	}
	return p, e, true
}

// validDomain checks a host name: labels of 1–63 letters, digits and
// inner hyphens, at least two, the last (the top-level domain) of two or
// more letters.
func validDomain(d string) bool {
	if len(d) == 0 || len(d) > 253 {
		return false
	}
	labels := 0
	for len(d) > 0 {
		l := d
		if i := strings.IndexByte(d, '.'); i >= 0 {
			l, d = d[:i], d[i+1:]
			if d == "" {
				return false // an empty last label
			}
		} else {
			d = ""
		}
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		labels++
		if d == "" {
			if len(l) < 2 {
				return false
			}
			for i := 0; i < len(l); i++ {
				if !is(l[i], cAlpha) {
					return false
				}
			}
		}
	}
	return labels >= 2
}

// ---- ip ----

// nextIP finds IP addresses in the runs of hex digits, dots and colons
// that start at a word boundary: a dotted quad at the start of the run
// (then a port or a prefix length may follow it), or else the run as an
// IPv6 address (a trailing '.' or ':' is punctuation). net/netip decides
// validity, so "999.1.1.1", "01.2.3.4" and "12:30:45" are not addresses.
func nextIP(s string, from, limit int) (int, int, bool) {
	for p := from; p < limit; p++ {
		if !is(s[p], cIPRun) || (p > 0 && is(s[p-1], cIPRun)) {
			continue
		}
		if e, ok := parseIP(window(s, p, ipWin), p); ok {
			return p, e, true
		}
	}
	return 0, 0, false
}

func parseIP(w string, p int) (int, bool) {
	if p > 0 && isWord(w[p-1]) {
		return 0, false // "v1.2.3.4", "std::"
	}
	if isDigit(w[p]) {
		if e, ok := parseIPv4(w, p); ok {
			return e, true
		}
	}
	r, colons, hex := p, 0, false
	for r < len(w) && is(w[r], cIPRun) {
		switch w[r] {
		case ':':
			colons++
		case '.':
		default:
			hex = true
		}
		r++
	}
	if colons < 2 || !hex || r-p > 45 {
		return 0, false
	}
	e := r
	if !isIPv6(w[p:e]) {
		if c := w[e-1]; c != '.' && c != ':' {
			return 0, false
		}
		if e--; !isIPv6(w[p:e]) {
			return 0, false
		}
	}
	if e < len(w) && isWord(w[e]) {
		return 0, false
	}
	return e, true
}

func parseIPv4(w string, p int) (int, bool) {
	i := p
	for k := 0; k < 4; k++ {
		n := digitsAt(w, i, 4)
		if n == 0 || n > 3 {
			return 0, false
		}
		i += n
		if k < 3 {
			if i >= len(w) || w[i] != '.' {
				return 0, false
			}
			i++
		}
	}
	// Not followed by more of a number ("1.2.3.4.5", "1.2.3.45a").
	if i < len(w) && (isWord(w[i]) || w[i] == '.' && i+1 < len(w) && isDigit(w[i+1])) {
		return 0, false
	}
	a, err := netip.ParseAddr(w[p:i])
	return i, err == nil && a.Is4()
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// ---- phone ----

// nextPhone finds phone numbers:
//
//   - international: '+' (or "00") and a country code, then groups of
//     digits separated by single spaces, hyphens or dots, with at most one
//     parenthesised group ("+44 (0)20 7946 0958", "+1 (202) 555-0173"),
//     or all contiguous ("+33612345678"): 7–15 digits (9–15 after "00");
//   - North American: (202) 555-0173, 202-555-0173, 202.555.0173, with an
//     optional leading "1-";
//   - national with a trunk 0: "020 7946 0958", "06 12 34 56 78",
//     "(0161) 496 0000": a first group of 2–5 digits, then groups of 2–8
//     separated by one separator used throughout, 9–12 digits in all.
//
// A run of digits without separators or '+' is not a phone number (it is
// an amount, an id, a year), and neither is a date: "2024-11-25" does not
// have the North American shape, "01.02.2024" has too few digits.
func nextPhone(s string, from, limit int) (int, int, bool) {
	for p := from; p < limit; p++ {
		c := s[p]
		if c != '+' && c != '(' && !isDigit(c) {
			continue
		}
		if p > 0 && (isDigit(s[p-1]) && isDigit(c) || s[p-1] == '+') || !numLeftOK(s, p) {
			continue
		}
		if e, ok := parsePhone(window(s, p, phoneWin), p); ok {
			return p, e, true
		}
	}
	return 0, 0, false
}

func parsePhone(w string, p int) (int, bool) {
	switch c := w[p]; {
	case c == '+':
		return parseIntl(w, p, p+1, 7)
	case c == '(':
		if e, ok := parseNANPParen(w, p); ok {
			return e, true
		}
		return parseTrunk(w, p)
	case c == '0' && p+1 < len(w) && w[p+1] == '0':
		return parseIntl(w, p, p+2, 9)
	case c == '0':
		return parseTrunk(w, p)
	}
	return parseNANP(w, p)
}

func isPhoneSep(c byte) bool { return c == ' ' || c == '-' || c == '.' }

// parseIntl parses an international number whose country code starts at
// i (after the '+' or "00" at p).
func parseIntl(w string, p, i, minDigits int) (int, bool) {
	n := digitsAt(w, i, 16)
	if n == 0 || n > 15 || w[i] == '0' {
		return 0, false
	}
	total, j, paren := n, i+n, false
	for {
		k := j
		if k < len(w) && isPhoneSep(w[k]) {
			k++
		}
		if !paren && k < len(w) && w[k] == '(' {
			g := digitsAt(w, k+1, 5)
			if g == 0 || g > 4 || k+1+g >= len(w) || w[k+1+g] != ')' {
				break
			}
			m := k + 2 + g
			if m < len(w) && (w[m] == ' ' || w[m] == '-') {
				m++
			}
			h := digitsAt(w, m, 16)
			if h == 0 || total+g+h > 15 || m+h-p > phoneSpan {
				break
			}
			total, j, paren = total+g+h, m+h, true
			continue
		}
		if k == j {
			break // digits run up to a non-digit: a group needs a separator
		}
		g := digitsAt(w, k, 16)
		if g == 0 || total+g > 15 || k+g-p > phoneSpan {
			break
		}
		total, j = total+g, k+g
	}
	if total < minDigits {
		return 0, false
	}
	return j, numRightOK(w, j)
}

// parseNANP parses a North American number at the digit at p.
func parseNANP(w string, p int) (int, bool) {
	if w[p] == '1' && p+2 < len(w) && isPhoneSep(w[p+1]) {
		p += 2 // "1-800-…", "1 (800) …"
		if w[p] == '(' {
			return parseNANPParen(w, p)
		}
	}
	if digitsAt(w, p, 4) != 3 || w[p] < '2' || p+3 >= len(w) {
		return 0, false
	}
	sep := w[p+3]
	// Spaces alone ("250 300 1200") are too often just numbers.
	if sep != '-' && sep != '.' {
		return 0, false
	}
	if digitsAt(w, p+4, 4) != 3 || w[p+4] < '2' || p+7 >= len(w) || w[p+7] != sep || digitsAt(w, p+8, 5) != 4 {
		return 0, false
	}
	return p + 12, numRightOK(w, p+12)
}

// parseNANPParen parses "(202) 555-0173" at the '(' at p.
func parseNANPParen(w string, p int) (int, bool) {
	if digitsAt(w, p+1, 4) != 3 || w[p+1] < '2' || p+4 >= len(w) || w[p+4] != ')' {
		return 0, false
	}
	j := p + 5
	if j < len(w) && w[j] == ' ' {
		j++
	}
	if digitsAt(w, j, 4) != 3 || w[j] < '2' || j+3 >= len(w) || !isPhoneSep(w[j+3]) || digitsAt(w, j+4, 5) != 4 {
		return 0, false
	}
	return j + 8, numRightOK(w, j+8)
}

// parseTrunk parses a national number with a trunk 0, at the '0' or '('
// at p.
func parseTrunk(w string, p int) (int, bool) {
	var total, j int
	paren := w[p] == '('
	if paren {
		g := digitsAt(w, p+1, 6)
		if g < 2 || g > 5 || w[p+1] != '0' || w[p+2] == '0' || p+1+g >= len(w) || w[p+1+g] != ')' {
			return 0, false
		}
		m := p + 2 + g
		if m < len(w) && w[m] == ' ' {
			m++
		}
		h := digitsAt(w, m, 9)
		if h < 2 || h > 8 {
			return 0, false
		}
		total, j = g+h, m+h
	} else {
		g := digitsAt(w, p, 6)
		if g < 2 || g > 5 || w[p+1] == '0' {
			return 0, false
		}
		total, j = g, p+g
	}
	var sep byte
	for j < len(w) && isPhoneSep(w[j]) && (sep == 0 || w[j] == sep) {
		g := digitsAt(w, j+1, 9)
		if g < 2 || g > 8 || total+g > 12 || j+1+g-p > phoneSpan {
			break
		}
		sep, total, j = w[j], total+g, j+1+g
	}
	if !paren && sep == 0 || total < 9 {
		return 0, false
	}
	return j, numRightOK(w, j)
}
