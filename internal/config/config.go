// Package config holds `sovereign serve`'s settings: defaults, an optional
// YAML file, environment variables and flags, in increasing precedence.
// Every setting has one entry in the table below, which also produces the
// --help text, so the documentation cannot drift from the code.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/oidc"
	"github.com/sovereign-ai/sovereign/internal/samlsso"
)

// Config is the server configuration.
type Config struct {
	Addr              string        `yaml:"addr"`
	DataDir           string        `yaml:"data_dir"`
	ModelsDir         string        `yaml:"models_dir"`
	DatabaseURL       string        `yaml:"database_url"`
	BootstrapKey      string        `yaml:"bootstrap_key"`
	TLSCert           string        `yaml:"tls_cert"`
	TLSKey            string        `yaml:"tls_key"`
	AllowInsecureHTTP bool          `yaml:"allow_insecure_http"`
	MaxBodyBytes      int64         `yaml:"max_body_bytes"`
	ShutdownTimeout   time.Duration `yaml:"shutdown_timeout"`
	LogLevel          string        `yaml:"log_level"`
	Slots             int           `yaml:"slots"`
	CtxPerSlot        int           `yaml:"ctx"`
	Threads           int           `yaml:"threads"`
	MaxQueue          int           `yaml:"max_queue"`
	KeepAlive         time.Duration `yaml:"keep_alive"`
	MaxLoaded         int           `yaml:"max_loaded"`
	// Deterministic makes a request's output independent of what runs
	// beside it (see docs/engine.md#deterministic-mode).
	Deterministic bool `yaml:"deterministic"`
	// RerankModel serves searches that ask for reranking without naming a
	// model (default: the first installed cross-encoder, else the smallest
	// installed known chat model with the query-likelihood method).
	RerankModel string `yaml:"rerank_model"`
	// AbstainText is the answer with sources when the sources do not say
	// (docs/sources.md).
	AbstainText string `yaml:"abstain_text"`
	// ExtractTimeout and ExtractMemory are the budget of reading one
	// uploaded PDF, in a child process that is killed past it
	// (docs/sources.md#uploads).
	ExtractTimeout time.Duration `yaml:"extract_timeout"`
	ExtractMemory  int64         `yaml:"extract_memory"`
	// LogRetention is how long request records are kept (0: forever).
	LogRetention time.Duration `yaml:"log_retention"`
	// LogCheckpointInterval is how often a Merkle checkpoint of the
	// request log is stored (0: never).
	LogCheckpointInterval time.Duration `yaml:"log_checkpoint_interval"`
	// RecordsSpoolBytes bounds the local spool ($data_dir/records-spool)
	// where request records wait while the database cannot take them (0:
	// no spool: such records are lost, counted and marked).
	RecordsSpoolBytes int64 `yaml:"records_spool_bytes"`
	// RecordsSpoolFull is what a full spool does: "refuse" inference with
	// 503 request_log_unavailable (fail closed, the default) or "drop"
	// records, counted and marked (fail open). docs/records.md.
	RecordsSpoolFull string `yaml:"records_spool_full"`
	// RedisURL, when set, keeps rate limits and quotas in Redis, shared by
	// every replica (default: in memory, for one server).
	RedisURL string `yaml:"redis_url"`
	// LimitsFailOpen admits requests when Redis cannot be reached
	// (default: refuse governed requests with 503).
	LimitsFailOpen bool `yaml:"limits_fail_open"`
	// KeyOutageGrace is how long an API key read from the database keeps
	// working from the server's cache while the database cannot be reached
	// (0: auth.DefaultOutageGrace; negative: none; docs/auth.md).
	KeyOutageGrace time.Duration `yaml:"key_outage_grace"`
	// InstanceID names this server among those sharing a PostgreSQL
	// database (the durable engine resumes a server's unfinished work
	// when it starts again, and other servers take it over when it does
	// not). Default: the host name and the listen port.
	InstanceID string `yaml:"instance_id"`
	// MigrateOnStart makes serve apply the database's pending migrations
	// at start (the default: a single node needs nothing else). False
	// leaves them to `sovereign migrate` (a Helm hook, an operator) and
	// serve refuses to start on a schema behind it (docs/upgrading.md).
	MigrateOnStart bool `yaml:"migrate_on_start"`
	// OutboundAllow lists private targets (CIDR prefixes, addresses, host
	// names) that outbound calls — webhooks, workflow http steps — may
	// reach; OutboundAllowPrivate allows every private target
	// (docs/outbound.md).
	OutboundAllow        []string `yaml:"outbound_allow"`
	OutboundAllowPrivate bool     `yaml:"outbound_allow_private"`
	// UpstreamAllow lists the private upstream hosts (same forms as
	// OutboundAllow) that models created through the API may point at;
	// the upstreams of this file's own models are allowed already
	// (docs/models.md).
	UpstreamAllow []string `yaml:"upstream_allow"`
	// WebhookRetryWindow is how long a webhook delivery is retried before
	// it fails (docs/webhooks.md).
	WebhookRetryWindow time.Duration `yaml:"webhook_retry_window"`
	// ConsoleSessionIdle is how long an unused web console session lasts
	// (0: the console's default; docs/console.md).
	ConsoleSessionIdle time.Duration `yaml:"console_session_idle"`
	// ConsoleKeySignIn lets an API key with the console or admin scope
	// sign in to the console: a break-glass path for administrators, off
	// by default (people sign in as themselves) and logged at warning
	// level on every use (docs/users.md).
	ConsoleKeySignIn bool `yaml:"console_key_signin"`
	// ConsolePasswordSignIn is whether people may sign in to the console
	// with a password: "auto" (the default: yes unless single sign-on
	// providers are configured), "true" (both) or "false".
	ConsolePasswordSignIn string `yaml:"console_password_signin"`
	// OIDC lists the single sign-on providers (YAML only; docs/users.md).
	OIDC []oidc.ProviderConfig `yaml:"oidc"`
	// SAML lists the SAML 2.0 identity providers (YAML only).
	SAML []samlsso.ProviderConfig `yaml:"saml"`
	// Limits are rate limits and quotas per key, team or model (YAML
	// only; the admin API can override them; see docs/limits.md).
	Limits []limits.Rule `yaml:"limits"`
	// GroupRules map identity providers' groups (single sign-on's groups
	// claim, SCIM groups) to roles in teams and to instance administration
	// (YAML only; docs/users.md).
	GroupRules []auth.GroupRule `yaml:"group_rules"`
	// Models configures upstream models, local models from other paths, and
	// aliases, limits and deprecation (YAML only; see docs/models.md).
	Models []catalog.Spec `yaml:"models"`
}

