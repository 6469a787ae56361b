package inference

// JSONEnd finds where the JSON value at the start of a text ends, fed a
// piece at a time. A runner uses it for JSON response formats: the grammar
// lets a model write up to 21 whitespace characters after the value (as
// llama.cpp's JSON grammars do), which small models do, one token at a time;
// ending at the value's last byte instead gives OpenAI's answer (the JSON
// alone) and spends no tokens on padding.
//
// Objects, arrays and strings end at their closing byte. A number, true,
// false or null at the top level has no closing byte and is left to the
// grammar.
type JSONEnd struct {
	depth    int
	started  bool
	inString bool
	escape   bool
	scalar   bool
	done     bool
}

// Feed reads the next piece of output. It returns how many bytes of piece
// belong to the value and true once the value has ended (then the rest of
// piece, and anything after, is not part of it).
func (j *JSONEnd) Feed(piece []byte) (int, bool) {
	if j.done {
		return 0, true
	}
	for i, c := range piece {
		if j.scalar {
			continue
		}
		if j.inString {
			switch {
			case j.escape:
				j.escape = false
			case c == '\\':
				j.escape = true
			case c == '"':
				j.inString = false
				if j.depth == 0 {
					j.done = true
					return i + 1, true
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '{', '[':
			j.depth++
			j.started = true
		case '}', ']':
			j.depth--
			if j.depth <= 0 && j.started {
				j.done = true
				return i + 1, true
			}
		case '"':
			j.inString = true
			j.started = true
		default:
			if !j.started {
				j.scalar = true // a top-level number or literal
			}
		}
	}
	return len(piece), false
}
