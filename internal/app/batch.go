package app

import (
	"context"
	"log/slog"

	"github.com/sovereign-ai/sovereign/internal/batch"
	"github.com/sovereign-ai/sovereign/internal/config"
)

// newBatches builds the Batch API's service on the app's store. Its lines
// run through the generation service as the batch's key (run:
// httpapi.Ops.RunLine, decoded once, no HTTP round trip),
// at most as many at a time on this server as a local model has slots.
func (a *App) newBatches(cfg config.Config, opts Options, run batch.Run, log *slog.Logger) {
	slots := cfg.Slots
	if opts.Engine != nil {
		slots = opts.Engine.Slots
	}
	a.Batches = batch.New(batch.Config{Store: a.DB, Events: a.Bus, MaxLine: int(cfg.MaxBodyBytes), Concurrency: slots, Run: run, Log: log})
}

// resumeBatches starts the batches a crash left open (and those whose
// workflow had not started); the others resume on their own.
func (a *App) resumeBatches(ctx context.Context, log *slog.Logger) error {
	n, err := a.Batches.Resume(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		log.Info("batches still open: they go on", "batches", n)
	}
	return nil
}
