package config

import (
	"io"
	"testing"
)

// migrate_on_start defaults to true (a single node migrates at start);
// the environment, the flag and --no-migrate turn it off.
func TestMigrateOnStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default", nil, nil, true},
		{"env", nil, map[string]string{"SOVEREIGN_MIGRATE_ON_START": "false"}, false},
		{"flag", []string{"--migrate-on-start=false"}, nil, false},
		{"no-migrate", []string{"--no-migrate"}, nil, false},
		{"no-migrate wins over env", []string{"--no-migrate"}, map[string]string{"SOVEREIGN_MIGRATE_ON_START": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.MigrateOnStart != tc.want {
				t.Errorf("MigrateOnStart = %v, want %v", c.MigrateOnStart, tc.want)
			}
		})
	}
}
