package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/httpapi"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/models"
)

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

// storeCatalog adapts the model store to the engine's Catalog.
type storeCatalog struct{ store *models.Store }

func (c storeCatalog) ModelPath(id string) (string, error) {
	if _, err := c.store.Get(id); err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return "", fmt.Errorf("%w: %q", inference.ErrModelNotFound, id)
		}
		return "", err
	}
	return c.store.Path(id), nil
}

// serveCommand implements `sovereign serve`.
func serveCommand(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := env("SOVEREIGN_DATA_DIR", "./data")
	addr := fs.String("addr", env("SOVEREIGN_ADDR", "127.0.0.1:8080"), "listen address (SOVEREIGN_ADDR)")
	modelsDir := fs.String("models-dir", env("SOVEREIGN_MODELS_DIR", filepath.Join(dataDir, "models")), "models directory (SOVEREIGN_MODELS_DIR)")
	slots := fs.Int("slots", envInt("SOVEREIGN_SLOTS", 4), "parallel sequences per model (SOVEREIGN_SLOTS)")
	ctxSize := fs.Int("ctx", envInt("SOVEREIGN_CTX", 4096), "context tokens per sequence (SOVEREIGN_CTX)")
	threads := fs.Int("threads", envInt("SOVEREIGN_THREADS", 0), "CPU threads per model, 0 = one per core (SOVEREIGN_THREADS)")
	maxQueue := fs.Int("max-queue", envInt("SOVEREIGN_MAX_QUEUE", 16), "requests waiting per model beyond its slots before 503 (SOVEREIGN_MAX_QUEUE)")
	keepAlive := fs.Duration("keep-alive", envDuration("SOVEREIGN_KEEP_ALIVE", 5*time.Minute), "unload a model after this long idle, <0 never (SOVEREIGN_KEEP_ALIVE)")
	maxLoaded := fs.Int("max-loaded", envInt("SOVEREIGN_MAX_LOADED", 2), "most models loaded at once (SOVEREIGN_MAX_LOADED)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	store, err := models.Open(*modelsDir)
	if err != nil {
		return err
	}
	bus := events.NewBus()
	mgr := engine.New(engine.Config{
		Catalog: storeCatalog{store}, Slots: *slots, CtxPerSlot: *ctxSize, Threads: *threads,
		MaxQueue: *maxQueue, KeepAlive: *keepAlive, MaxLoaded: *maxLoaded, Events: bus, Log: log,
	})
	defer mgr.Close()
	api := &httpapi.Server{Backend: mgr, Models: store, Status: mgr.Status, Log: log}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	list, _ := store.List()
	fmt.Fprintf(os.Stderr, "Sovereign is listening on http://%s (OpenAI base URL: http://%s/v1)\n", ln.Addr(), ln.Addr())
	fmt.Fprintf(os.Stderr, "Models in %s: %d installed", *modelsDir, len(list))
	for _, m := range list {
		fmt.Fprintf(os.Stderr, " %s", m.ID)
	}
	fmt.Fprintln(os.Stderr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
