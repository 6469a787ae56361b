package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sovereign-ai/sovereign/internal/runner"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

// runnerCommand implements `sovereign runner`: it serves one model on a
// loopback port and prints {"addr": "..."} on stdout once listening. With
// --parent-stdin it exits when its standard input closes, so a runner never
// outlives the server that started it.
func runnerCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	model := fs.String("model", "", "path of the GGUF model file (required)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	slots := fs.Int("slots", 4, "parallel sequences sharing the context")
	ctxSize := fs.Int("ctx", 4096, "context tokens per sequence")
	batch := fs.Int("batch", 512, "most tokens per decode step")
	threads := fs.Int("threads", 0, "CPU threads (0: one per core)")
	queue := fs.Int("queue", 64, "most requests waiting for a slot")
	parentStdin := fs.Bool("parent-stdin", false, "exit when standard input closes")
	verbose := fs.Bool("verbose", false, "print llama.cpp's info log")
	deterministic := fs.Bool("deterministic", false, "decode each sequence on its own, so its output does not depend on the batch")
	bench := fs.Bool("bench", false, "measure decode speed on the model, print a table and exit (see bench/README.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return fmt.Errorf("runner: --model is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *parentStdin {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		go func() {
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	engine := runner.EngineConfig{Slots: *slots, CtxPerSlot: *ctxSize, Batch: *batch, Threads: *threads, QueueSize: *queue, Deterministic: *deterministic, Verbose: *verbose}
	if *bench {
		return runner.Bench(ctx, runner.BenchConfig{ModelPath: *model, Engine: engine}, stdout)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	return runner.Run(ctx, runner.Config{
		ModelPath: *model,
		Addr:      *addr,
		Token:     os.Getenv(runnerproto.EnvToken),
		Engine:    engine,
		Log:       log,
		Ready: func(a string) {
			json.NewEncoder(stdout).Encode(map[string]string{"addr": a})
		},
	})
}
