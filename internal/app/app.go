// Package app builds Sovereign from a configuration: the database and the
// key service, the model store, the engine that runs local models, the
// model catalog (local and upstream models), sources, stored responses and
// the HTTP API. `sovereign serve` and the end-to-end tests both build the
// application here, so the tests run what ships.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/batch"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/console"
	"github.com/sovereign-ai/sovereign/internal/console/session"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/extract"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi"
	"github.com/sovereign-ai/sovereign/internal/idempotency"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/metrics"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/oidc"
	"github.com/sovereign-ai/sovereign/internal/outbound"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/redis"
	"github.com/sovereign-ai/sovereign/internal/samlsso"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/store"
	"github.com/sovereign-ai/sovereign/internal/webhook"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// DefaultEmbeddingModel embeds collections that name no model.
const DefaultEmbeddingModel = "all-minilm-l6-v2"

// Options are what a caller decides beyond the configuration.
type Options struct {
	// DB, when set, is the database instead of the one Config.DatabaseURL
	// opens (the tests open one per dialect); the caller closes it.
	DB store.Store
	// Models, when set, is the model store instead of Config.ModelsDir's.
	Models *models.Store
	// Engine, when set, is the engine's configuration instead of the one
	// built from Config; its Catalog, Events and Log are the app's.
	Engine *engine.Config
	// CatalogRefresh is how often the catalog re-reads its sources (0:
	// the catalog's default; negative: never).
	CatalogRefresh time.Duration
	// DurableURL, with DB, is the database of the durable engine (a
	// SQLite file path or a postgres:// URL); without DB the engine uses
	// Config.DatabaseURL's.
	DurableURL string
	// NoMigrate opens the database without applying migrations, refusing
	// a schema behind this release or contracted past it (serve with
	// migrate_on_start false; `sovereign migrate` applies them).
	NoMigrate bool
	Log       *slog.Logger
}

// App is a built application.
type App struct {
	DB      store.Store
	Keys    *auth.Service
	Engine  *engine.Manager
	Catalog *catalog.Catalog
	Bus     *events.Bus
	Metrics *metrics.Metrics
	// Records writes the request log.
	Records *records.Writer
	// Limits enforces rate limits and quotas.
	Limits *limits.Service
	// Durable runs background work that survives a crash (ingestion).
	Durable *durable.Engine
	// Policies evaluates policies; Decisions stores their decisions.
	Policies  *policy.Service
	Decisions *policy.Writer
	API       *httpapi.Server
	// Gen is the generation service every model call goes through.
	Gen *generate.Service
	// AdminKey is the bootstrap admin key when this start created it
	// (AdminKeyCreated), to show once.
	AdminKey        string
	AdminKeyCreated bool
	// RerankModel is the default rerank model and RerankWhy the rule that
	// chose it ("" when none applies).
	RerankModel, RerankWhy string

	// Workflows defines and runs workflows.
	Workflows *workflow.Service
	// Batches runs OpenAI's Batch API (files and batches).
	Batches *batch.Service
	// Webhooks delivers events to the teams' webhooks.
	Webhooks *webhook.Service

	// Console is the web console (/console).
	Console *console.Console

	handler      http.Handler
	served       http.Handler
	shuttingDown chan struct{}
	closers      []func()
	// launched says the durable engine runs (Close then stops it).
	launched bool
}

