package schema_test

import (
	"io/fs"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/schema"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// dialects are the migration directories the policy covers, by the name
// previous_release.txt uses.
var dialects = []struct {
	name string
	dir  string // in the repository, for git
	fsys fs.FS
}{
	{"postgres", "internal/postgres/migrations", postgres.Migrations()},
	{"sqlite", "internal/sqlite/migrations", sqlite.Migrations()},
}

// grandfathered are migrations that contract without a marker because
// they predate the expand-then-contract policy (issue 28): each ran, in
// its release, with every server stopped for the upgrade. By dialect and
// version; never add to this list — write an expand step and, a release
// later, a marked contract step instead (docs/upgrading.md).
var grandfathered = map[string]map[int64]string{
	// chunks.embedding moved to chunk_embeddings and was dropped in the
	// same migration (the release before any multi-server deployment).
	"postgres": {5: "00005_chunk_embeddings.sql"},
	"sqlite":   {6: "00006_chunk_embeddings.sql"},
}

// TestExpandThenContract fails when a migration takes away or narrows
// something the previous release uses (Contracting) outside a contract
// step released at least one version after its expand step: the
// previous release keeps serving from the database during a rolling
// upgrade, after the new release migrated it.
func TestExpandThenContract(t *testing.T) {
	prev, err := schema.PreviousRelease()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ms, err := schema.Load(d.fsys)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				t.Fatal("no migrations")
			}
			for _, v := range schema.Violations(ms, grandfathered[d.name], prev.Highest[d.name]) {
				t.Error(v)
			}
		})
	}
}

// TestViolations checks the policy on migrations made for it: what it
// must refuse, and what it must let through.
func TestViolations(t *testing.T) {
	load := func(files map[string]string) []schema.Migration {
		t.Helper()
		fsys := fstest.MapFS{}
		for name, body := range files {
			fsys[name] = &fstest.MapFile{Data: []byte(body)}
		}
		ms, err := schema.Load(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	base := map[string]string{
		"00001_a.sql": "-- +goose Up\nCREATE TABLE a (b INT);\n-- +goose Down\nDROP TABLE a;\n",
		"00002_b.sql": "-- +goose Up\nALTER TABLE a ADD COLUMN c INT;\n-- +goose Down\nALTER TABLE a DROP COLUMN c;\n",
	}
	with := func(name, body string) map[string]string {
		m := map[string]string{name: body}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name          string
		files         map[string]string
		grandfathered map[int64]string
		prev          int64
		want          string // "" for no violation
	}{
		{"expand only", base, nil, 2, ""},
		{"unmarked drop", with("00003_c.sql", "-- +goose Up\nALTER TABLE a DROP COLUMN b;\n"), nil, 2, "outside a contract step"},
		{"marked drop", with("00003_c.sql", "-- sovereign:contract after=00002\n-- +goose Up\nALTER TABLE a DROP COLUMN b;\n"), nil, 2, ""},
		{"expand in the same release", with("00003_c.sql", "-- sovereign:contract after=00002\n-- +goose Up\nALTER TABLE a DROP COLUMN b;\n"), nil, 1, "must ship in a release before"},
		{"after itself", with("00003_c.sql", "-- sovereign:contract after=00003\n-- +goose Up\nALTER TABLE a DROP COLUMN b;\n"), nil, 3, "not an earlier migration"},
		{"grandfathered", with("00003_c.sql", "-- +goose Up\nALTER TABLE a DROP COLUMN b;\n"), map[int64]string{3: "00003_c.sql"}, 2, ""},
		{"grandfathered for nothing", base, map[int64]string{2: "00002_b.sql"}, 2, "contracts nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(schema.Violations(load(tc.files), tc.grandfathered, tc.prev), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("violations %q, want %q", got, tc.want)
			}
		})
	}
}

