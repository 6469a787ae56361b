// Package catalog is the deployment's model catalog: which models a server
// offers, where each runs (the local engine, or upstream OpenAI-compatible
// servers), under which names (ids and aliases), with which limits and
// deprecation, in which state, and how each has performed over the last
// hour. Installed GGUF models appear on their own; the YAML configuration
// and the admin API add upstream models, local models from other paths,
// and settings. The Catalog routes inference requests to the right
// backend (it implements inference.Backend).
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/upstream"
)

// Errors, checked with errors.Is. They are API errors (package apierr):
// the catalog words each with the model it is about (apierr.Wrapf), and a
// handler returns them as they are.
var (
	// ErrNotFound: no model or alias by that name (HTTP 404
	// model_not_found, naming the request's "model").
	ErrNotFound = &apierr.Error{Code: apierr.ModelNotFound, Param: "model", Message: "model not found"}
	// ErrConflict: the id or an alias is taken (HTTP 409).
	ErrConflict = apierr.New(apierr.Conflict, "model conflict")
	// ErrReadOnly: the model is defined in the configuration file (HTTP
	// 409: it changes there, not through the API).
	ErrReadOnly = apierr.New(apierr.Conflict, "model is defined in the configuration file")
)

// notFound is ErrNotFound for the model named name, worded for the
// client.
func notFound(name string) error {
	return apierr.Wrapf(ErrNotFound, "the model %q does not exist; GET /v1/models lists the models", name)
}

// Installed lists the models in the models directory.
type Installed interface {
	List() ([]models.Manifest, error)
	Get(id string) (models.Manifest, error)
	Path(id string) string
	Remove(id string) error
}

