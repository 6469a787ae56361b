package main

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The scoring rules, the same for both pipelines. Every rule reads the
// answer's text as the client gets it; only the documents a citation names
// come from each pipeline's own form (Sovereign's citations array, the
// baseline's [n] markers mapped to the chunks it was given).

// markerRe matches a citation marker: [1], [1][3] is two, [1, 3] and
// [1; 3] name two sources in one.
var markerRe = regexp.MustCompile(`\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]`)

// sentence is one sentence of an answer: its text without markers, and
// the source numbers its markers name, in order, one slice per marker.
type sentence struct {
	Text    string  `json:"text"`
	Markers [][]int `json:"markers,omitempty"`
}

// abbreviations end in a period that does not end a sentence.
var abbreviations = map[string]bool{"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "no": true, "capt": true,
	"e.g": true, "i.e": true, "etc": true, "vs": true, "approx": true, "ca": true, "c": true}

// splitSentences splits an answer into sentences. A sentence ends at . ! ?
// or … followed by white space or the end (closing quotes and brackets
// stay with it), and at a line break. Markers written after the end
// ("… in 1872. [2] Next") belong to the sentence they follow, as do markers
// alone on a line; a marker inside a sentence ("… in 1872 [2].") is that
// sentence's, and markers before the first words cite nothing. A period after
// a single capital (an initial), a known abbreviation or between digits
// does not end a sentence. Segments without a letter or digit are not
// sentences.
func splitSentences(answer string) []sentence { return split(answer, false) }

// splitLenient is splitSentences, except that markers before the answer's
// first word cite its first sentence ("[1] 1872"): a reading kinder to a
// model that writes its marker first, reported beside the score.
func splitLenient(answer string) []sentence { return split(answer, true) }

func split(answer string, lenient bool) []sentence {
	r := []rune(answer)
	var leading [][]int
	var out []sentence
	cur := strings.Builder{}
	var curMarkers [][]int
	hasWord := func(s string) bool {
		return strings.IndexFunc(s, func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }) >= 0
	}
	flush := func() {
		text := strings.Join(strings.Fields(cur.String()), " ")
		if hasWord(text) {
			if len(out) == 0 && len(leading) > 0 {
				curMarkers = append(leading, curMarkers...)
			}
			out = append(out, sentence{Text: text, Markers: curMarkers})
		}
		cur.Reset()
		curMarkers = nil
	}
	// markerAt returns the marker starting at i and its end, or nil.
	markerAt := func(i int) ([]int, int) {
		if r[i] != '[' {
			return nil, i
		}
		end := i + 1
		for end < len(r) && r[end] != ']' && end-i < 40 {
			end++
		}
		if end >= len(r) || r[end] != ']' {
			return nil, i
		}
		s := string(r[i : end+1])
		if !markerRe.MatchString(s) || markerRe.FindString(s) != s {
			return nil, i
		}
		return parseMarker(s), end + 1
	}
	i := 0
	for i < len(r) {
		if nums, end := markerAt(i); nums != nil {
			switch {
			case hasWord(cur.String()):
				curMarkers = append(curMarkers, nums)
			case len(out) > 0:
				// Before this sentence's first word (at the start of a
				// line): it follows the sentence before.
				out[len(out)-1].Markers = append(out[len(out)-1].Markers, nums)
			case lenient:
				leading = append(leading, nums)
			}
			// Before the answer's first word, it follows nothing.
			i = end
			continue
		}
		c := r[i]
		if c == '\n' {
			flush()
			i++
			continue
		}
		cur.WriteRune(c)
		i++
		if c != '.' && c != '!' && c != '?' && c != '…' {
			continue
		}
		if c == '.' && !periodEnds(r, i-1) {
			continue
		}
		// Closing quotes and brackets stay with the sentence.
		for i < len(r) && strings.ContainsRune("\"'”’)*", r[i]) {
			cur.WriteRune(r[i])
			i++
		}
		// Markers after the end, with or without spaces between.
		j := i
		var after [][]int
		for {
			k := j
			for k < len(r) && (r[k] == ' ' || r[k] == '\t') {
				k++
			}
			if k < len(r) {
				if nums, end := markerAt(k); nums != nil {
					after = append(after, nums)
					j = end
					continue
				}
			}
			break
		}
		if j < len(r) && !unicode.IsSpace(r[j]) && len(after) == 0 {
			continue // "2.4", "e.g.x": not an end
		}
		curMarkers = append(curMarkers, after...)
		i = j
		flush()
	}
	flush()
	return out
}

