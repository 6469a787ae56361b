package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/limits"
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

func TestModelsFromYAML(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(file, []byte(`
models:
  - id: big
    base_url: http://gpu-1:8000/v1
    replicas: [http://gpu-2:8000/v1]
    api_key_env: VLLM_KEY
    upstream_model: meta-llama/Llama-3.1-8B-Instruct
    timeouts: {connect: 2s, first_byte: 1m, idle: 45}
    health_check_interval: "off"
    aliases: [default]
    limits: {max_output_tokens: 1024}
    deprecation: {sunset: 2027-01-31T00:00:00Z, replacement: bigger}
`), 0o600)
	c, err := Load(nil, env(map[string]string{"SOVEREIGN_CONFIG": file}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 1 {
		t.Fatalf("%+v", c.Models)
	}
	m := c.Models[0]
	if m.ID != "big" || len(m.Replicas) != 1 || m.APIKeyEnv != "VLLM_KEY" || time.Duration(m.Timeouts.Idle) != 45*time.Second ||
		time.Duration(m.Timeouts.FirstByte) != time.Minute || *m.HealthCheckInterval != -1 || m.Limits.MaxOutputTokens != 1024 ||
		m.Deprecation.Sunset.Year() != 2027 || m.Aliases[0] != "default" {
		t.Fatalf("%+v", m)
	}
	os.WriteFile(file, []byte("models:\n  - id: x\n    colour: red\n"), 0o600)
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_CONFIG": file}), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown model field: %v", err)
	}
}

func TestDeterministicFromFileEnvAndFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte("deterministic: true\n"), 0o600)
	for name, load := range map[string]func() (Config, error){
		"yaml": func() (Config, error) {
			return Load(nil, env(map[string]string{"SOVEREIGN_CONFIG": file}), &bytes.Buffer{})
		},
		"env": func() (Config, error) {
			return Load(nil, env(map[string]string{"SOVEREIGN_DETERMINISTIC": "true"}), &bytes.Buffer{})
		},
		"flag": func() (Config, error) { return Load([]string{"--deterministic", "true"}, env(nil), &bytes.Buffer{}) },
	} {
		c, err := load()
		if err != nil || !c.Deterministic {
			t.Errorf("%s: deterministic = %v, err %v", name, c.Deterministic, err)
		}
	}
	if c, err := Load(nil, env(nil), &bytes.Buffer{}); err != nil || c.Deterministic {
		t.Fatalf("default: deterministic = %v, err %v; want off", c.Deterministic, err)
	}
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_DETERMINISTIC": "sometimes"}), &bytes.Buffer{}); err == nil {
		t.Fatal("a non-boolean SOVEREIGN_DETERMINISTIC was accepted")
	}
}

func TestLimitsFromYAML(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte(`redis_url: redis://127.0.0.1:6379/0
limits_fail_open: true
limits:
  - {scope: team, subject: team_a, requests_per_minute: 600, tokens_per_minute: 200000, tokens_per_day: 5000000}
  - {scope: model, subject: big, concurrent_requests: 16, tokens_per_month: 90000000}
`), 0o600)
	c, err := Load(nil, env(map[string]string{"SOVEREIGN_CONFIG": file}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []limits.Rule{
		{Scope: "team", Subject: "team_a", RequestsPerMinute: 600, TokensPerMinute: 200000, TokensPerDay: 5000000},
		{Scope: "model", Subject: "big", ConcurrentRequests: 16, TokensPerMonth: 90000000},
	}
	if !reflect.DeepEqual(c.Limits, want) || c.RedisURL != "redis://127.0.0.1:6379/0" || !c.LimitsFailOpen {
		t.Fatalf("limits %+v, redis %q, fail open %v", c.Limits, c.RedisURL, c.LimitsFailOpen)
	}
	os.WriteFile(file, []byte("limits:\n  - {scope: team, subject: t, requests_per_hour: 5}\n"), 0o600)
	if _, err := Load(nil, env(map[string]string{"SOVEREIGN_CONFIG": file}), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "requests_per_hour") {
		t.Fatalf("unknown limit field: %v", err)
	}
}
