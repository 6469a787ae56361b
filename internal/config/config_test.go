package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPrecedenceDefaultsFileEnvFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte("addr: 127.0.0.1:9000\nslots: 6\nkeep_alive: 10m\ndata_dir: /srv/sov\n"), 0o600)
	c, err := Load([]string{"--slots", "8"}, env(map[string]string{"SOVEREIGN_CONFIG": file, "SOVEREIGN_ADDR": "127.0.0.1:9100"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9100" || c.Slots != 8 || c.KeepAlive != 10*time.Minute || c.CtxPerSlot != 4096 {
		t.Fatalf("precedence wrong: %+v", c)
	}
	if c.ModelsDir != "/srv/sov/models" || c.DatabaseURL != "/srv/sov/sovereign.db" {
		t.Fatalf("derived paths wrong: %+v", c)
	}
}

func TestRejectsUnknownYAMLKeyAndBadValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte("adress: x\n"), 0o600)
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_CONFIG": file}), &bytes.Buffer{}); err == nil {
		t.Fatal("a misspelt key was accepted")
	}
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_SLOTS": "many"}), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "SOVEREIGN_SLOTS") {
		t.Fatalf("bad number: %v", err)
	}
}

func TestPlainHTTPOnlyOnLoopbackUnlessAllowed(t *testing.T) {
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_ADDR": "0.0.0.0:8080"}), &bytes.Buffer{}); err == nil {
		t.Fatal("plain HTTP on 0.0.0.0 accepted")
	}
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_ADDR": "0.0.0.0:8080", "SOVEREIGN_ALLOW_INSECURE_HTTP": "true"}), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_ADDR": "0.0.0.0:8443", "SOVEREIGN_TLS_CERT": "c", "SOVEREIGN_TLS_KEY": "k"}), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1"} {
		if !IsLoopback(a) {
			t.Errorf("%s not loopback", a)
		}
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var out bytes.Buffer
	_, err := Load([]string{"--help"}, env(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v", err)
	}
	for _, s := range settings {
		if !strings.Contains(out.String(), s.env) || !strings.Contains(out.String(), "--"+strings.ReplaceAll(s.key, "_", "-")) {
			t.Errorf("--help misses %s", s.env)
		}
	}
}