// StoredSpec is a model configuration kept in the database.
type StoredSpec struct {
	ID        string
	Spec      []byte // JSON of Spec
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SpecStore keeps the configurations made through the API.
type SpecStore interface {
	// ListModelSpecs returns every stored configuration.
	ListModelSpecs(ctx context.Context) ([]StoredSpec, error)
	// PutModelSpec creates or replaces a configuration.
	PutModelSpec(ctx context.Context, s StoredSpec) error
	// DeleteModelSpec removes one (an error wrapping a not-found error
	// when there is none).
	DeleteModelSpec(ctx context.Context, id string) error
}

// Local is the engine running local models. The catalog hands it each
// model's file with the model (Bind, Load): the engine never looks a model
// up by name, so it needs no catalog, and the two are built one after the
// other without a cycle.
type Local interface {
	// Bind is the backend of the local model id, whose GGUF file is path.
	Bind(id, path string) inference.Backend
	// Load starts the model's runner and waits until it is ready.
	Load(ctx context.Context, id, path string) error
	// Unload stops it; false when it was not loaded.
	Unload(id string) bool
	// State returns the model's state (loading, ready, failed; "" when not
	// loaded) and, when failed, why.
	State(id string) (state, reason string)
}

// Config configures a Catalog.
type Config struct {
	Installed Installed
	Specs     SpecStore
	// Configured are the YAML file's models.
	Configured []Spec
	Local      Local
	Events     events.Publisher
	Stats      *Stats
	Log        *slog.Logger
	// Getenv reads api_key_env (default os.Getenv).
	Getenv func(string) string
	// Guard, when set, holds upstream replicas to the outbound rules: a
	// model created or changed through the API must name URLs it allows,
	// and every connection to a replica is dialled through it.
	Guard Guard
	// Refresh is how often installed models and stored configurations are
	// re-read (default 15s), so that models pulled by the CLI and changes
	// made on other replicas of the server appear.
	Refresh time.Duration
	Now     func() time.Time
}

// Guard checks where upstream models may point (outbound.Client).
type Guard interface {
	ValidateURL(ctx context.Context, rawURL string) error
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// entry is one resolved model.
type entry struct {
	spec      Spec // merged configuration; ID is the model id
	source    string
	manifest  *models.Manifest
	path      string // GGUF file (local)
	created   time.Time
	remote    *upstream.Backend
	remoteKey string
	// pulled are the aliases the model's manifest gives it (the default
	// chat model's "default") that no other name claims; see rebuild.
	pulled []string
}

// Catalog is the set of models a server offers.
type Catalog struct {
	cfg Config

	// rebuildMu serialises rebuilds, so that one that read the sources
	// earlier cannot overwrite a later one.
	rebuildMu sync.Mutex

	mu      sync.RWMutex
	entries map[string]*entry
	aliases map[string]string
	// pulled are the aliases in aliases that come from manifests: they
	// yield to a configured or stored alias of the same name.
	pulled  map[string]bool
	remotes map[string]*entry // by id: upstream backends to reuse across rebuilds
	loaded  time.Time

	warnMu sync.Mutex
	warned map[string]string

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New builds the catalog and starts its refresher and the upstream health
// checks. It returns an error when the configured models are inconsistent
// (bad specs, duplicate ids or aliases).
func New(ctx context.Context, cfg Config) (*Catalog, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Stats == nil {
		cfg.Stats = NewStats()
	}
	if cfg.Events == nil {
		cfg.Events = events.NewBus()
	}
	ids := map[string]bool{}
	for i := range cfg.Configured {
		s := &cfg.Configured[i]
		if s.APIKeyEnv != "" && s.APIKey == "" {
			s.APIKey = cfg.Getenv(s.APIKeyEnv)
			if s.APIKey == "" {
				return nil, fmt.Errorf("models[%d] %q: api_key_env %s is not set", i, s.ID, s.APIKeyEnv)
			}
		}
		if err := s.Normalize(); err != nil {
			return nil, fmt.Errorf("models[%d] %q: %v", i, s.ID, err)
		}
		if ids[s.ID] {
			return nil, fmt.Errorf("models[%d]: the id %q is configured twice", i, s.ID)
		}
		ids[s.ID] = true
	}
	c := &Catalog{cfg: cfg, entries: map[string]*entry{}, aliases: map[string]string{}, remotes: map[string]*entry{}, stop: make(chan struct{})}
	if err := c.rebuild(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if cfg.Refresh > 0 {
		c.wg.Add(1)
		go c.refresher()
	}
	return c, nil
}

// Close stops the refresher and the upstream backends.
func (c *Catalog) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.wg.Wait()
	c.mu.Lock()
	rs := c.remotes
	c.remotes = map[string]*entry{}
	c.mu.Unlock()
	for _, e := range rs {
		e.remote.Close()
	}
}

func (c *Catalog) refresher() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.rebuild(ctx); err != nil {
			c.cfg.Log.Warn("refreshing the model catalog", "err", err)
		}
		cancel()
	}
}

// Refresh re-reads installed models and stored configurations now.
func (c *Catalog) Refresh(ctx context.Context) error { return c.rebuild(ctx) }

// rebuild recomputes the entries from the three sources. Configured
// models that do not fit are an error; stored ones are logged and skipped.
func (c *Catalog) rebuild(ctx context.Context) error {
	c.rebuildMu.Lock()
	defer c.rebuildMu.Unlock()
	installed, err := c.cfg.Installed.List()
	if err != nil {
		if installed == nil {
			return fmt.Errorf("listing installed models: %w", err)
		}
		c.warnOnce("installed", err, "some installed models are unreadable and left out")
	}
	var stored []StoredSpec
	if c.cfg.Specs != nil {
		if stored, err = c.cfg.Specs.ListModelSpecs(ctx); err != nil {
			return fmt.Errorf("reading model configurations: %w", err)
		}
	}
	entries := map[string]*entry{}
	for i := range installed {
		m := installed[i]
		entries[m.ID] = &entry{spec: Spec{ID: m.ID, Backend: BackendLocal}, source: SourceInstalled, manifest: &m, path: c.cfg.Installed.Path(m.ID), created: m.CreatedAt}
	}
	apply := func(s Spec, source string, created time.Time) error {
		e := &entry{spec: s, source: source, created: created}
		if base, ok := entries[s.ID]; ok && base.source == SourceInstalled && s.Backend == BackendLocal && s.Path == "" {
			e.manifest, e.path, e.created = base.manifest, base.path, base.created
		}
		if s.Backend == BackendLocal && e.manifest == nil {
			if s.Path == "" {
				return fmt.Errorf("model %q: a local model needs 'path' unless it is installed (sovereign models pull)", s.ID)
			}
			m, err := readGGUF(s.ID, s.Path)
			if err != nil {
				return fmt.Errorf("model %q: %w", s.ID, err)
			}
			e.manifest, e.path = &m, s.Path
		}
		entries[s.ID] = e
		return nil
	}
	for _, st := range stored {
		// A stored configuration that no longer fits (its GGUF was removed,
		// say) is skipped, not fatal: it stays visible to DELETE.
		var s Spec
		serr := json.Unmarshal(st.Spec, &s)
		if serr == nil {
			serr = s.Normalize()
		}
		if serr == nil {
			serr = apply(s, SourceAPI, st.CreatedAt)
		}
		if serr != nil {
			c.warnOnce("spec:"+st.ID, serr, "skipping a stored model configuration; fix it with PATCH or remove it with DELETE /v1/models/"+st.ID, "model", st.ID)
		}
	}
	for _, s := range c.cfg.Configured {
		if err := apply(s, SourceConfig, time.Time{}); err != nil {
			return err
		}
	}
	aliases := map[string]string{}
	for _, id := range sortedKeys(entries) {
		for _, a := range entries[id].spec.Aliases {
			if _, taken := entries[a]; taken {
				return fmt.Errorf("model %q: alias %q is also a model id", id, a)
			}
			if other, taken := aliases[a]; taken {
				return fmt.Errorf("alias %q is claimed by both %q and %q", a, other, id)
			}
			aliases[a] = id
		}
	}
	// Aliases an installed model was pulled under come last: they are the
	// store's suggestion ("default" for the default chat model), which a
	// configured or stored model may take over by naming the alias itself,
	// without a conflict.
	pulled := map[string]bool{}
	for _, id := range sortedKeys(entries) {
		e := entries[id]
		if e.manifest == nil {
			continue
		}
		for _, a := range e.manifest.Aliases {
			if _, taken := entries[a]; taken || !ValidName(a) || slices.Contains(reserved, a) {
				continue
			}
			if _, taken := aliases[a]; taken {
				continue
			}
			aliases[a] = id
			pulled[a] = true
			e.pulled = append(e.pulled, a)
		}
	}
	// Reuse upstream backends whose connection settings did not change.
	c.mu.Lock()
	var started, closed []*upstream.Backend
	remotes := map[string]*entry{}
	for id, e := range entries {
		if e.spec.Backend != BackendUpstream {
			continue
		}
		key := remoteKey(e.spec)
		if old, ok := c.remotes[id]; ok && old.remoteKey == key {
			e.remote, e.remoteKey = old.remote, key
		} else {
			b, err := c.newRemote(e.spec)
			if err != nil {
				c.mu.Unlock()
				for _, b := range started {
					b.Close()
				}
				return err
			}
			e.remote, e.remoteKey = b, key
			started = append(started, b)
		}
		remotes[id] = e
	}
	for id, old := range c.remotes {
		if e, ok := remotes[id]; !ok || e.remote != old.remote {
			closed = append(closed, old.remote)
		}
	}
	c.entries, c.aliases, c.pulled, c.remotes, c.loaded = entries, aliases, pulled, remotes, c.cfg.Now()
	c.mu.Unlock()
	for _, b := range closed {
		b.Close()
	}
	for _, b := range started {
		b.Start()
	}
	return nil
}

// warnOnce logs msg unless the same error was last logged under key, so
// that the periodic refresh does not repeat a warning.
func (c *Catalog) warnOnce(key string, err error, msg string, attrs ...any) {
	c.warnMu.Lock()
	defer c.warnMu.Unlock()
	if c.warned == nil {
		c.warned = map[string]string{}
	}
	if c.warned[key] == err.Error() {
		return
	}
	c.warned[key] = err.Error()
	c.cfg.Log.Warn(msg, append(attrs, "err", err)...)
}

func remoteKey(s Spec) string {
	b, _ := json.Marshal([]any{s.URLs(), s.APIKey, s.UpstreamModel, s.Timeouts, s.HealthCheckInterval, s.Tokenizer})
	return string(b)
}

func (c *Catalog) newRemote(s Spec) (*upstream.Backend, error) {
	cfg := upstream.Config{Model: s.ID, UpstreamModel: s.UpstreamModel, Replicas: s.URLs(), APIKey: s.APIKey, Events: c.cfg.Events, Log: c.cfg.Log}
	if c.cfg.Guard != nil {
		cfg.Dial = c.cfg.Guard.DialContext
	}
	if t := s.Timeouts; t != nil {
		cfg.ConnectTimeout, cfg.FirstByteTimeout, cfg.IdleTimeout, cfg.Timeout = time.Duration(t.Connect), time.Duration(t.FirstByte), time.Duration(t.Idle), time.Duration(t.Total)
	}
	if s.HealthCheckInterval != nil {
		cfg.HealthInterval = time.Duration(*s.HealthCheckInterval)
	}
	if s.Tokenizer != "" && c.cfg.Local != nil {
		// The tokenizer is a local model named by the spec, resolved when
		// it is needed (it may be installed after the upstream is made).
		cfg.Tokenizer, cfg.TokenizerModel = c, s.Tokenizer
	}
	return upstream.New(cfg)
}

// readGGUF describes a GGUF file outside the models directory.
func readGGUF(id, path string) (models.Manifest, error) {
	m, err := models.Inspect(path)
	if err != nil {
		return models.Manifest{}, err
	}
	m.ID = id
	if st, err := os.Stat(path); err == nil {
		m.Size = st.Size()
		m.CreatedAt = st.ModTime()
	}
	m.Source = "file://" + path
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lookup resolves id or an alias to its entry; a miss re-reads the
// sources once, so a model pulled a moment ago is found.
func (c *Catalog) lookup(ctx context.Context, name string) (*entry, error) {
	if e := c.find(name); e != nil {
		return e, nil
	}
	c.mu.RLock()
	fresh := c.cfg.Now().Sub(c.loaded) < time.Second
	c.mu.RUnlock()
	if !fresh {
		if err := c.rebuild(ctx); err != nil {
			c.cfg.Log.Warn("refreshing the model catalog", "err", err)
		}
		if e := c.find(name); e != nil {
			return e, nil
		}
	}
	return nil, notFound(name)
}

func (c *Catalog) find(name string) *entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.entries[name]; ok {
		return e
	}
	if id, ok := c.aliases[name]; ok {
		return c.entries[id]
	}
	return nil
}

// Model is a catalog entry as the API shows it: OpenAI's model fields plus
// what a platform team needs to choose and operate a model.
type Model struct {
	ID           string   `json:"id"`
	Object       string   `json:"object"`
	Created      int64    `json:"created"`
	OwnedBy      string   `json:"owned_by"`
	Backend      string   `json:"backend"`
	Source       string   `json:"source"`
	Family       string   `json:"family"`
	Capabilities []string `json:"capabilities"`
	// Tags are the operator's labels (docs/policies.md: data residency).
	Tags []string `json:"tags"`
	// RerankMethod is how the model serves rerank ("cross-encoder" for a
	// rank-pooling GGUF, "query-likelihood" for a local chat model); empty when
	// it does not rerank or, for an upstream, when its spec does not say.
	RerankMethod  string `json:"rerank_method,omitempty"`
	ContextLength uint64 `json:"context_length"`
	Parameters    uint64 `json:"parameters"`
	Quantization  string `json:"quantization"`
	Size          int64  `json:"size"`
	// Tokenizer is the model whose vocabulary counts this model's tokens
	// ("" when none is known: usage is then the upstream's or estimated).
	Tokenizer string `json:"tokenizer"`
	// Status is available (nothing running or checked), loading, ready or
	// failed; StatusReason explains a failure.
	Status       string       `json:"status"`
	StatusReason string       `json:"status_reason,omitempty"`
	Aliases      []string     `json:"aliases"`
	Limits       Limits       `json:"limits"`
	Deprecation  *Deprecation `json:"deprecation,omitempty"`
	Upstream     *Upstream    `json:"upstream,omitempty"`
	Stats        Figures      `json:"stats"`
}

// Upstream describes where an upstream model is served.
type Upstream struct {
	Model    string                   `json:"model"`
	APIKey   bool                     `json:"api_key_set"`
	Replicas []upstream.ReplicaStatus `json:"replicas"`
}

// view renders e.
func (c *Catalog) view(e *entry) Model {
	s := e.spec
	m := Model{ID: s.ID, Object: "model", Created: e.created.Unix(), OwnedBy: "sovereign", Backend: s.Backend, Source: e.source,
		Aliases: append(append([]string{}, s.Aliases...), e.pulled...), Tags: append([]string{}, s.Tags...), Deprecation: s.Deprecation, Stats: c.cfg.Stats.Get(s.ID)}
	if e.created.IsZero() {
		m.Created = 0
	}
	if mf := e.manifest; mf != nil {
		m.Family, m.Capabilities, m.ContextLength, m.Parameters, m.Quantization, m.Size = mf.Family, mf.Capabilities, mf.ContextLength, mf.Parameters, mf.Quantization, mf.Size
		m.RerankMethod = mf.RerankMethod
		m.Tokenizer = s.ID
	}
	if s.RerankMethod != "" {
		m.RerankMethod = s.RerankMethod
	}
	if s.Family != "" {
		m.Family = s.Family
	}
	if len(s.Capabilities) > 0 {
		m.Capabilities = s.Capabilities
	}
	if m.Capabilities == nil {
		m.Capabilities = []string{}
	}
	if !slices.Contains(m.Capabilities, models.CapRerank) {
		m.RerankMethod = ""
	}
	if s.ContextLength > 0 {
		m.ContextLength = s.ContextLength
	}
	if s.Parameters > 0 {
		m.Parameters = s.Parameters
	}
	if s.Quantization != "" {
		m.Quantization = s.Quantization
	}
	if s.Tokenizer != "" {
		m.Tokenizer = s.Tokenizer
	}
	if s.Limits != nil {
		m.Limits = *s.Limits
	}
	if m.Limits.MaxInputTokens == 0 && m.ContextLength > 0 {
		m.Limits.MaxInputTokens = int(m.ContextLength)
	}
	m.Status = "available"
	switch {
	case e.remote != nil:
		st := e.remote.Status()
		m.Status, m.StatusReason = st.State, st.Reason
		m.Upstream = &Upstream{Model: s.UpstreamModel, APIKey: s.APIKey != "", Replicas: st.Replicas}
		if m.Upstream.Model == "" {
			m.Upstream.Model = s.ID
		}
	case c.cfg.Local != nil:
		if st, reason := c.cfg.Local.State(s.ID); st != "" {
			m.Status, m.StatusReason = st, reason
		}
	}
	return m
}

// List returns every model, sorted by id.
func (c *Catalog) List(ctx context.Context) []Model {
	c.mu.RLock()
	es := make([]*entry, 0, len(c.entries))
	for _, id := range sortedKeys(c.entries) {
		es = append(es, c.entries[id])
	}
	c.mu.RUnlock()
	out := make([]Model, 0, len(es))
	for _, e := range es {
		out = append(out, c.view(e))
	}
	return out
}

// Get returns the model named id (or an alias of it).
func (c *Catalog) Get(ctx context.Context, id string) (Model, error) {
	e, err := c.lookup(ctx, id)
	if err != nil {
		return Model{}, err
	}
	return c.view(e), nil
}

// Resolved is what the API needs to serve a request for a model.
type Resolved struct {
	ID      string
	Backend string
	// Family is the model's family (the spec's, else its GGUF
	// architecture): answers with sources pick their prompt by it.
	Family       string
	Capabilities []string
	Tags         []string
	Limits       Limits
	Deprecation  *Deprecation
	// Target is the backend that serves the model: requests go to it
	// directly, with the model's id, without a second lookup by name. Nil
	// for a local model on a server without a local engine.
	Target inference.Backend
	// Relay is set for a model served by an upstream: the gateway passes
	// requests to it as sent rather than translating them.
	Relay inference.Relayer
}

// Has reports whether the model offers capability.
func (r Resolved) Has(capability string) bool { return slices.Contains(r.Capabilities, capability) }

// Resolve returns the model named name (an id or an alias), cheaply: this
// runs on every request.
func (c *Catalog) Resolve(ctx context.Context, name string) (Resolved, error) {
	e, err := c.lookup(ctx, name)
	if err != nil {
		return Resolved{}, err
	}
	r := Resolved{ID: e.spec.ID, Backend: e.spec.Backend, Capabilities: e.spec.Capabilities, Tags: e.spec.Tags, Deprecation: e.spec.Deprecation}
	if len(r.Capabilities) == 0 && e.manifest != nil {
		r.Capabilities = e.manifest.Capabilities
	}
	r.Family = e.spec.Family
	if r.Family == "" && e.manifest != nil {
		r.Family = e.manifest.Family
	}
	if e.spec.Limits != nil {
		r.Limits = *e.spec.Limits
	}
	switch {
	case e.remote != nil:
		r.Target, r.Relay = e.remote, e.remote
	case c.cfg.Local != nil:
		r.Target = c.cfg.Local.Bind(e.spec.ID, e.path)
	}
	return r, nil
}

// Create stores a new model configuration made through the API.
func (c *Catalog) Create(ctx context.Context, s Spec) (Model, error) {
	if err := s.Normalize(); err != nil {
		return Model{}, err
	}
	if err := c.checkURLs(ctx, s); err != nil {
		return Model{}, err
	}
	if e := c.find(s.ID); e != nil {
		if e.source == SourceInstalled {
			return Model{}, apierr.Wrapf(ErrConflict, "%q is an installed model; PATCH it to change its settings", s.ID)
		}
		return Model{}, apierr.Wrapf(ErrConflict, "a model or alias named %q exists", s.ID)
	}
	return c.put(ctx, s, c.cfg.Now())
}

// Update applies a JSON merge patch to a model's configuration. Installed
// models gain a stored configuration; configured ones are read-only.
func (c *Catalog) Update(ctx context.Context, id string, patch []byte) (Model, error) {
	e := c.find(id)
	if e == nil || e.spec.ID != id {
		return Model{}, notFound(id)
	}
	if e.source == SourceConfig {
		return Model{}, apierr.Wrapf(ErrReadOnly, "model is defined in the configuration file: %q; change it there and restart", id)
	}
	s := e.spec
	if err := s.Patch(patch); err != nil {
		return Model{}, err
	}
	if err := s.Normalize(); err != nil {
		return Model{}, err
	}
	if err := c.checkURLs(ctx, s); err != nil {
		return Model{}, err
	}
	created := e.created
	if e.source == SourceInstalled {
		created = c.cfg.Now()
	}
	return c.put(ctx, s, created)
}

// checkURLs refuses a model, created or changed through the API, whose
// replicas the guard does not allow (an apierr.Invalid naming the field): a
// key with models:write must not point the server at an internal address
// the operator has not listed (upstream_allow, docs/models.md).
func (c *Catalog) checkURLs(ctx context.Context, s Spec) error {
	if c.cfg.Guard == nil {
		return nil
	}
	for _, u := range s.URLs() {
		field := "base_url"
		if u != s.BaseURL {
			field = "replicas"
		}
		if err := c.cfg.Guard.ValidateURL(ctx, u); err != nil {
			return apierr.Invalid(field, fmt.Sprintf("%s %q cannot be used: %v (an operator lists internal upstream hosts in upstream_allow)", field, u, err))
		}
	}
	return nil
}

func (c *Catalog) put(ctx context.Context, s Spec, created time.Time) (Model, error) {
	// Check the aliases against the current names before storing.
	c.mu.RLock()
	for _, a := range s.Aliases {
		if _, ok := c.entries[a]; ok {
			c.mu.RUnlock()
			return Model{}, apierr.Wrapf(ErrConflict, "alias %q is a model id", a)
		}
		if other, ok := c.aliases[a]; ok && other != s.ID && !c.pulled[a] {
			c.mu.RUnlock()
			return Model{}, apierr.Wrapf(ErrConflict, "alias %q belongs to %q", a, other)
		}
	}
	c.mu.RUnlock()
	if s.Deprecation != nil && s.Deprecation.DeprecatedAt == nil {
		now := c.cfg.Now().UTC().Truncate(time.Second)
		s.Deprecation.DeprecatedAt = &now
	}
	if s.Backend == BackendLocal && s.Path != "" {
		if _, err := readGGUF(s.ID, s.Path); err != nil {
			return Model{}, apierr.Invalid("path", err.Error())
		}
	}
	if s.Backend == BackendLocal && s.Path == "" {
		if _, err := c.cfg.Installed.Get(s.ID); err != nil {
			return Model{}, apierr.Invalid("path", fmt.Sprintf("%q is not an installed model: give a local model a 'path' to its GGUF file, or an upstream model a 'base_url'", s.ID))
		}
	}
	if c.cfg.Specs == nil {
		return Model{}, errors.New("model configurations cannot be stored: no database")
	}
	b, err := json.Marshal(s)
	if err != nil {
		return Model{}, err
	}
	if err := c.cfg.Specs.PutModelSpec(ctx, StoredSpec{ID: s.ID, Spec: b, CreatedAt: created, UpdatedAt: c.cfg.Now()}); err != nil {
		return Model{}, err
	}
	if err := c.rebuild(ctx); err != nil {
		return Model{}, err
	}
	return c.Get(ctx, s.ID)
}

// Delete removes a model: its stored configuration, or for an installed
// model without one, its files. Configured models are read-only.
func (c *Catalog) Delete(ctx context.Context, id string) error {
	e := c.find(id)
	if e == nil || e.spec.ID != id {
		// A stored configuration the catalog skipped can still be removed.
		if c.cfg.Specs != nil && c.cfg.Specs.DeleteModelSpec(ctx, id) == nil {
			return c.rebuild(ctx)
		}
		return notFound(id)
	}
	switch e.source {
	case SourceConfig:
		return apierr.Wrapf(ErrReadOnly, "model is defined in the configuration file: %q; remove it there and restart", id)
	case SourceAPI:
		if err := c.cfg.Specs.DeleteModelSpec(ctx, id); err != nil {
			if errors.Is(err, ErrNotFound) { // deleted meanwhile, by another replica
				return notFound(id)
			}
			return err
		}
	case SourceInstalled:
		if c.cfg.Local != nil {
			c.cfg.Local.Unload(id)
		}
		if err := c.cfg.Installed.Remove(id); err != nil {
			// The models store's own text names its directory, which
			// clients must not see.
			if errors.Is(err, models.ErrNotFound) {
				return notFound(id)
			}
			return err
		}
	}
	if e.spec.Backend == BackendLocal && c.cfg.Local != nil && e.source == SourceAPI && e.manifest != nil && e.path != c.cfg.Installed.Path(id) {
		c.cfg.Local.Unload(id)
	}
	if e.remote != nil {
		c.cfg.Events.Publish(events.ModelUnloaded, map[string]any{"model": id, "backend": BackendUpstream, "reason": "deleted"})
	}
	return c.rebuild(ctx)
}

// Load makes a model ready: a local model's runner is started; an upstream
// model's replicas are checked. It returns the model's state after.
func (c *Catalog) Load(ctx context.Context, id string) (Model, error) {
	e, err := c.lookup(ctx, id)
	if err != nil {
		return Model{}, err
	}
	if e.remote != nil {
		e.remote.Check(ctx)
		return c.view(e), nil
	}
	if err := c.cfg.Local.Load(ctx, e.spec.ID, e.path); err != nil {
		return c.view(e), err
	}
	return c.view(e), nil
}

// Unload stops a local model's runner, or forgets an upstream model's
// health until its next check; model.unloaded is published.
func (c *Catalog) Unload(ctx context.Context, id string) (Model, error) {
	e, err := c.lookup(ctx, id)
	if err != nil {
		return Model{}, err
	}
	if e.remote != nil {
		e.remote.Reset()
		c.cfg.Events.Publish(events.ModelUnloaded, map[string]any{"model": e.spec.ID, "backend": BackendUpstream, "reason": "requested"})
		return c.view(e), nil
	}
	c.cfg.Local.Unload(e.spec.ID)
	return c.view(e), nil
}

// Record adds an observation to the model's live figures.
func (c *Catalog) Record(id string, o Observation) { c.cfg.Stats.Record(id, o) }

// Names lists every model id and alias (for messages).
func (c *Catalog) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := sortedKeys(c.entries)
	return append(out, sortedKeys(c.aliases)...)
}

// Describe is for error messages: "a, b, c".
func Describe(names []string) string { return strings.Join(names, ", ") }