// TestContracting checks the statement detector on what it must catch and
// what it must let through.
func TestContracting(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"ALTER TABLE chunks DROP COLUMN embedding;", []string{"DROP COLUMN"}},
		{"drop table foo;", []string{"DROP TABLE"}},
		{"ALTER TABLE a RENAME COLUMN b TO c;", []string{"RENAME"}},
		{"ALTER TABLE a RENAME TO b;", []string{"RENAME"}},
		{"ALTER TABLE a ALTER COLUMN b TYPE BIGINT;", []string{"ALTER ... TYPE"}},
		{"ALTER TABLE a ALTER COLUMN b SET DATA TYPE TEXT;", []string{"ALTER ... TYPE"}},
		{"ALTER TABLE a ALTER COLUMN b SET NOT NULL;", []string{"SET NOT NULL"}},
		{"ALTER TABLE a ADD COLUMN b TEXT NOT NULL;", []string{"ADD COLUMN ... NOT NULL without DEFAULT"}},
		{"ALTER TABLE a ADD CONSTRAINT b CHECK (c > 0);", []string{"ADD CONSTRAINT"}},
		{"DROP INDEX a_b;", []string{"DROP INDEX"}},
		{"TRUNCATE a;", []string{"TRUNCATE"}},
		// Expand steps.
		{"ALTER TABLE a ADD COLUMN b TEXT NOT NULL DEFAULT '';", nil},
		{"ALTER TABLE a ADD COLUMN b TEXT;", nil},
		{"CREATE TABLE a (id TEXT PRIMARY KEY, type TEXT NOT NULL);", nil},
		{"CREATE INDEX a_b ON a (b);", nil},
		{"-- we never DROP TABLE here\nCREATE TABLE x (y INT);", nil},
		{"/* DROP COLUMN in a comment */ SELECT 1;", nil},
	} {
		if got := schema.Contracting(tc.sql); !slices.Equal(got, tc.want) {
			t.Errorf("Contracting(%q) = %q, want %q", tc.sql, got, tc.want)
		}
	}
}

// TestLoadMarkers checks the contract marker and that a Down section's
// DROPs are not taken for the Up's.
func TestLoadMarkers(t *testing.T) {
	fsys := fstest.MapFS{
		"00001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (b INT);\n-- +goose Down\nDROP TABLE a;\n")},
		"00002_b.sql": {Data: []byte("-- +goose Up\nALTER TABLE a ADD COLUMN c INT;\n")},
		"00003_c.sql": {Data: []byte("-- sovereign:contract after=00002\n-- +goose Up\nALTER TABLE a DROP COLUMN b;\n")},
	}
	ms, err := schema.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || schema.Latest(ms) != 3 {
		t.Fatalf("loaded %+v", ms)
	}
	if got := schema.Contracting(ms[0].Up); got != nil {
		t.Errorf("00001's Up contracts %q: the Down section leaked in", got)
	}
	if ms[2].ContractAfter != 2 || ms[0].ContractAfter != 0 {
		t.Errorf("markers: %d, %d", ms[0].ContractAfter, ms[2].ContractAfter)
	}
	if f := schema.FloorOf(ms); f != 2 {
		t.Errorf("FloorOf = %d, want 2", f)
	}
	fsys["00004_d.sql"] = &fstest.MapFile{Data: []byte("-- sovereign:contract after=two\n")}
	if _, err := schema.Load(fsys); err == nil {
		t.Error("a malformed marker loaded")
	}
}

// TestPreviousReleaseMatchesGit checks previous_release.txt against the
// revision it names, where the checkout has git and that revision.
func TestPreviousReleaseMatchesGit(t *testing.T) {
	prev, err := schema.PreviousRelease()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, d := range dialects {
		cmd := exec.Command("git", "ls-tree", "--name-only", prev.Rev+":"+d.dir)
		cmd.Dir = "../.." // ls-tree lists only what lies under the working directory
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("git ls-tree %s:%s: %v (a checkout without that revision)", prev.Rev, d.dir, err)
		}
		var highest int64
		for _, name := range strings.Fields(string(out)) {
			if path.Ext(name) != ".sql" {
				continue
			}
			ms, err := schema.Load(fstest.MapFS{name: {Data: []byte("-- +goose Up\n")}})
			if err != nil {
				t.Fatal(err)
			}
			highest = max(highest, schema.Latest(ms))
		}
		if highest != prev.Highest[d.name] {
			t.Errorf("previous_release.txt says %s %d; %s has migrations up to %d", d.name, prev.Highest[d.name], prev.Rev, highest)
		}
	}
}
