package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/httpapi"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/metrics"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/store"
)

// defaultRerankModel picks the model that serves rerank requests naming no
// model: the configured one (SOVEREIGN_RERANK_MODEL or rerank_model) when
// set, else the first installed local model whose rerank method is
// cross-encoder, else the default chat model (query-likelihood) when installed.
// It returns "" when none applies, and says which rule chose.
func defaultRerankModel(configured string, list []catalog.Model) (id, why string) {
	if configured != "" {
		return configured, "configuration"
	}
	for _, m := range list {
		if m.Backend == catalog.BackendLocal && m.RerankMethod == models.RerankCrossEncoder {
			return m.ID, "first installed cross-encoder"
		}
	}
	chat := ""
	for _, d := range models.Defaults {
		if d.Purpose == models.CapChat {
			chat = d.ID
			break
		}
	}
	for _, m := range list {
		if m.ID == chat && m.Backend == catalog.BackendLocal && m.RerankMethod != "" {
			return m.ID, "default chat model (" + m.RerankMethod + ")"
		}
	}
	return "", ""
}

// defaultEmbeddingModel embeds collections that name no model.
const defaultEmbeddingModel = "all-minilm-l6-v2"

// pathsOf lets the engine find GGUF files through the model catalog,
// which is built after the engine (the catalog routes to the engine).
type pathsOf struct{ c **catalog.Catalog }

func (p pathsOf) ModelPath(id string) (string, error) {
	if *p.c == nil {
		return "", fmt.Errorf("%w: %q", inference.ErrModelNotFound, id)
	}
	return (*p.c).ModelPath(id)
}

func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// openKeys opens the database and the key service.
func openKeys(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Store, *auth.Service, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the database %s: %w", store.Redact(cfg.DatabaseURL), err)
	}
	svc := auth.NewService(st)
	svc.Logger = log
	return st, svc, nil
}

// serveCommand implements `sovereign serve`.
func serveCommand(args []string) error {
	cfg, err := config.Load(args, os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logOut := newBufferedLog(os.Stderr)
	defer logOut.Close()
	log := newLogger(cfg.LogLevel, logOut)
	slog.SetDefault(log)
	if os.Getenv("GOMAXPROCS") == "" {
		// Half the CPUs (at least one) for the API server: its work is
		// short and I/O bound, and with a thread per CPU the Go scheduler's
		// wake-ups cost more CPU and tail latency than they save on a small
		// machine it shares with model runners (measured by bench/gateway).
		// GOMAXPROCS overrides; runner processes are not affected.
		runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)/2))
	}
	if os.Getenv("GOGC") == "" {
		// The server's live heap is small and its garbage is per request:
		// collecting less often costs little memory and saves CPU and tail
		// latency under load (measured by bench/gateway).
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	db, keys, err := openKeys(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	secret, created, err := keys.Bootstrap(ctx, cfg.BootstrapKey)
	if err != nil {
		return err
	}
	modelStore, err := models.Open(cfg.ModelsDir)
	if err != nil {
		return err
	}
	bus := events.NewBus()
	var cat *catalog.Catalog
	mgr := engine.New(engine.Config{
		Catalog: pathsOf{&cat}, Slots: cfg.Slots, CtxPerSlot: cfg.CtxPerSlot, Threads: cfg.Threads,
		MaxQueue: cfg.MaxQueue, KeepAlive: cfg.KeepAlive, MaxLoaded: cfg.MaxLoaded, Deterministic: cfg.Deterministic, Events: bus, Log: log,
	})
	defer mgr.Close()
	cat, err = catalog.New(ctx, catalog.Config{
		Installed: modelStore, Specs: db, Configured: cfg.Models, Local: mgr, Events: bus, Log: log,
	})
	if err != nil {
		return fmt.Errorf("model catalog: %w", err)
	}
	defer cat.Close()
	met := metrics.New(func() []metrics.ModelState {
		var out []metrics.ModelState
		for _, s := range mgr.Status() {
			out = append(out, metrics.ModelState{ID: s.ID, State: s.State, Inflight: s.Inflight})
		}
		return out
	})
	rerankModel, why := defaultRerankModel(cfg.RerankModel, cat.List(ctx))
	if rerankModel != "" {
		log.Info("default rerank model", "model", rerankModel, "chosen_by", why)
	} else {
		log.Info("no default rerank model: set SOVEREIGN_RERANK_MODEL or install a cross-encoder or the default chat model")
	}
	shuttingDown := make(chan struct{})
	api := &httpapi.Server{
		DefaultRerankModel: rerankModel,
		Backend:            cat, Models: cat, Log: log,
		Sources: sources.New(db, cat, defaultEmbeddingModel, log), Extract: extractFile, DefaultEmbeddingModel: defaultEmbeddingModel,
		Responses: db,
		Auth:      keys, Keys: keys, Metrics: met, MaxBody: cfg.MaxBodyBytes,
		Ready: func(ctx context.Context) error {
			select {
			case <-shuttingDown:
				return errors.New("shutting down")
			default:
			}
			return db.Ping(ctx)
		},
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // reading the request only; streams are written without a deadline
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	scheme := "http"
	if cfg.TLS() {
		scheme = "https"
		go func() { errc <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey) }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	list := cat.List(ctx)
	logOut.flush() // start-up log lines before the banner
	fmt.Fprintf(os.Stderr, "Sovereign is listening on %s://%s (OpenAI base URL: %s://%s/v1)\n", scheme, ln.Addr(), scheme, ln.Addr())
	fmt.Fprintf(os.Stderr, "Database: %s. Models (%s): %d", store.Redact(cfg.DatabaseURL), cfg.ModelsDir, len(list))
	for _, m := range list {
		fmt.Fprintf(os.Stderr, " %s", m.ID)
		if m.Backend == catalog.BackendUpstream {
			fmt.Fprint(os.Stderr, " (upstream)")
		}
	}
	fmt.Fprintln(os.Stderr)
	switch {
	case created && cfg.BootstrapKey == "":
		fmt.Fprintf(os.Stderr, "\nAdmin API key (shown once; store it now):\n\n    %s\n\nUse it as: Authorization: Bearer <key>. Create more with `sovereign keys create`.\n\n", secret)
	case created:
		fmt.Fprintln(os.Stderr, "Admin API key created from SOVEREIGN_BOOTSTRAP_KEY.")
	default:
		fmt.Fprintln(os.Stderr, "API keys: use an existing key; `sovereign keys create --scopes admin` makes a new admin key.")
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	close(shuttingDown)
	log.Info("shutting down: finishing in-flight requests and streams", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}