// New builds the application described by cfg.
func New(ctx context.Context, cfg config.Config, opts Options) (a *App, err error) {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	a = &App{shuttingDown: make(chan struct{})}
	// built, not a: a failing return sets a to nil before this runs.
	built := a
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	a.DB = opts.DB
	if a.DB == nil {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, err
		}
		open := store.Open
		if opts.NoMigrate {
			open = func(ctx context.Context, url string) (store.Store, error) {
				db, st, err := store.OpenMigrated(ctx, url)
				if err == nil && st.Ahead() {
					log.Info("the database schema is newer than this release, and only expanded past it: serving", "schema", st.String())
				}
				return db, err
			}
		}
		db, err := open(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("opening the database %s: %w", store.Redact(cfg.DatabaseURL), err)
		}
		a.DB = db
		a.closers = append(a.closers, func() { db.Close() })
	}
	a.Keys = auth.NewService(a.DB)
	a.Keys.Logger = log
	a.Keys.OutageGrace = cfg.KeyOutageGrace
	if a.AdminKey, a.AdminKeyCreated, err = a.Keys.Bootstrap(ctx, cfg.BootstrapKey); err != nil {
		return nil, err
	}
	modelStore := opts.Models
	if modelStore == nil {
		if modelStore, err = models.Open(cfg.ModelsDir); err != nil {
			return nil, err
		}
	}
	a.Metrics = metrics.New(func() []metrics.ModelState {
		var out []metrics.ModelState
		for _, s := range a.Engine.Status() {
			out = append(out, metrics.ModelState{ID: s.ID, State: s.State, Inflight: s.Inflight})
		}
		return out
	})
	// Events are stored in the database's log before they are handed out
	// (GET /v1/events reads the log). The bus closes after everything that
	// publishes (closers run in reverse) and before the database.
	a.Bus = events.New(events.Config{Store: a.DB, OnLost: a.Metrics.EventsLost, Log: log})
	a.closers = append(a.closers, a.Bus.Close)
	ec := engine.Config{Slots: cfg.Slots, CtxPerSlot: cfg.CtxPerSlot, Threads: cfg.Threads, MaxQueue: cfg.MaxQueue,
		KeepAlive: cfg.KeepAlive, MaxLoaded: cfg.MaxLoaded, Deterministic: cfg.Deterministic}
	if opts.Engine != nil {
		ec = *opts.Engine
	}
	// The engine is built before the catalog and knows nothing of it: the
	// catalog hands it each model's file with the model (catalog.Local).
	ec.Events, ec.Log = a.Bus, log
	a.Engine = engine.New(ec)
	a.closers = append(a.closers, a.Engine.Close)
	guard, err := upstreamGuard(cfg)
	if err != nil {
		return nil, err
	}
	a.Catalog, err = catalog.New(ctx, catalog.Config{
		Installed: modelStore, Specs: a.DB, Configured: cfg.Models, Local: a.Engine, Events: a.Bus, Log: log, Refresh: opts.CatalogRefresh,
		Guard: guard,
	})
	if err != nil {
		return nil, fmt.Errorf("model catalog: %w", err)
	}
	a.closers = append(a.closers, a.Catalog.Close)
	a.RerankModel, a.RerankWhy = DefaultRerankModel(cfg.RerankModel, a.Catalog.List(ctx))
	// Records the database cannot take wait in a spool under the data
	// directory (none without one: the tests' in-process servers).
	wc := records.WriterConfig{Counters: a.Metrics, Log: log, SpoolFull: cfg.RecordsSpoolFull, Instance: cfg.InstanceID}
	if cfg.DataDir != "" && cfg.RecordsSpoolBytes > 0 {
		wc.SpoolDir, wc.SpoolBytes = filepath.Join(cfg.DataDir, "records-spool"), cfg.RecordsSpoolBytes
	}
	if a.Records, err = records.OpenWriter(a.DB, wc); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.Records.Close) // before the database closes: queued records are stored (or spooled)
	if cfg.LogCheckpointInterval > 0 {
		a.background(ctx, (&records.Checkpointer{Store: a.DB, Interval: cfg.LogCheckpointInterval, Log: log}).Run)
	}
	if cfg.LogRetention > 0 {
		a.background(ctx, (&records.Purger{Store: a.DB, Retention: cfg.LogRetention, Log: log,
			Also: []records.Purge{{What: "policy decisions", Purge: a.DB.PurgeDecisions}}}).Run)
	}
	lc := limits.Config{Store: a.DB, Rules: cfg.Limits, FailOpen: cfg.LimitsFailOpen, Metrics: a.Metrics, Log: log}
	// GET /readyz: without the database the server cannot serve; without
	// Redis it can, when limits fail open (degraded), and cannot when they
	// fail closed.
	readyChecks := []httpapi.ReadyCheck{{Name: "database", Check: a.DB.Ping}}
	if cfg.RedisURL != "" {
		rl, err := redis.Open(ctx, cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("limits: %w (SOVEREIGN_REDIS_URL=%s)", err, redis.Redact(cfg.RedisURL))
		}
		a.closers = append(a.closers, func() { rl.Close() })
		lc.Backend = rl
		impact := "rate limits fail closed: governed requests get 503 limits_unavailable"
		if cfg.LimitsFailOpen {
			impact = "rate limits fail open: requests are admitted without them"
		}
		readyChecks = append(readyChecks, httpapi.ReadyCheck{Name: "redis", Check: rl.Ping, Degrades: cfg.LimitsFailOpen, Impact: impact})
	}
	if a.Limits, err = limits.New(ctx, lc); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.Limits.Close)
	a.Decisions = policy.NewWriter(a.DB, 0, a.Metrics.DecisionsLost, log)
	a.closers = append(a.closers, a.Decisions.Close)
	if a.Policies, err = policy.NewService(ctx, policy.ServiceConfig{Store: a.DB, Writer: a.Decisions, Events: a.Bus, Log: log}); err != nil {
		return nil, fmt.Errorf("policies: %w", err)
	}
	a.closers = append(a.closers, a.Policies.Close)
	capture, err := records.NewCapture(ctx, func(ctx context.Context) ([]string, error) {
		teams, err := a.Keys.ListTeams(ctx)
		var ids []string
		for _, t := range teams {
			if t.Capture {
				ids = append(ids, t.ID)
			}
		}
		return ids, err
	}, 0, log)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	a.closers = append(a.closers, capture.Close)
	// The durable engine is opened (not launched) before the services
	// that run work on it, so that each is built with it.
	e, err := a.openDurable(ctx, cfg, opts, log)
	if err != nil {
		return nil, err
	}
	srcs := sources.New(a.DB, a.Catalog, DefaultEmbeddingModel, log)
	srcs.Events = a.Bus // document.ready and document.failed
	srcs.StartIngest = func(ctx context.Context, id string) error {
		return e.Start(ctx, "ingest", "sources.ingest", "ingest:"+id, id)
	}
	// One generation service governs every model call: the API's, and
	// the workflow steps' that call it with typed requests.
	a.Gen = &generate.Service{Models: a.Catalog, Policies: a.Policies, Limits: a.Limits, Capture: capture, Metrics: a.Metrics, Records: a.Records, Keys: a.Keys,
		RecordGate: a.Records}
	ans := &answers.Service{Store: srcs, Embed: a.Catalog, EmbeddingModel: DefaultEmbeddingModel, AbstainText: cfg.AbstainText}
	fetch, err := newFetcher(cfg)
	if err != nil {
		return nil, err
	}
	steps := stepCalls{gen: a.Gen, sources: srcs, answers: ans}
	a.Workflows = &workflow.Service{Store: a.DB, Engine: e, Searcher: steps, Chatter: steps, Reranker: steps, Answerer: steps,
		Fetcher: fetch, Events: a.Bus, Log: log}
	startWebhooks, err := a.newWebhooks(cfg, e, log)
	if err != nil {
		return nil, err
	}
	idem := &idempotency.Service{Store: a.DB, Log: log}
	a.background(ctx, idem.Run)
	// Batch lines run on the API's operations, which need no HTTP
	// server: the batch service is built before the server that serves it.
	ops := &httpapi.Ops{Gen: a.Gen, Sources: srcs, Answers: ans, Responses: a.DB, DefaultRerankModel: a.RerankModel, Log: log}
	a.newBatches(cfg, opts, ops.RunLine, log)
	a.API = &httpapi.Server{
		Ops: ops, Models: a.Catalog, Auth: a.Keys, Keys: a.Keys, Metrics: a.Metrics, MaxBody: cfg.MaxBodyBytes,
		Extract:               Extractor(exeOf(ec), extract.Budget{Time: cfg.ExtractTimeout, Memory: cfg.ExtractMemory}),
		DefaultEmbeddingModel: DefaultEmbeddingModel,
		Records:               a.Records, RecordStore: a.DB, Limits: a.Limits, Policies: a.Policies, Capture: capture,
		Events: a.Bus, Stop: a.shuttingDown,
		Workflows: a.Workflows, Webhooks: a.Webhooks, Batches: a.Batches, Idempotency: idem,
		Ready: func(ctx context.Context) error {
			select {
			case <-a.shuttingDown:
				return errors.New("shutting down")
			default:
			}
			return nil
		},
		ReadyChecks: readyChecks,
	}
	a.handler = a.API.Handler()
	if err := a.newConsole(ctx, cfg, log); err != nil {
		return nil, err
	}
	if err := a.startDurable(ctx, e, srcs, startWebhooks, log); err != nil {
		return nil, err
	}
	return a, nil
}

