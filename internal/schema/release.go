package schema

import (
	"bufio"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed previous_release.txt
var previousRelease string

// Release is the release a rolling upgrade to this tree starts from
// (previous_release.txt).
type Release struct {
	// Rev is the git revision it was built from.
	Rev string
	// Highest is its highest migration by dialect ("postgres", "sqlite").
	Highest map[string]int64
}

// PreviousRelease parses previous_release.txt.
func PreviousRelease() (Release, error) {
	r := Release{Highest: map[string]int64{}}
	sc := bufio.NewScanner(strings.NewReader(previousRelease))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			return r, fmt.Errorf("schema: previous_release.txt: %q: want KEY VALUE", line)
		}
		val = strings.TrimSpace(val)
		switch key {
		case "rev":
			r.Rev = val
		case "postgres", "sqlite":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return r, fmt.Errorf("schema: previous_release.txt: %s: %w", key, err)
			}
			r.Highest[key] = n
		default:
			return r, fmt.Errorf("schema: previous_release.txt: unknown key %q", key)
		}
	}
	if r.Rev == "" || r.Highest["postgres"] == 0 || r.Highest["sqlite"] == 0 {
		return r, fmt.Errorf("schema: previous_release.txt: want rev, postgres and sqlite")
	}
	return r, nil
}
