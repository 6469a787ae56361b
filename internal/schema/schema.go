// Package schema holds the rules that let two releases of Sovereign serve
// from one database at the same time, as they do during a rolling upgrade
// (docs/upgrading.md): migrations are expand-then-contract, a binary
// tolerates a schema newer than the migrations it embeds as long as that
// schema was only expanded past it, and the database records the oldest
// release a contract step left able to serve from it (the floor).
//
// The store packages (internal/postgres, internal/sqlite) run goose over
// their embedded migrations; this package reads those files (their
// markers), reads goose's version table without changing anything (for
// `sovereign migrate --check` and `serve --no-migrate`), and keeps the
// floor in the table schema_floor.
package schema

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ContractMarker starts the comment line that makes a migration a contract
// step: "-- sovereign:contract after=00020" says the migration removes or
// changes something that releases embedding fewer than 20 migrations
// still use, so it may ship only in a release after the one that shipped
// migration 20 (the expand step that made the old thing unused). Once it
// is applied, the floor is 20: a binary whose highest migration is below
// 20 refuses to start on this database.
const ContractMarker = "-- sovereign:contract"

// Migration is one embedded migration file.
type Migration struct {
	// Version is the number the file name starts with.
	Version int64
	File    string
	// ContractAfter is the N of a "-- sovereign:contract after=N" marker;
	// 0 for an expand step.
	ContractAfter int64
	// Up is the SQL of the file's Up section (without its Down section).
	Up string
}

var markerRE = regexp.MustCompile(`^--\s*sovereign:contract\s+after=0*([0-9]+)\s*$`)

// Load reads the *.sql migrations at the root of fsys, by version.
// Errors: a file name without a version, a malformed contract marker.
func Load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("schema: migration %s: no version number", e.Name())
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		m := Migration{Version: v, File: e.Name()}
		var up strings.Builder
		section := ""
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			t := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(t, "-- +goose Up"):
				section = "up"
				continue
			case strings.HasPrefix(t, "-- +goose Down"):
				section = "down"
				continue
			case strings.HasPrefix(t, ContractMarker):
				sub := markerRE.FindStringSubmatch(t)
				if sub == nil {
					return nil, fmt.Errorf("schema: migration %s: malformed marker %q (want %s after=NNNNN)", e.Name(), t, ContractMarker)
				}
				m.ContractAfter, _ = strconv.ParseInt(sub[1], 10, 64)
				continue
			}
			if section == "up" {
				up.WriteString(line)
				up.WriteByte('\n')
			}
		}
		m.Up = up.String()
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Migration) int { return int(a.Version - b.Version) })
	return out, nil
}

// Latest is the highest version among ms (0 for none).
func Latest(ms []Migration) int64 {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// FloorOf is the floor that applying ms sets: the highest ContractAfter
// among them.
func FloorOf(ms []Migration) int64 {
	var f int64
	for _, m := range ms {
		f = max(f, m.ContractAfter)
	}
	return f
}

// Status is the application schema of one database as one binary sees it.
type Status struct {
	// Current is the highest migration applied (0: none, a new database).
	Current int64
	// Known is the highest migration this binary embeds.
	Known int64
	// Pending are the embedded migrations not applied yet.
	Pending []int64
	// Floor is the lowest Known a binary may have to serve from this
	// database (0 until a contract step is applied).
	Floor int64
}

// Behind reports whether the database lacks migrations this binary needs.
func (s Status) Behind() bool { return len(s.Pending) > 0 }

// Ahead reports whether the database has migrations this binary does not
// know (a newer release migrated it).
func (s Status) Ahead() bool { return s.Current > s.Known }

// String describes s in one line, for the migrate command and logs.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d (this build knows %d", s.Current, s.Known)
	if len(s.Pending) > 0 {
		fmt.Fprintf(&b, "; %d pending: %s", len(s.Pending), versions(s.Pending))
	}
	if s.Ahead() {
		b.WriteString("; the database is newer")
	}
	if s.Floor > 0 {
		fmt.Fprintf(&b, "; serves releases that know %d or later", s.Floor)
	}
	b.WriteString(")")
	return b.String()
}