// background runs loop until the application closes (the closers, which
// run in reverse, stop it before what was opened earlier closes).
func (a *App) background(ctx context.Context, loop func(context.Context)) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(ctx)
	}()
	a.closers = append(a.closers, func() { stop(); <-done })
}

// openDurable opens the durable engine on the application's database;
// startDurable launches it once the work that runs on it is registered.
func (a *App) openDurable(ctx context.Context, cfg config.Config, opts Options, log *slog.Logger) (*durable.Engine, error) {
	url := cfg.DatabaseURL
	switch {
	case opts.DurableURL != "":
		url = opts.DurableURL
	case url == "":
		return nil, errors.New("durable engine: no database (Options.DurableURL is needed with Options.DB)")
	}
	if kind, err := store.Kind(url); err == nil && kind == "sqlite" {
		url = store.SQLitePath(url)
	}
	e, err := durable.New(ctx, durable.Config{DatabaseURL: url, ExecutorID: cfg.InstanceID, SkipMigrations: opts.NoMigrate, Log: log})
	if err != nil {
		return nil, err
	}
	a.Durable = e
	a.closers = append(a.closers, func() {
		if a.launched {
			// Running steps get a moment to end; the rest resume at the
			// next start.
			e.Close(5 * time.Second)
		}
	})
	return e, nil
}

