package extract

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// extractText reads a txt or md upload: UTF-8 required (a leading BOM is
// dropped), CRLF and lone CR become LF, nothing else changes. For markdown
// the title is the first "# " heading outside fenced code.
func extractText(data []byte, markdown bool) (Document, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		return Document{}, errorf(ErrUnsupported, "the file is not UTF-8 text (invalid byte at offset %d): save it as UTF-8 and upload it again", off)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return Document{}, errorf(ErrUnsupported, "the file holds a NUL byte at offset %d: it looks like a binary file, not text", i)
	}
	text := normalizeNewlines(string(data))
	doc := Document{Text: text}
	if markdown {
		doc.Title = markdownTitle(text)
	}
	return doc, nil
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// markdownTitle returns the text of the first ATX level-one heading ("# "
// after at most three spaces, closing #s removed) that is not inside a
// fenced code block, or "".
func markdownTitle(text string) string {
	fence := ""
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if indent > 3 {
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			n := len(trimmed) - len(strings.TrimLeft(trimmed, trimmed[:1]))
			fence = strings.Repeat(trimmed[:1], n)
			continue
		}
		var rest string
		switch {
		case trimmed == "#":
			continue
		case strings.HasPrefix(trimmed, "# "), strings.HasPrefix(trimmed, "#\t"):
			rest = trimmed[2:]
		default:
			continue
		}
		rest = strings.TrimSpace(rest)
		// A closing sequence of #s is removed when preceded by a space.
		if t := strings.TrimRight(rest, "#"); t != rest && (t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
			rest = strings.TrimSpace(t)
		}
		if rest != "" {
			return rest
		}
	}
	return ""
}
