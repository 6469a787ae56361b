package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// contracting are the statements that take away or narrow something a
// running release may use: a table, a column, an index an ON CONFLICT
// names, a name, a type, or the freedom to leave a column out of an
// INSERT. Each is allowed only in a contract step (ContractMarker).
var contracting = []struct {
	what string
	re   *regexp.Regexp
}{
	{"DROP TABLE", regexp.MustCompile(`(?is)\bDROP\s+TABLE\b`)},
	{"DROP COLUMN", regexp.MustCompile(`(?is)\bDROP\s+COLUMN\b`)},
	{"DROP VIEW", regexp.MustCompile(`(?is)\bDROP\s+(MATERIALIZED\s+)?VIEW\b`)},
	{"DROP INDEX", regexp.MustCompile(`(?is)\bDROP\s+INDEX\b`)},
	{"DROP CONSTRAINT/DEFAULT", regexp.MustCompile(`(?is)\bDROP\s+(CONSTRAINT|DEFAULT)\b`)},
	{"DROP TRIGGER/FUNCTION", regexp.MustCompile(`(?is)\bDROP\s+(TRIGGER|FUNCTION|TYPE|SEQUENCE)\b`)},
	{"RENAME", regexp.MustCompile(`(?is)\bRENAME\b`)},
	{"ALTER ... TYPE", regexp.MustCompile(`(?is)\bALTER\s+(COLUMN\s+)?\S+\s+(SET\s+DATA\s+)?TYPE\b`)},
	{"SET NOT NULL", regexp.MustCompile(`(?is)\bSET\s+NOT\s+NULL\b`)},
	{"ADD CONSTRAINT", regexp.MustCompile(`(?is)\bADD\s+CONSTRAINT\b`)},
	{"TRUNCATE", regexp.MustCompile(`(?is)\bTRUNCATE\b`)},
}

var (
	// addColumnRE finds ADD COLUMN clauses up to the end of the clause.
	addColumnRE = regexp.MustCompile(`(?is)\bADD\s+COLUMN\b[^,;]*`)
	notNullRE   = regexp.MustCompile(`(?is)\bNOT\s+NULL\b`)
	defaultRE   = regexp.MustCompile(`(?is)\bDEFAULT\b`)
	blockRE     = regexp.MustCompile(`(?s)/\*.*?\*/`)
)

// Contracting lists the contracting statements in the SQL up (comments
// are ignored): the kinds above, and an ADD COLUMN ... NOT NULL without a
// DEFAULT, which makes the previous release's INSERTs fail.
func Contracting(up string) []string {
	sql := stripComments(up)
	var found []string
	for _, c := range contracting {
		if c.re.MatchString(sql) {
			found = append(found, c.what)
		}
	}
	for _, clause := range addColumnRE.FindAllString(sql, -1) {
		if notNullRE.MatchString(clause) && !defaultRE.MatchString(clause) {
			found = append(found, "ADD COLUMN ... NOT NULL without DEFAULT")
		}
	}
	return found
}

// stripComments removes "--" line comments and "/* */" block comments
// (string literals in migrations do not contain either).
func stripComments(s string) string {
	s = blockRE.ReplaceAllString(s, " ")
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Violations checks the migrations ms of one dialect against the
// expand-then-contract policy: a migration with contracting statements
// must be a contract step (ContractMarker) unless grandfathered (by
// version, with its file name); a contract step's after= must name an
// earlier migration that the previous release (whose highest migration is
// prevHighest) already embedded, so that the expand step shipped at least
// one release before it.
func Violations(ms []Migration, grandfathered map[int64]string, prevHighest int64) []string {
	have := map[int64]bool{}
	for _, m := range ms {
		have[m.Version] = true
	}
	var out []string
	for _, m := range ms {
		found := Contracting(m.Up)
		if file, ok := grandfathered[m.Version]; ok {
			if file != m.File {
				out = append(out, fmt.Sprintf("grandfathered migration %d is %s, not %s", m.Version, m.File, file))
			}
			if len(found) == 0 {
				out = append(out, fmt.Sprintf("%s is grandfathered but contracts nothing: remove it from the list", m.File))
			}
			continue
		}
		if m.ContractAfter == 0 {
			if len(found) > 0 {
				out = append(out, fmt.Sprintf("%s contracts the schema (%s) outside a contract step: the previous release still uses what it removes while both serve. "+
					"Expand now (add the new table or column, write both), and contract a release later in a migration marked %q (docs/upgrading.md)",
					m.File, strings.Join(found, ", "), ContractMarker+" after=NNNNN"))
			}
			continue
		}
		switch n := m.ContractAfter; {
		case n >= m.Version:
			out = append(out, fmt.Sprintf("%s: after=%05d is not an earlier migration", m.File, n))
		case !have[n]:
			out = append(out, fmt.Sprintf("%s: after=%05d names no migration", m.File, n))
		case n > prevHighest:
			out = append(out, fmt.Sprintf("%s: after=%05d, but the previous release embeds migrations up to %05d only: the expand step must ship in a release before its contract step",
				m.File, n, prevHighest))
		}
	}
	return out
}