// versions lists vs (ascending) with runs shortened: "00001-00019, 00021".
func versions(vs []int64) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%05d-%05d", vs[i], vs[j]))
		} else {
			parts = append(parts, fmt.Sprintf("%05d", vs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// Errors of Serveable; check with errors.Is.
var (
	// ErrBehind: migrations this binary needs are not applied.
	ErrBehind = errors.New("the database schema is behind this release")
	// ErrTooOld: a contract step applied to the database removed what this
	// binary uses.
	ErrTooOld = errors.New("this release is too old for the database schema")
)

// Serveable says whether a binary with this status may serve from the
// database: nothing pending, and no contract step past it. A database
// that is only ahead (a newer release expanded it) is serveable: that is
// what lets the previous release keep serving during a rolling upgrade.
func (s Status) Serveable() error {
	if s.Floor > s.Known {
		return fmt.Errorf("%w: the schema is at version %d and a contract step needs releases that know migration %05d or later; this binary knows up to %05d (deploy the newer release, or restore the backup taken before the upgrade)",
			ErrTooOld, s.Current, s.Floor, s.Known)
	}
	if s.Behind() {
		return fmt.Errorf("%w: version %d, this release needs %05d (pending: %s); run `sovereign migrate` first (or start serve with migrate_on_start true)",
			ErrBehind, s.Current, s.Known, versions(s.Pending))
	}
	return nil
}

// Dialect is what reading the version table needs to know of a database.
type Dialect struct {
	// TableExists is a query with one parameter, a table name, that
	// returns one row with one boolean: whether the table exists (where
	// the store's unqualified names resolve).
	TableExists string
	// Placeholder is the first parameter's placeholder: "$1" or "?".
	Placeholder string
}

// versionTable is goose's default version table.
const versionTable = "goose_db_version"

// Read reports db's schema against the embedded migrations ms, changing
// nothing (goose's own status calls create its version table).
func Read(ctx context.Context, db *sql.DB, d Dialect, ms []Migration) (Status, error) {
	st := Status{Known: Latest(ms)}
	applied := map[int64]bool{}
	ok, err := tableExists(ctx, db, d, versionTable)
	if err != nil {
		return st, err
	}
	if ok {
		if err := appliedVersions(ctx, db, applied); err != nil {
			return st, err
		}
		for v := range applied {
			st.Current = max(st.Current, v)
		}
	}
	for _, m := range ms {
		if !applied[m.Version] {
			st.Pending = append(st.Pending, m.Version)
		}
	}
	if st.Floor, err = ReadFloor(ctx, db, d); err != nil {
		return st, err
	}
	return st, nil
}

// appliedVersions adds the versions goose's table marks applied to into.
// The rows are closed before it returns: an in-memory SQLite database has
// one connection, which the next query needs.
func appliedVersions(ctx context.Context, db *sql.DB, into map[int64]bool) error {
	rows, err := db.QueryContext(ctx, `SELECT version_id FROM `+versionTable+` WHERE version_id > 0 AND is_applied`)
	if err != nil {
		return fmt.Errorf("schema: reading %s: %w", versionTable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		into[v] = true
	}
	return rows.Err()
}

// floorTable holds the floor (created by a migration of each dialect).
const floorTable = "schema_floor"

// ReadFloor returns the floor recorded in db (0 when the table is not
// there yet).
func ReadFloor(ctx context.Context, db *sql.DB, d Dialect) (int64, error) {
	ok, err := tableExists(ctx, db, d, floorTable)
	if err != nil || !ok {
		return 0, err
	}
	var f sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM `+floorTable).Scan(&f); err != nil {
		return 0, fmt.Errorf("schema: reading %s: %w", floorTable, err)
	}
	return f.Int64, nil
}

// RaiseFloor records floor in db unless a higher one is there; it does
// nothing while the table is not there yet. The floor only rises: a
// binary that embeds fewer contract steps than the database had applied
// must not lower it.
func RaiseFloor(ctx context.Context, db *sql.DB, d Dialect, floor int64) error {
	if floor <= 0 {
		return nil
	}
	ok, err := tableExists(ctx, db, d, floorTable)
	if err != nil || !ok {
		return err
	}
	q, args := `UPDATE `+floorTable+` SET version = $1 WHERE version < $1`, []any{floor}
	if d.Placeholder != "$1" {
		q, args = `UPDATE `+floorTable+` SET version = ? WHERE version < ?`, []any{floor, floor}
	}
	if _, err := db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("schema: recording the floor: %w", err)
	}
	return nil
}

func tableExists(ctx context.Context, db *sql.DB, d Dialect, name string) (bool, error) {
	var ok bool
	if err := db.QueryRowContext(ctx, d.TableExists, name).Scan(&ok); err != nil {
		return false, fmt.Errorf("schema: looking for table %s: %w", name, err)
	}
	return ok, nil
}

// DB is a database's application schema as one binary's migrations see
// it: what the SQLite and PostgreSQL stores' Schema and their steps
// around a migration share.
type DB struct {
	DB         *sql.DB
	Dialect    Dialect
	Migrations fs.FS
}

// Status reports the schema against the migrations, changing nothing.
func (d DB) Status(ctx context.Context) (Status, error) {
	ms, err := Load(d.Migrations)
	if err != nil {
		return Status{}, err
	}
	return Read(ctx, d.DB, d.Dialect, ms)
}

// RaiseFloor records the floor of every contract step the migrations
// hold (before they are applied, so that no moment exists where they are
// and an older release may still start).
func (d DB) RaiseFloor(ctx context.Context) error {
	ms, err := Load(d.Migrations)
	if err != nil {
		return err
	}
	return RaiseFloor(ctx, d.DB, d.Dialect, FloorOf(ms))
}

// AfterUp records the floor (its table may have just been created) and
// refuses a database a newer release contracted past these migrations.
func (d DB) AfterUp(ctx context.Context) error {
	if err := d.RaiseFloor(ctx); err != nil {
		return err
	}
	st, err := d.Status(ctx)
	if err != nil {
		return err
	}
	return st.Serveable()
}