// setting describes one configuration entry.
type setting struct {
	field string // Config field name
	key   string // YAML key and flag name (with - for _)
	env   string
	def   string
	help  string
}

var settings = []setting{
	{"Addr", "addr", "SOVEREIGN_ADDR", "127.0.0.1:8080", "listen address"},
	{"DataDir", "data_dir", "SOVEREIGN_DATA_DIR", "./data", "data directory"},
	{"ModelsDir", "models_dir", "SOVEREIGN_MODELS_DIR", "", "models directory (default $data_dir/models)"},
	{"DatabaseURL", "database_url", "SOVEREIGN_DATABASE_URL", "", "database: a SQLite path or sqlite:///path, or postgres://… (default $data_dir/sovereign.db)"},
	{"BootstrapKey", "bootstrap_key", "SOVEREIGN_BOOTSTRAP_KEY", "", "admin key created on first start with an empty store (default: generated and printed once)"},
	{"TLSCert", "tls_cert", "SOVEREIGN_TLS_CERT", "", "TLS certificate file (PEM); with tls_key, serve HTTPS"},
	{"TLSKey", "tls_key", "SOVEREIGN_TLS_KEY", "", "TLS private key file (PEM)"},
	{"AllowInsecureHTTP", "allow_insecure_http", "SOVEREIGN_ALLOW_INSECURE_HTTP", "false", "allow plain HTTP on a non-loopback address"},
	{"MaxBodyBytes", "max_body_bytes", "SOVEREIGN_MAX_BODY_BYTES", "8388608", "largest request body accepted (bytes); larger gets 413"},
	{"ShutdownTimeout", "shutdown_timeout", "SOVEREIGN_SHUTDOWN_TIMEOUT", "60s", "how long shutdown waits for in-flight requests and streams"},
	{"LogLevel", "log_level", "SOVEREIGN_LOG_LEVEL", "info", "log level: debug, info, warn, error"},
	{"Slots", "slots", "SOVEREIGN_SLOTS", "4", "parallel sequences per model (continuous batching)"},
	{"CtxPerSlot", "ctx", "SOVEREIGN_CTX", "4096", "context tokens per sequence"},
	{"Threads", "threads", "SOVEREIGN_THREADS", "0", "CPU threads per model (0: one per core)"},
	{"MaxQueue", "max_queue", "SOVEREIGN_MAX_QUEUE", "16", "requests waiting per model beyond its slots before 503"},
	{"KeepAlive", "keep_alive", "SOVEREIGN_KEEP_ALIVE", "5m", "unload a model after this long idle (negative: never)"},
	{"MaxLoaded", "max_loaded", "SOVEREIGN_MAX_LOADED", "2", "most models loaded at once"},
	{"Deterministic", "deterministic", "SOVEREIGN_DETERMINISTIC", "false", "same output for the same request whatever runs beside it (decodes each sequence on its own; costs batched throughput)"},
	{"RerankModel", "rerank_model", "SOVEREIGN_RERANK_MODEL", "", "default rerank model (default: the first installed cross-encoder, else the smallest installed chat model of `sovereign models pull --list`)"},
	{"RedisURL", "redis_url", "SOVEREIGN_REDIS_URL", "", "Redis for rate limits and quotas shared by several replicas, redis://host:port/db (default: in memory)"},
	{"LimitsFailOpen", "limits_fail_open", "SOVEREIGN_LIMITS_FAIL_OPEN", "false", "admit requests when Redis is down (default: refuse governed requests with 503)"},
	{"KeyOutageGrace", "key_outage_grace", "SOVEREIGN_KEY_OUTAGE_GRACE", "5m", "how long an API key used before a database outage keeps working from the cache during it (negative: none; other keys get 503 database_unavailable)"},
	{"LogCheckpointInterval", "log_checkpoint_interval", "SOVEREIGN_LOG_CHECKPOINT_INTERVAL", "1h", "how often a Merkle checkpoint (RFC 6962 root) of the request log is stored, for audit verify and proofs (0: never)"},
	{"OutboundAllowPrivate", "outbound_allow_private", "SOVEREIGN_OUTBOUND_ALLOW_PRIVATE", "false", "let webhooks and workflow http steps reach private, loopback and link-local addresses (default: refused; outbound_allow lists exceptions in YAML)"},
	{"WebhookRetryWindow", "webhook_retry_window", "SOVEREIGN_WEBHOOK_RETRY_WINDOW", "24h", "how long a webhook delivery is retried, with exponential backoff, before it fails"},
	{"ConsoleSessionIdle", "console_session_idle", "SOVEREIGN_CONSOLE_SESSION_IDLE", "12h", "how long an unused web console session (/console) lasts before signing in again"},
	{"ConsoleKeySignIn", "console_key_signin", "SOVEREIGN_CONSOLE_KEY_SIGNIN", "false", "let an API key with the console or admin scope sign in to the console (break-glass; logged)"},
	{"ConsolePasswordSignIn", "console_password_signin", "SOVEREIGN_CONSOLE_PASSWORD_SIGNIN", "auto", "password sign-in to the console: auto (on unless single sign-on providers, OIDC or SAML, are configured), true or false"},
	{"InstanceID", "instance_id", "SOVEREIGN_INSTANCE_ID", "", "this server's name among those sharing a PostgreSQL database, stable across restarts (default: host name and listen port)"},
	{"MigrateOnStart", "migrate_on_start", "SOVEREIGN_MIGRATE_ON_START", "true", "apply pending database migrations at start (false, or --no-migrate: leave them to `sovereign migrate` and refuse to start on a schema behind this release; docs/upgrading.md)"},
	{"AbstainText", "abstain_text", "SOVEREIGN_ABSTAIN_TEXT", "The sources do not say.", "the answer with citations when no source supports one (docs/sources.md)"},
	{"ExtractTimeout", "extract_timeout", "SOVEREIGN_EXTRACT_TIMEOUT", "30s", "how long reading one uploaded PDF may take (in a child process, killed past it; docs/sources.md)"},
	{"ExtractMemory", "extract_memory", "SOVEREIGN_EXTRACT_MEMORY", "2147483648", "address space the PDF reader's child process may map (bytes)"},
	{"LogRetention", "log_retention", "SOVEREIGN_LOG_RETENTION", "0s", "how long request records are kept, e.g. 2160h (0: forever); older ones are purged hourly, the chain kept verifiable"},
	{"RecordsSpoolBytes", "records_spool_bytes", "SOVEREIGN_RECORDS_SPOOL_BYTES", "268435456", "bound of the local spool ($data_dir/records-spool) that keeps request records while the database cannot take them (0: no spool)"},
	{"RecordsSpoolFull", "records_spool_full", "SOVEREIGN_RECORDS_SPOOL_FULL", "refuse", "when the spool is full: refuse inference with 503 request_log_unavailable (fail closed), or drop records, counted and marked in the chain (fail open)"},
}

