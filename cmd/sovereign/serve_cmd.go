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
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/sovereign-ai/sovereign/internal/app"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/runner"
	"github.com/sovereign-ai/sovereign/internal/store"
)

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
	// A user deactivated from the command line is signed out of the
	// console too (sessions live in the database).
	svc.EndSessions = func(ctx context.Context, keyID string) error {
		_, err := st.DeleteConsoleSessionsOfKey(ctx, keyID)
		return err
	}
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
		// Half the CPUs for the API server, and at least two where there
		// are two. Half: its work is short and I/O bound, and with a
		// thread per CPU the Go scheduler's wake-ups cost more CPU than
		// they save on a machine it shares with model runners. At least
		// two: with one, a reply that arrives (from Redis, an upstream)
		// while another request's work runs waits for that work to yield,
		// so every wait on the request path grows at the tail: on two
		// CPUs, two Ps cut the 1000 RPS p99 of plain and governed requests
		// alike, for about 5 % more CPU per request (bench/README.md,
		// 2026-11-26).
		// GOMAXPROCS overrides; runner processes are not affected.
		n := runtime.GOMAXPROCS(0) // the CPUs this process may use
		runtime.GOMAXPROCS(min(n, max(2, n/2)))
	}
	if os.Getenv("GOGC") == "" {
		// The server's live heap is small and its garbage is per request:
		// collecting less often costs little memory and saves CPU and tail
		// latency under load (measured by bench/gateway).
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	a, err := app.New(ctx, cfg, app.Options{Log: log, NoMigrate: !cfg.MigrateOnStart})
	if err != nil {
		return err
	}
	defer a.Close()
	if a.RerankModel != "" {
		log.Info("default rerank model", "model", a.RerankModel, "chosen_by", a.RerankWhy)
	} else {
		log.Info("no default rerank model: set SOVEREIGN_RERANK_MODEL, or install a cross-encoder or a chat model of `sovereign models pull --list`")
	}

	if addr := os.Getenv("SOVEREIGN_DEBUG_ADDR"); addr != "" {
		if err := serveDebug(addr, log); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           a.Handler(),
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
	list := a.Catalog.List(ctx)
	logOut.flush() // start-up log lines before the banner
	fmt.Fprintf(os.Stderr, "Sovereign is listening on %s://%s (OpenAI base URL: %s://%s/v1; web console: %s://%s/console/)\n", scheme, ln.Addr(), scheme, ln.Addr(), scheme, ln.Addr())
	fmt.Fprintf(os.Stderr, "Database: %s. Models (%s): %d", store.Redact(cfg.DatabaseURL), cfg.ModelsDir, len(list))
	for _, m := range list {
		fmt.Fprintf(os.Stderr, " %s", m.ID)
		if m.Backend == catalog.BackendUpstream {
			fmt.Fprint(os.Stderr, " (upstream)")
		}
	}
	fmt.Fprintln(os.Stderr)
	if cpu, err := runner.CPUKernels(); err != nil {
		fmt.Fprintf(os.Stderr, "CPU kernels: none: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "CPU kernels: %s\n", cpu)
	}
	switch {
	case a.AdminKeyCreated && cfg.BootstrapKey == "":
		fmt.Fprintf(os.Stderr, "\nAdmin API key (shown once; store it now):\n\n    %s\n\nUse it as: Authorization: Bearer <key>. Create more with `sovereign keys create`.\n\n", a.AdminKey)
	case a.AdminKeyCreated:
		fmt.Fprintln(os.Stderr, "Admin API key created from SOVEREIGN_BOOTSTRAP_KEY.")
	default:
		fmt.Fprintln(os.Stderr, "API keys: use an existing key; `sovereign keys create --scopes admin` makes a new admin key.")
	}
	// People sign in to the console with accounts (docs/users.md); say how
	// to make the first one.
	if us, err := a.Keys.ListUsers(ctx, ""); err == nil && len(us) == 0 {
		fmt.Fprintln(os.Stderr, "Console sign-in: no user account yet. Make yours (an administrator of every team):")
		fmt.Fprintln(os.Stderr, "    sovereign users create --email you@example.com --instance-admin")
		fmt.Fprintln(os.Stderr, "  (or POST /v1/users with the admin key). People sign in with an e-mail address and password.")
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.ShuttingDown()
	log.Info("shutting down: finishing in-flight requests and streams", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// serveDebug serves Go's profiles (net/http/pprof: CPU, heap, allocations,
// goroutines, execution traces) on addr, which must be a loopback address:
// they are for whoever profiles the server on its own host (bench/README.md,
// "Where the tail comes from"), never for the network, and they need no key.
func serveDebug(addr string, log *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("SOVEREIGN_DEBUG_ADDR %q: give a loopback address and port (127.0.0.1:6060): the profiles need no key", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("SOVEREIGN_DEBUG_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Warn("serving Go profiles without a key (SOVEREIGN_DEBUG_ADDR)", "addr", ln.Addr().String())
	go http.Serve(ln, mux)
	return nil
}