// periodEnds says whether the period at r[i] can end a sentence.
func periodEnds(r []rune, i int) bool {
	if i+1 < len(r) && unicode.IsDigit(r[i+1]) {
		return false
	}
	// The word before the period.
	j := i
	for j > 0 && (unicode.IsLetter(r[j-1]) || r[j-1] == '.') {
		j--
	}
	word := strings.ToLower(string(r[j:i]))
	if abbreviations[word] {
		return false
	}
	if i-j == 1 && unicode.IsUpper(r[j]) && (j == 0 || !unicode.IsLetter(r[j-1])) {
		return false // an initial: "J. Smith"
	}
	return true
}

func parseMarker(s string) []int {
	var nums []int
	for _, f := range strings.FieldsFunc(strings.Trim(s, "[] "), func(c rune) bool { return c == ',' || c == ';' || c == ' ' }) {
		if n, err := strconv.Atoi(f); err == nil {
			nums = append(nums, n)
		}
	}
	return nums
}

// plain is the answer as compared with gold strings: markers removed,
// lower case, typographic quotes and dashes made plain, spaces collapsed.
func plain(answer string) string {
	s := markerRe.ReplaceAllString(answer, " ")
	s = strings.NewReplacer("’", "'", "‘", "'", "“", "\"", "”", "\"", "–", "-", "—", "-", "\u00a0", " ", "\u202f", " ").Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// containsGold says whether one of the gold strings appears in the answer
// (case-insensitive), as a whole: not inside a longer word or number
// ("9" is not found in "1901").
func containsGold(answer string, gold []string) bool {
	p := plain(answer)
	for _, g := range gold {
		g = plain(g)
		if g == "" {
			continue
		}
		for off := 0; ; {
			k := strings.Index(p[off:], g)
			if k < 0 {
				break
			}
			start, end := off+k, off+k+len(g)
			if boundary(p, start-1) && boundary(p, end) {
				return true
			}
			off = start + 1
		}
	}
	return false
}

func boundary(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	c := rune(s[i])
	return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80)
}

// abstainRe recognises an answer that says the sources do not hold the
// answer: Sovereign's fixed sentence, and the usual ways a model says it.
var abstainRe = regexp.MustCompile(`\b(` +
	`the sources do not say` +
	`|i (do not|don't|dont|cannot|can't) (know|say|tell|find|determine|answer)` +
	`|(does|do|did) not (say|mention|contain|provide|specify|state|include|give|list|indicate|tell|have information|have any information)` +
	`|(doesn't|don't|didn't) (say|mention|contain|provide|specify|state|include|give|list|indicate|tell|have information|have any information)` +
	`|(is|are|was|were) not (mentioned|provided|specified|stated|given|included|available|found|known|listed|indicated)` +
	`|(isn't|aren't|wasn't|weren't) (mentioned|provided|specified|stated|given|included|available|found|known|listed|indicated)` +
	`|no (information|mention|details?|data|record|indication) (about|on|of|regarding|is|in|was|that|to)` +
	`|not (enough|sufficient) information` +
	`|(cannot|can't|can not|unable to|not able to) (be )?(find|found|determine|determined|answer|answered|tell|say|know)` +
	`|there is no (information|mention|record)` +
	`|unknown` +
	`)\b`)

// abstains says whether the answer declines to answer.
func abstains(answer string) bool { return abstainRe.MatchString(plain(answer)) }

// maxNgramRepeat is the highest count of any word n-gram in the answer
// (markers removed, lower case, words of letters and digits).
func maxNgramRepeat(answer string, n int) int {
	words := strings.FieldsFunc(plain(answer), func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) })
	counts := map[string]int{}
	best := 0
	for i := 0; i+n <= len(words); i++ {
		k := strings.Join(words[i:i+n], " ")
		counts[k]++
		best = max(best, counts[k])
	}
	return best
}

// loops says whether an answer looped: a word 4-gram that occurs three
// times or more, or an answer cut by the length limit with a 4-gram that
// occurs twice.
func loops(answer, finish string) bool {
	m := maxNgramRepeat(answer, 4)
	return m >= 3 || (finish == "length" && m >= 2)
}