// Load builds the configuration from defaults, the YAML file named by
// --config or SOVEREIGN_CONFIG, the environment, and flags in args. It
// returns flag.ErrHelp after printing usage to out for -h/--help.
func Load(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	var c Config
	for _, s := range settings {
		if err := set(&c, s, s.def); err != nil {
			return c, err
		}
	}
	fs := flag.NewFlagSet("sovereign serve", flag.ContinueOnError)
	fs.SetOutput(out)
	configPath := fs.String("config", getenv("SOVEREIGN_CONFIG"), "YAML configuration file (SOVEREIGN_CONFIG)")
	vals := make([]*string, len(settings))
	for i, s := range settings {
		vals[i] = fs.String(strings.ReplaceAll(s.key, "_", "-"), "", "")
	}
	noMigrate := fs.Bool("no-migrate", false, "")
	fs.Usage = func() { Usage(out) }
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *configPath != "" {
		b, err := os.ReadFile(*configPath)
		if err != nil {
			return c, fmt.Errorf("config: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("config: %s: %w", *configPath, err)
		}
	}
	for i, s := range settings {
		if v := getenv(s.env); v != "" {
			if err := set(&c, s, v); err != nil {
				return c, err
			}
		}
		if *vals[i] != "" {
			if err := set(&c, s, *vals[i]); err != nil {
				return c, err
			}
		}
	}
	if *noMigrate {
		c.MigrateOnStart = false
	}
	if c.ModelsDir == "" {
		c.ModelsDir = filepath.Join(c.DataDir, "models")
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = filepath.Join(c.DataDir, "sovereign.db")
	}
	if c.InstanceID == "" {
		host, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(c.Addr)
		c.InstanceID = host + ":" + port
	}
	return c, c.Validate()
}

func set(c *Config, s setting, v string) error {
	f := reflect.ValueOf(c).Elem().FieldByName(s.field)
	bad := func(err error) error { return fmt.Errorf("config: %s (%s) = %q: %v", s.key, s.env, v, err) }
	switch f.Interface().(type) {
	case string:
		f.SetString(v)
	case bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad(err)
		}
		f.SetBool(b)
	case int, int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return bad(err)
		}
		f.SetInt(n)
	case time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return bad(err)
		}
		f.SetInt(int64(d))
	}
	return nil
}