// startDurable registers the background work that runs on the durable
// engine e and launches it: work a crash interrupted resumes now.
func (a *App) startDurable(ctx context.Context, e *durable.Engine, srcs *sources.Service, startWebhooks func(), log *slog.Logger) error {
	durable.Register(e, "sources.ingest", func(ctx durable.Context, documentID string) error {
		_, err := durable.Step(ctx, "process", func(c context.Context) (struct{}, error) {
			return struct{}{}, srcs.ProcessDocument(c, documentID)
		}, durable.StepOptions{Retries: 5, Backoff: time.Second, MaxBackoff: 30 * time.Second})
		return err
	})
	e.Resumable("sources.ingest", func(ctx context.Context, id string) (bool, error) {
		return srcs.Processing(ctx, strings.TrimPrefix(id, "ingest:"))
	})
	a.Workflows.Register(e)
	if err := a.Batches.Register(e); err != nil {
		return err
	}
	workers := srcs.IngestWorkers
	if workers <= 0 {
		workers = 2
	}
	if err := e.Queue("ingest", workers); err != nil {
		return err
	}
	if err := e.Launch(ctx); err != nil {
		return err
	}
	a.launched = true
	startWebhooks()
	if err := a.Workflows.ResumeRuns(ctx); err != nil {
		return err
	}
	if err := a.resumeBatches(ctx, log); err != nil {
		return err
	}
	n, err := srcs.ResumeIngestion(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		log.Info("documents still processing: their ingestion goes on", "documents", n)
	}
	return nil
}

// Handler is what `sovereign serve` serves: the web console under
// /console, the HTTP API everywhere else.
func (a *App) Handler() http.Handler { return a.served }

