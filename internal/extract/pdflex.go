package extract

// The library's lexer, when reading a stream that may end anywhere (content
// streams, ToUnicode CMaps, object streams), loops for ever on a hex
// string left open at the end: at end of input it reads an endless run of
// newlines, which a hex string skips as white space. lexScanner follows the
// same tokenisation, pair by pair inside hex strings and resuming where
// the library resumes after an error, to find such a stream before the
// library reads it.

type lexState uint8

const (
	lexNormal lexState = iota
	lexComment
	lexName
	lexNameHex   // the two bytes after '#' in a name
	lexLiteral   // inside ( ), depth in lexScanner.depth
	lexEscape    // after '\' in a literal string
	lexEscapeCR  // after "\<CR>": an optional LF
	lexOctal     // after "\d" or "\dd"
	lexLT        // after '<': '<' makes "<<", anything else opens a hex string
	lexHexFirst  // in a hex string, before the first digit of a pair
	lexHexSecond // in a hex string, before the second digit of a pair
)

// lexScanner is an io.Writer fed the decoded bytes of a stream (or of
// several that are read as one); Hangs reports, after the last, whether
// the library would loop on them.
type lexScanner struct {
	state    lexState
	depth    int // literal string nesting
	n        int // bytes left in lexNameHex; digits seen in lexOctal
	octal    int
	hexFirst byte
}

func (s *lexScanner) Write(p []byte) (int, error) {
	for _, c := range p {
		s.step(c)
	}
	return len(p), nil
}

// Hangs reports whether the input so far ends inside a hex string (or
// just after a '<'), where the library would loop for ever.
func (s *lexScanner) Hangs() bool {
	return s.state == lexLT || s.state == lexHexFirst || s.state == lexHexSecond
}

func lexSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func lexDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (s *lexScanner) step(c byte) {
	switch s.state {
	case lexComment:
		if c == '\r' || c == '\n' {
			s.state = lexNormal
		}
		return
	case lexName:
		switch {
		case c == '#':
			s.state, s.n = lexNameHex, 2
			return
		case lexDelim(c) || lexSpace(c):
			s.state = lexNormal // and c is read as a new token below
		default:
			return
		}
	case lexNameHex:
		if s.n--; s.n == 0 {
			s.state = lexName
		}
		return
	case lexLiteral:
		switch c {
		case '(':
			s.depth++
		case ')':
			if s.depth--; s.depth == 0 {
				s.state = lexNormal
			}
		case '\\':
			s.state = lexEscape
		}
		return
	case lexEscape:
		switch c {
		case 'n', 'r', 'b', 't', 'f', '(', ')', '\\', '\n':
			s.state = lexLiteral
		case '\r':
			s.state = lexEscapeCR
		case '0', '1', '2', '3', '4', '5', '6', '7':
			s.state, s.n, s.octal = lexOctal, 1, int(c-'0')
		default:
			s.state = lexNormal // an error: the library resumes after c
		}
		return
	case lexEscapeCR:
		s.state = lexLiteral
		if c == '\n' {
			return
		}
		s.step(c)
		return
	case lexOctal:
		if c >= '0' && c <= '7' {
			s.octal = s.octal*8 + int(c-'0')
			if s.n++; s.n < 3 {
				return
			}
			s.state = lexLiteral
			if s.octal > 255 {
				s.state = lexNormal
			}
			return
		}
		s.state = lexLiteral
		if s.octal > 255 {
			s.state = lexNormal
		}
		s.step(c)
		return
	case lexLT:
		if c == '<' {
			s.state = lexNormal
			return
		}
		s.state = lexHexFirst
		s.step(c)
		return
	case lexHexFirst:
		switch {
		case c == '>':
			s.state = lexNormal
		case lexSpace(c):
		default:
			s.hexFirst, s.state = c, lexHexSecond
		}
		return
	case lexHexSecond:
		if lexSpace(c) {
			return
		}
		s.state = lexHexFirst
		if unhexByte(s.hexFirst) < 0 || unhexByte(c) < 0 {
			s.state = lexNormal // an error: the library resumes after c
		}
		return
	}
	// lexNormal
	switch c {
	case '%':
		s.state = lexComment
	case '(':
		s.state, s.depth = lexLiteral, 1
	case '<':
		s.state = lexLT
	case '/':
		s.state = lexName
	}
}

func unhexByte(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