// Validate checks the configuration: TLS needs both files, and plain HTTP
// is refused on a non-loopback address unless explicitly allowed.
func (c Config) Validate() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("config: tls_cert and tls_key must be given together")
	}
	if c.MaxBodyBytes <= 0 {
		return errors.New("config: max_body_bytes must be positive")
	}
	if c.ExtractTimeout <= 0 || c.ExtractMemory <= 0 {
		return errors.New("config: extract_timeout and extract_memory must be positive")
	}
	if c.WebhookRetryWindow < 0 {
		return errors.New("config: webhook_retry_window must not be negative")
	}
	if c.ConsoleSessionIdle < 0 {
		return errors.New("config: console_session_idle must not be negative")
	}
	if err := auth.CheckGroupRules(c.GroupRules); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	switch c.ConsolePasswordSignIn {
	case "", "auto", "true", "false":
	default:
		return fmt.Errorf("config: console_password_signin %q: want auto, true or false", c.ConsolePasswordSignIn)
	}
	seen := map[string]bool{}
	for i := range c.OIDC {
		if err := c.OIDC[i].Check(os.Getenv); err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if seen[c.OIDC[i].Name] {
			return fmt.Errorf("config: oidc provider %q is listed twice", c.OIDC[i].Name)
		}
		seen[c.OIDC[i].Name] = true
	}
	for i := range c.SAML {
		if err := c.SAML[i].Check(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if seen[c.SAML[i].Name] {
			return fmt.Errorf("config: sign-in provider %q is listed twice", c.SAML[i].Name)
		}
		seen[c.SAML[i].Name] = true
	}
	if c.RecordsSpoolBytes < 0 {
		return errors.New("config: records_spool_bytes must not be negative")
	}
	switch c.RecordsSpoolFull {
	case "", "refuse", "drop":
	default:
		return fmt.Errorf("config: records_spool_full %q: want refuse or drop", c.RecordsSpoolFull)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log_level %q: want debug, info, warn or error", c.LogLevel)
	}
	if !c.TLS() && !c.AllowInsecureHTTP && !IsLoopback(c.Addr) {
		return fmt.Errorf("config: refusing plain HTTP on %s, which is not a loopback address: set SOVEREIGN_TLS_CERT and SOVEREIGN_TLS_KEY to serve HTTPS, or SOVEREIGN_ALLOW_INSECURE_HTTP=true behind a TLS-terminating proxy", c.Addr)
	}
	return nil
}

// TLS reports whether HTTPS is configured.
func (c Config) TLS() bool { return c.TLSCert != "" && c.TLSKey != "" }

// IsLoopback reports whether addr (host:port) listens only on loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Usage writes every setting with its flag, environment variable and
// default.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sovereign serve [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Settings come from defaults, then the YAML file (--config or SOVEREIGN_CONFIG,")
	fmt.Fprintln(w, "keys as below), then the environment, then flags.")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-24s %-32s %s\n", "--config", "SOVEREIGN_CONFIG", "YAML configuration file")
	fmt.Fprintf(w, "  %-24s %-32s %s\n", "--no-migrate", "", "the same as --migrate-on-start=false")
	for _, s := range settings {
		def := s.def
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(w, "  %-24s %-32s %s [default %s]\n", "--"+strings.ReplaceAll(s.key, "_", "-"), s.env, s.help, def)
	}
}

// PasswordSignIn reports whether people may sign in to the console with a
// password (console_password_signin; auto: unless single sign-on is
// configured).
func (c Config) PasswordSignIn() bool {
	switch c.ConsolePasswordSignIn {
	case "true":
		return true
	case "false":
		return false
	}
	return len(c.OIDC) == 0 && len(c.SAML) == 0
}