// newConsole builds the web console over the API and mounts it in front
// of the API's handler; expired sessions are purged hourly.
func (a *App) newConsole(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	idle, keySignIn := cfg.ConsoleSessionIdle, cfg.ConsoleKeySignIn
	m := &session.Manager{Store: a.DB, Idle: idle}
	// Deactivating a user, or taking them out of a team, ends the
	// sessions of the keys they own.
	a.Keys.EndSessions = func(ctx context.Context, keyID string) error {
		_, err := a.DB.DeleteConsoleSessionsOfKey(ctx, keyID)
		return err
	}
	var providers []*oidc.Provider
	for _, pc := range cfg.OIDC {
		// The operator names the provider in the configuration: its URLs
		// are not the outbound rules' business (a provider inside the
		// perimeter is the usual case).
		providers = append(providers, oidc.New(pc, &http.Client{Timeout: 15 * time.Second}))
	}
	var samlProviders []*samlsso.Provider
	for _, pc := range cfg.SAML {
		p, err := samlsso.New(pc, &http.Client{Timeout: 15 * time.Second})
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		samlProviders = append(samlProviders, p)
	}
	c, err := console.New(console.Config{API: a.API, Keys: a.Keys, Sessions: m, Log: log, Users: a.Keys, KeySignIn: keySignIn,
		Passwords: cfg.PasswordSignIn(), Providers: providers, SAMLProviders: samlProviders, GroupRules: cfg.GroupRules, Invites: a.Keys})
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	a.Console = c
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, c)
	mux.Handle(console.Prefix+"/", c)
	if h := a.scimHandler(cfg, log); h != nil {
		mux.Handle("/scim/v2/", h)
	}
	mux.Handle("/", a.handler)
	a.served = mux
	a.background(ctx, func(ctx context.Context) {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			if n, err := a.DB.PurgeConsoleSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
				log.Warn("console: purging expired sessions", "err", err)
			} else if n > 0 {
				log.Debug("console: purged expired sessions", "sessions", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return nil
}

// ShuttingDown makes /readyz fail, so load balancers stop sending new
// requests while in-flight ones finish.
func (a *App) ShuttingDown() {
	select {
	case <-a.shuttingDown:
	default:
		close(a.shuttingDown)
	}
}

// Close stops the catalog and the engine (its runners) and closes the
// database the app opened, in reverse order of building.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// DefaultRerankModel picks the model that serves rerank requests naming
// no model: the configured one (SOVEREIGN_RERANK_MODEL or rerank_model)
// when set, else the first installed local model whose rerank method is
// cross-encoder, else the smallest installed chat model Sovereign knows by
// name (models.Known: gemma3-270m where the tests' models are, the default
// chat model after `make run`), by query likelihood. Query likelihood runs
// the model over every candidate, so the smallest is the fastest, and the
// score needs no instruction-following. It returns "" when none applies,
// and says which rule chose.
func DefaultRerankModel(configured string, list []catalog.Model) (id, why string) {
	if configured != "" {
		return configured, "configuration"
	}
	for _, m := range list {
		if m.Backend == catalog.BackendLocal && m.RerankMethod == models.RerankCrossEncoder {
			return m.ID, "first installed cross-encoder"
		}
	}
	var best *catalog.Model
	var bestSize int64
	for _, d := range models.Known {
		if d.Purpose != models.CapChat {
			continue
		}
		for i, m := range list {
			if m.ID == d.ID && m.Backend == catalog.BackendLocal && m.RerankMethod != "" && (best == nil || d.Size < bestSize) {
				best, bestSize = &list[i], d.Size
			}
		}
	}
	if best != nil {
		return best.ID, "smallest installed known chat model (" + best.RerankMethod + ")"
	}
	return "", ""
}

// Extractor reads uploaded files, PDFs in a child process (`exe extract`)
// under budget b (zero fields: extract's defaults), so that a hostile file can neither loop
// for ever nor exhaust the server's memory; exe "" reads them in process.
func Extractor(exe string, b extract.Budget) func(ctx context.Context, name, contentType string, data []byte) (text, title, format string, err error) {
	sb := extract.Sandbox{Budget: b}
	if exe != "" {
		sb.Command = []string{exe, "extract"}
	}
	return func(ctx context.Context, name, contentType string, data []byte) (string, string, string, error) {
		return extractFile(sb.Extract(ctx, name, contentType, data))
	}
}

// upstreamGuard is the outbound client whose rules upstream models'
// replicas are held to: public addresses, outbound_allow and
// upstream_allow, and the hosts of the configuration file's own upstream
// models (the operator wrote them); every private address with
// outbound_allow_private. A key with models:write cannot point the server
// at anything else (issue: an upstream registered at an internal address
// was health-checked at once).
func upstreamGuard(cfg config.Config) (*outbound.Client, error) {
	allow := append(slices.Clone(cfg.OutboundAllow), cfg.UpstreamAllow...)
	for _, s := range cfg.Models {
		for _, raw := range s.URLs() {
			if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
				allow = append(allow, u.Hostname())
			}
		}
	}
	c, err := outbound.New(outbound.Config{Allow: allow, AllowPrivate: cfg.OutboundAllowPrivate})
	if err != nil {
		return nil, fmt.Errorf("upstream_allow: %w", err)
	}
	return c, nil
}

// exeOf is the sovereign binary the engine starts runners from, which
// also reads PDFs for it.
func exeOf(ec engine.Config) string {
	if ec.Exe != "" {
		return ec.Exe
	}
	exe, _ := os.Executable()
	return exe
}

// extractFile classifies an extraction's result: a file over a limit is a 413.
func extractFile(d extract.Document, err error) (text, title, format string, _ error) {
	if err != nil {
		if errors.Is(err, extract.ErrTooLarge) {
			return "", "", "", apierr.New(apierr.BodyTooLarge, err.Error())
		}
		return "", "", "", err
	}
	return d.Text, d.Title, d.Format, nil
}
