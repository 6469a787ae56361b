package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
)

// BenchConfig configures Bench.
type BenchConfig struct {
	ModelPath string
	Engine    EngineConfig
	Tokens    int // generated tokens per measurement (default 128)
	Runs      int // repetitions of each measurement (default 5)
}

// Bench measures where a generated token's time goes below the HTTP layers,
// on the runner's own context: a bare llama_decode of one token, of one
// token for each of 8 sequences and of a ~480-token prompt, then the same
// single-stream generation through the engine's step loop (sampling,
// detokenizing, stop-sequence checks and event queueing included). It
// prints a table to w; bench/README.md explains the rows.
func Bench(ctx context.Context, cfg BenchConfig, w io.Writer) error {
	cfg.Engine.logLevel()
	if cfg.Tokens <= 0 {
		cfg.Tokens = 128
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 5
	}
	if cfg.Engine.Slots < 8 {
		cfg.Engine.Slots = 8
	}
	m, err := llamacpp.LoadModel(cfg.ModelPath, llamacpp.ModelParams{UseMmap: true})
	if err != nil {
		return err
	}
	defer m.Free()
	e, err := NewEngine(m, cfg.Engine, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer e.Close()

	short, err := m.Tokenize(benchShortPrompt, true, false)
	if err != nil {
		return err
	}
	long, err := m.Tokenize(benchLongPrompt(), true, false)
	if err != nil {
		return err
	}
	// One batch at most: the row times a prompt read in one decode (a
	// byte-level vocabulary makes the text much longer in tokens).
	long = long[:min(len(long), e.nBatch-1)]

	type row struct {
		name string
		per  []float64 // ms per unit, one per run
		unit string
		toks int // tokens per unit
	}
	var rows []row

	// The bare decodes run on the engine's own context from the engine's
	// goroutine, so nothing else touches it meanwhile.
	var decode1, decode8, prompt []float64
	err = e.exclusive(ctx, func(lctx *llamacpp.Context, b *llamacpp.Batch) error {
		for run := 0; run < cfg.Runs+1; run++ { // the first run warms up
			lctx.ClearMemory()
			// One sequence: the short prompt, then one token per decode.
			if err := prefill(lctx, b, e.nBatch, short, []int{0}); err != nil {
				return err
			}
			t0 := time.Now()
			for i := 0; i < cfg.Tokens; i++ {
				b.Clear()
				b.Add(short[1+i%(len(short)-1)], len(short)+i, 0, true)
				if err := lctx.Decode(b); err != nil {
					return err
				}
			}
			d1 := msPer(time.Since(t0), cfg.Tokens)
			// Eight sequences: one token each per decode.
			lctx.ClearMemory()
			seqs := []int{0, 1, 2, 3, 4, 5, 6, 7}
			if err := prefill(lctx, b, e.nBatch, short, seqs); err != nil {
				return err
			}
			t0 = time.Now()
			for i := 0; i < cfg.Tokens; i++ {
				b.Clear()
				for _, s := range seqs {
					b.Add(short[1+(i+s)%(len(short)-1)], len(short)+i, s, true)
				}
				if err := lctx.Decode(b); err != nil {
					return err
				}
			}
			d8 := msPer(time.Since(t0), cfg.Tokens)
			// The long prompt in one decode.
			lctx.ClearMemory()
			t0 = time.Now()
			if err := prefill(lctx, b, e.nBatch, long, []int{0}); err != nil {
				return err
			}
			pp := msPer(time.Since(t0), 1)
			if run > 0 {
				decode1 = append(decode1, d1)
				decode8 = append(decode8, d8)
				prompt = append(prompt, pp)
			}
		}
		lctx.ClearMemory()
		for _, s := range e.slots {
			s.cache = s.cache[:0]
			s.promptKV = 0
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows = append(rows,
		row{"llama_decode, 1 sequence", decode1, "token", 1},
		row{"llama_decode, 8 sequences", decode8, "step", 8},
		row{fmt.Sprintf("llama_decode, %d-token prompt", len(long)), prompt, "prompt", len(long)})

	// The step loop: greedy generation with the end tokens banned, as the
	// engine benchmark asks for it; a different first token each run, so
	// no cached prefix is reused.
	loop, err := timeRuns(cfg.Runs, func(run int) (float64, error) {
		p := append([]llamacpp.Token{short[0], short[1+run%(len(short)-1)]}, short[1:]...)
		return generate(ctx, e, p, cfg.Tokens)
	})
	if err != nil {
		return err
	}
	rows = append(rows, row{"engine step loop, 1 stream", loop, "token", 1})

	// The same beside seven idle slots holding ~500-token prompts in their
	// caches (as after a burst of long requests): attention passes over
	// their cells in the shared KV buffer, masked.
	err = e.exclusive(ctx, func(lctx *llamacpp.Context, _ *llamacpp.Batch) error {
		lctx.ClearMemory()
		for _, s := range e.slots {
			s.cache, s.promptKV, s.lastUsed = s.cache[:0], 0, time.Time{}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := 0; i < 7; i++ {
		// Without BOS, and each different, so none shares a prefix with
		// the measured prompt or with another.
		p := append([]llamacpp.Token{long[1+i]}, long[1:]...)
		if _, err := generate(ctx, e, p, 2); err != nil {
			return err
		}
	}
	idle, err := timeRuns(cfg.Runs, func(int) (float64, error) { return generate(ctx, e, short, cfg.Tokens) })
	if err != nil {
		return err
	}
	rows = append(rows, row{"engine step loop, 1 stream, 7 idle caches", idle, "token", 1})

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "measure\tms per unit (median)\trange\ttok/s\t\n")
	for _, r := range rows {
		med := median(r.per)
		fmt.Fprintf(tw, "%s\t%.2f ms/%s\t%.2f-%.2f\t%.1f\t\n", r.name, med, r.unit, slices.Min(r.per), slices.Max(r.per), float64(r.toks)*1000/med)
	}
	return tw.Flush()
}

// timeRuns calls f runs+1 times and returns its results but the first,
// which warms up.
func timeRuns(runs int, f func(run int) (float64, error)) ([]float64, error) {
	var out []float64
	for run := 0; run <= runs; run++ {
		ms, err := f(run)
		if err != nil {
			return nil, err
		}
		if run > 0 {
			out = append(out, ms)
		}
	}
	return out, nil
}

// generate runs prompt through the engine's step loop greedily with the end
// tokens banned, for tokens tokens, and returns the milliseconds per token
// between the first token and the last.
func generate(ctx context.Context, e *Engine, prompt []llamacpp.Token, tokens int) (float64, error) {
	req := inference.CompletionRequest{MaxTokens: tokens}
	req.LogitBias = map[int32]float32{}
	for _, t := range []llamacpp.Token{e.model.EOS(), 1, 106} {
		if t >= 0 && int(t) < e.model.NVocab() {
			req.LogitBias[t] = -100
		}
	}
	submitted := time.Now()
	q, err := e.Submit(ctx, req, prompt)
	if err != nil {
		return 0, err
	}
	var first, last time.Time
	for {
		evs, err := q.next(ctx)
		if err != nil {
			return 0, err
		}
		now := time.Now()
		for _, ev := range evs {
			if ev.Error != "" {
				return 0, fmt.Errorf("bench generation: %s", ev.Error)
			}
			if first.IsZero() {
				first = now
			}
			last = now
			if ev.Done {
				n := ev.Usage.CompletionTokens
				if n > 1 && last.After(first) {
					return msPer(last.Sub(first), n-1), nil
				}
				// Every token came in one wakeup (a tiny model is faster
				// than the reader): time the whole request instead.
				return msPer(last.Sub(submitted), max(n, 1)), nil
			}
		}
	}
}

// prefill decodes prompt into each of seqs, in batches of at most n tokens
// (llama.cpp aborts on a larger one).
func prefill(lctx *llamacpp.Context, b *llamacpp.Batch, n int, prompt []llamacpp.Token, seqs []int) error {
	b.Clear()
	for _, s := range seqs {
		for i, t := range prompt {
			if b.Len() == n {
				if err := lctx.Decode(b); err != nil {
					return err
				}
				b.Clear()
			}
			b.Add(t, i, s, i == len(prompt)-1)
		}
	}
	return lctx.Decode(b)
}

func msPer(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const benchShortPrompt = "Write a long, detailed story about a lighthouse keeper in a small harbour town, describing the town, its people and a winter storm in as much detail as you can.\n\n"

// benchLongPrompt is about 480 Gemma 3 tokens of plain prose, the size of the
// engine benchmark's prompt.
func benchLongPrompt() string {
	s := "The harbour town wakes before dawn, when the fishing boats slip out past the breakwater and the gulls follow them in wide, noisy circles. "
	return "Read these notes about a harbour town, then summarise them.\n\n" + strings.Repeat(s, 17) + "\n\nSummary:"
}
