// Package runner is the process behind `sovereign runner`: it loads one GGUF
// model with llama.cpp and serves it on a loopback port with Sovereign's
// internal protocol (see server.go). Generation uses continuous batching: N
// slots share one llama.cpp context, and every step decodes one batch that
// holds each generating slot's next token plus prompt chunks of new requests,
// like llama.cpp server's slots.
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/llamacpp"
)

// job is one admitted completion request.
type job struct {
	ctx      context.Context
	prompt   []llamacpp.Token
	req      inference.CompletionRequest
	sampler  *llamacpp.Sampler
	out      *eventQueue
	enqueued time.Time
	// score, when set, makes this a scoring job: no sampling; the logits
	// at the last prompt position are read into score.result and the job
	// ends with a Done event.
	score *scoreJob
	// preserved are special tokens shown as text (req.PreservedTokens).
	preserved map[llamacpp.Token]bool
	// echo, when set, sends the prompt before the first token (echo.go).
	echo *echoJob
}

// scoreFrom is the first prompt token whose log-probability the job reads
// (0 for none): a likelihood job's continuation, or every token after the
// first of an echoed prompt with logprobs.
func (j *job) scoreFrom() int {
	switch {
	case j.score != nil:
		return j.score.from
	case j.echo != nil && j.req.Logprobs:
		return 1
	}
	return 0
}

// freeSampler releases the job's sampler, if it has one.
func (j *job) freeSampler() {
	if j.sampler != nil {
		j.sampler.Free()
	}
}

// slot is one sequence of the shared context.
type slot struct {
	id       int
	cache    []llamacpp.Token // tokens whose KV is in the context for this sequence
	job      *job
	lastUsed time.Time
	order    uint64 // admission number of the job, for reading prompts first come first served

	promptPos int // next prompt token to feed
	pending   llamacpp.Token
	hasTok    bool // pending holds a sampled token not yet decoded
	batchIdx  int  // index in the current batch whose logits belong to this slot, or -1
	fed       int  // prompt tokens of this slot in the current batch
	// scored are the batch positions of a likelihood job's prompt tokens
	// whose logits the current batch computes, each with the index of the
	// prompt token they predict.
	scored    [][2]int
	generated int
	cached    int // prompt tokens reused from the cache
	// promptKV is how many leading cache tokens were decoded as prompt
	// chunks (the rest, if any, were generated one at a time). Only
	// deterministic mode reads it.
	promptKV int
	gate     *inference.TextGate
	// json finds the end of a JSON answer (JSON response formats), nil
	// otherwise.
	json *inference.JSONEnd
	// loop ends generation that repeats itself (finish_reason length).
	loop inference.LoopGuard
}

func (s *slot) active() bool { return s.job != nil }

// Engine owns the llama.cpp context and schedules completions over its slots.
type Engine struct {
	model   *llamacpp.Model
	lctx    *llamacpp.Context
	batch   *llamacpp.Batch
	slots   []*slot
	nBatch  int
	nCtxSeq int
	// isolate decodes each sequence on its own (deterministic mode); one
	// is the slot list of such a decode.
	isolate bool
	one     [1]*slot
	// admitted numbers the jobs in admission order; reading is the prompt
	// readers of the step being built, in that order.
	admitted uint64
	reading  []*slot

	queue chan *job
	// ctrl runs functions on the loop's goroutine while no slot is active
	// (Bench's bare decodes).
	ctrl chan func()
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	active  int
	waiting int
	log     *slog.Logger
}

// EngineConfig configures a generation Engine.
type EngineConfig struct {
	Slots      int // parallel sequences (default 4)
	CtxPerSlot int // KV cells per sequence (default min(4096, trained context))
	Batch      int // most tokens per decode step (default 512)
	Threads    int
	QueueSize  int // most requests waiting for a slot (default 64)
	// Deterministic makes a request's output independent of the other
	// requests running beside it: each sequence has a KV stream of its own
	// and is decoded on its own, its prompt in chunks that start at
	// multiples of Batch, and a cached prefix is reused only in whole such
	// chunks. It costs batched throughput (docs/engine.md).
	Deterministic bool
	// Verbose writes llama.cpp's info log to stderr (default: warnings
	// and errors only).
	Verbose bool
}

// logLevel applies cfg's log verbosity to llama.cpp, before a model loads.
func (cfg EngineConfig) logLevel() {
	if cfg.Verbose {
		llamacpp.LogLevel = 2
	}
}

// NewEngine creates the context for a causal model and starts the
// scheduling loop.
func NewEngine(m *llamacpp.Model, cfg EngineConfig, log *slog.Logger) (*Engine, error) {
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	if cfg.CtxPerSlot <= 0 {
		cfg.CtxPerSlot = 4096
	}
	if t := m.NCtxTrain(); t > 0 && cfg.CtxPerSlot > t {
		cfg.CtxPerSlot = t
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 512
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 64
	}
	lctx, err := llamacpp.NewContext(m, llamacpp.ContextParams{
		NCtx:    cfg.CtxPerSlot * cfg.Slots,
		NBatch:  cfg.Batch,
		NUBatch: cfg.Batch,
		NSeqMax: cfg.Slots,
		Threads: cfg.Threads,
		Pooling: llamacpp.PoolingNone,
		// One KV buffer shared by every sequence (outside deterministic
		// mode, which needs each sequence's cells laid out by its own
		// history alone: see EngineConfig.Deterministic). With a stream per
		// sequence instead, llama.cpp splits each batch into ubatches that
		// take the same number of tokens from each of a run of consecutive
		// sequence ids, so a step holding generated tokens and a new
		// prompt's chunk, or slots 0 and 3, runs as many one-token passes
		// over the weights. Unified, any mix goes through in one pass;
		// attention skips the other sequences' cells by their mask. Each
		// slot is held to CtxPerSlot below, so the slots never outgrow it.
		KVUnified: !cfg.Deterministic,
		// A full SWA cache keeps every position, so a slot's cached prefix
		// can always be reused.
		SWAFull: true,
	})
	if err != nil {
		return nil, err
	}
	threads := cfg.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	// A pool that lives as long as the context, polling for the next
	// decode at llama.cpp's default level (its own server does the same).
	if err := lctx.StartThreadpool(threads, 50); err != nil {
		lctx.Free()
		return nil, err
	}
	e := &Engine{
		model:   m,
		lctx:    lctx,
		batch:   llamacpp.NewBatch(cfg.Batch + cfg.Slots),
		nBatch:  cfg.Batch,
		nCtxSeq: cfg.CtxPerSlot,
		isolate: cfg.Deterministic,
		queue:   make(chan *job, cfg.QueueSize),
		ctrl:    make(chan func()),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		log:     log,
	}
	for i := 0; i < cfg.Slots; i++ {
		e.slots = append(e.slots, &slot{id: i, batchIdx: -1})
	}
	go e.loop()
	return e, nil
}

// Close stops the loop, failing requests still running, and frees the context.
func (e *Engine) Close() {
	close(e.quit)
	<-e.done
	e.batch.Free()
	e.lctx.Free()
}

// CtxPerSlot is the number of tokens one sequence can hold.
func (e *Engine) CtxPerSlot() int { return e.nCtxSeq }

// Stats reports slots in use and requests waiting for one.
func (e *Engine) Stats() (slots, active, waiting int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.slots), e.active, e.waiting + len(e.queue)
}

// ErrQueueFull is returned by Submit when too many requests wait.
var ErrQueueFull = errors.New("runner queue full")

// Submit tokenizes and validates req and queues it. Events arrive on the
// returned queue until an event with Done or Error.
func (e *Engine) Submit(ctx context.Context, req inference.CompletionRequest, prompt []llamacpp.Token) (*eventQueue, error) {
	if len(prompt) == 0 {
		return nil, apierr.Invalid("prompt", "the prompt is empty after tokenization")
	}
	if len(prompt) >= e.nCtxSeq {
		return nil, apierr.Invalid("messages", fmt.Sprintf(
			"the prompt has %d tokens but the model's context per request is %d tokens", len(prompt), e.nCtxSeq))
	}
	if req.MaxInputTokens > 0 && len(prompt) > req.MaxInputTokens {
		return nil, apierr.Invalid("messages", fmt.Sprintf(
			"the prompt has %d tokens but this model accepts at most %d input tokens", len(prompt), req.MaxInputTokens))
	}
	sp := llamacpp.SamplerParams{
		Temperature:      req.Temperature,
		TopK:             req.TopK,
		TopP:             req.TopP,
		MinP:             req.MinP,
		RepeatLastN:      req.RepeatLastN,
		RepeatPenalty:    req.RepeatPenalty,
		FrequencyPenalty: req.FrequencyPenalty,
		PresencePenalty:  req.PresencePenalty,
		Grammar:          req.Grammar,
	}
	for _, t := range req.GrammarTriggers {
		if t.Token != nil {
			sp.TriggerTokens = append(sp.TriggerTokens, llamacpp.Token(*t.Token))
		} else {
			sp.TriggerPatterns = append(sp.TriggerPatterns, t.Pattern)
		}
	}
	if req.Seed != nil {
		sp.Seed = *req.Seed
	} else {
		sp.Seed = uint32(time.Now().UnixNano())
	}
	if len(req.LogitBias) > 0 {
		sp.LogitBias = make(map[llamacpp.Token]float32, len(req.LogitBias))
		nv := e.model.NVocab()
		for t, b := range req.LogitBias {
			if t < 0 || int(t) >= nv {
				return nil, apierr.Invalid("logit_bias", fmt.Sprintf("logit_bias token %d is outside the vocabulary (0..%d)", t, nv-1))
			}
			sp.LogitBias[t] = b
		}
	}
	smp, err := llamacpp.NewSampler(e.model, sp)
	if err != nil {
		return nil, apierr.Invalid("response_format", "the grammar could not be parsed: "+err.Error())
	}
	if req.GrammarPrefill != "" {
		toks, err := e.model.Tokenize(req.GrammarPrefill, false, true)
		if err == nil && len(toks) > 0 && req.GrammarPrefill[0] != ' ' && strings.HasPrefix(string(e.model.Piece(toks[0], true)), " ") {
			toks = toks[1:] // a tokenizer's space before the first special token
		}
		if err == nil {
			err = smp.PrefillGrammar(toks)
		}
		if err != nil {
			smp.Free()
			return nil, apierr.Invalid("tools", "the tool-call grammar does not fit this model's chat template: "+err.Error())
		}
	}
	j := &job{ctx: ctx, prompt: prompt, req: req, sampler: smp, out: newEventQueue(), enqueued: time.Now()}
	if req.Echo {
		j.echo = e.newEcho(req, prompt)
	}
	for _, t := range req.PreservedTokens {
		if j.preserved == nil {
			j.preserved = map[llamacpp.Token]bool{}
		}
		j.preserved[llamacpp.Token(t)] = true
	}
	select {
	case e.queue <- j:
		return j.out, nil
	default:
		smp.Free()
		return nil, ErrQueueFull
	}
}

func (e *Engine) loop() {
	defer close(e.done)
	for {
		if e.countActive() == 0 {
			select {
			case j := <-e.queue:
				e.admit(j)
			case f := <-e.ctrl:
				f()
				continue
			case <-e.quit:
				e.failAll("runner shutting down")
				return
			}
		}
		// Admit waiting requests into free slots.
	admit:
		for e.freeSlot() {
			select {
			case j := <-e.queue:
				e.admit(j)
			default:
				break admit
			}
		}
		select {
		case <-e.quit:
			e.failAll("runner shutting down")
			return
		default:
		}
		e.step()
	}
}

// exclusive runs f on the loop's goroutine with the context and batch
// while no request is being generated, and returns f's error.
func (e *Engine) exclusive(ctx context.Context, f func(*llamacpp.Context, *llamacpp.Batch) error) error {
	errc := make(chan error, 1)
	select {
	case e.ctrl <- func() { errc <- f(e.lctx, e.batch) }:
		return <-errc
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) countActive() int {
	n := 0
	for _, s := range e.slots {
		if s.active() {
			n++
		}
	}
	e.mu.Lock()
	e.active = n
	e.mu.Unlock()
	return n
}

func (e *Engine) freeSlot() bool {
	for _, s := range e.slots {
		if !s.active() {
			return true
		}
	}
	return false
}

// admit places j in the free slot whose cache shares the longest prefix with
// its prompt (least recently used on ties) and drops the rest of that cache.
func (e *Engine) admit(j *job) {
	if j.ctx.Err() != nil {
		j.freeSampler()
		j.out.push(inference.Event{Error: "request cancelled"})
		return
	}
	var best *slot
	bestN := -1
	for _, s := range e.slots {
		if s.active() {
			continue
		}
		n := commonPrefix(s.cache, j.prompt)
		if n > bestN || (n == bestN && s.lastUsed.Before(best.lastUsed)) {
			best, bestN = s, n
		}
	}
	s := best
	n := bestN
	if n >= len(j.prompt) {
		n = len(j.prompt) - 1 // the last prompt token must be decoded for its logits
	}
	if from := j.scoreFrom(); from > 0 && n > from-1 {
		n = from - 1 // a likelihood job needs logits from the token before prompt[from]
	}
	if e.isolate || j.req.Seed != nil {
		// Reuse only whole prompt chunks: the KV of a position depends on
		// the chunk it was decoded in, and a fresh run decodes this prompt
		// in chunks starting at multiples of the batch size. A seeded
		// request keeps to that too, so the same request samples from the
		// same logits whether or not its prompt was cached (OpenAI's seed
		// promise; at temperature 1 a last-bit difference picks another
		// token).
		n = min(n, s.promptKV) / e.nBatch * e.nBatch
	}
	if n < len(s.cache) {
		if !e.lctx.SeqRemove(s.id, n, -1) {
			e.lctx.SeqRemove(s.id, 0, -1)
			n = 0
		}
		s.cache = s.cache[:n]
	}
	s.promptKV = min(s.promptKV, n)
	e.admitted++
	s.order = e.admitted
	s.job = j
	s.promptPos = n
	s.cached = n
	s.hasTok = false
	s.generated = 0
	s.batchIdx = -1
	s.gate = inference.NewTextGate(j.req.Stop)
	s.loop = inference.LoopGuard{}
	s.json = nil
	if j.req.JSONOutput {
		s.json = &inference.JSONEnd{}
	}
	s.gate.TrimLeft = j.req.TrimLeft()
	e.countActive()
}

// step cancels closed requests, builds one batch from every active slot,
// decodes it and samples the next token of each slot whose logits it holds.
func (e *Engine) step() {
	for _, s := range e.slots {
		if s.active() && s.job.ctx.Err() != nil {
			e.finish(s, inference.Event{Error: "request cancelled"})
		}
	}
	if !e.isolate {
		e.decode(e.slots)
		return
	}
	// Deterministic mode: every sequence in a decode of its own, so the
	// arithmetic that produces its tokens is the same whatever else runs;
	// interactive requests reading their prompts go first.
	for _, first := range []bool{true, false} {
		for _, s := range e.slots {
			if s.active() && interactivePrompt(s) == first {
				e.one[0] = s
				e.decode(e.one[:])
			}
		}
	}
}

// interactivePrompt reports whether s is an interactive request still
// reading its prompt: a client waits for its first token.
func interactivePrompt(s *slot) bool {
	return !s.hasTok && s.job.score == nil && s.job.req.Priority == inference.PriorityInteractive
}

// decode builds one batch from slots (the pending token of each generating
// slot, then chunks of prompts still being read, up to the batch size),
// decodes it and samples the next token of each slot whose logits it holds.
func (e *Engine) decode(slots []*slot) {
	e.batch.Clear()
	// While an interactive request reads its prompt, background
	// generations (batch lines) sit the step out: its first token comes
	// as fast as on an idle engine (docs/batch.md).
	hold := false
	for _, s := range slots {
		hold = hold || s.active() && interactivePrompt(s)
	}
	for _, s := range slots {
		s.batchIdx = -1
		s.fed = 0
		s.scored = s.scored[:0]
		if s.active() && s.hasTok && !(hold && s.job.req.Priority == inference.PriorityBackground) {
			s.batchIdx = e.batch.Add(s.pending, len(s.cache), s.id, true)
		}
	}
	// Prompts are read first come first served, and a step ends its prompt
	// reading once it has finished one generation prompt: when eight short
	// prompts arrive together, the first gets its first token after its own
	// prompt rather than after all eight, and slots already generating go on
	// in the same steps. Each extra step costs one more pass over the
	// weights, which measured no loss in aggregate throughput (docs/engine.md).
	// Scoring prompts (reranking) have no first token to wait for and share
	// steps as the budget allows.
	e.reading = e.reading[:0]
	for _, s := range slots {
		if s.active() && !s.hasTok {
			e.reading = append(e.reading, s)
		}
	}
	// Interactive prompts are read before background ones (batch lines),
	// then first come first served.
	slices.SortFunc(e.reading, func(a, b *slot) int {
		if c := cmp.Compare(a.job.req.Priority, b.job.req.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	budget := e.nBatch - e.batch.Len()
	finished := false // a generation prompt is finished in this step
	for _, s := range e.reading {
		if budget <= 0 {
			break
		}
		if finished && s.job.score == nil {
			continue
		}
		rest := len(s.job.prompt) - s.promptPos
		k := min(rest, budget)
		from := s.job.scoreFrom()
		for i := 0; i < k; i++ {
			p := s.promptPos + i
			last := p == len(s.job.prompt)-1
			scored := from > 0 && p+1 >= from && !last
			idx := e.batch.Add(s.job.prompt[p], p, s.id, last || scored)
			if last {
				s.batchIdx = idx
			}
			if scored {
				s.scored = append(s.scored, [2]int{idx, p + 1})
			}
		}
		s.fed = k
		budget -= k
		if k == rest && s.job.score == nil {
			finished = true
		}
	}
	if e.batch.Len() == 0 {
		return
	}
	if err := e.lctx.Decode(e.batch); err != nil {
		e.log.Error("decode failed", "err", err, "batch", e.batch.Len())
		for _, s := range slots {
			if s.active() {
				e.lctx.SeqRemove(s.id, 0, -1)
				s.cache = s.cache[:0]
				s.promptKV = 0
				e.finish(s, inference.Event{Error: "decode failed: " + err.Error()})
			}
		}
		return
	}
	// Record what is now in the KV cache, and the log-probabilities a
	// likelihood job asked for.
	for _, s := range slots {
		if !s.active() {
			continue
		}
		for _, sc := range s.scored {
			if s.job.echo != nil {
				e.echoLogprob(s.job, sc[0], sc[1])
				continue
			}
			lp, _ := e.lctx.Logprobs(sc[0], s.job.prompt[sc[1]], 0)
			s.job.score.sum += float64(lp)
			s.job.score.n++
		}
		s.scored = s.scored[:0]
		if s.hasTok {
			if s.batchIdx < 0 {
				continue // held back this step: its token is still pending
			}
			s.cache = append(s.cache, s.pending)
			s.hasTok = false
			continue
		}
		if s.fed > 0 {
			s.cache = append(s.cache, s.job.prompt[s.promptPos:s.promptPos+s.fed]...)
			s.promptPos += s.fed
			s.promptKV = s.promptPos
			s.fed = 0
		}
	}
	for _, s := range slots {
		if s.active() && s.batchIdx >= 0 {
			e.sample(s)
		}
	}
}

func (e *Engine) sample(s *slot) {
	j := s.job
	if j.score != nil {
		e.scoreSlot(s)
		return
	}
	if j.echo != nil {
		// The prompt read, it goes out before the first token.
		j.out.push(j.echo.event())
		j.echo = nil
		if j.req.PromptOnly {
			e.finish(s, inference.Event{Done: true, FinishReason: inference.FinishLength})
			return
		}
	}
	tok, err := j.sampler.Sample(e.lctx, s.batchIdx)
	if err != nil {
		e.finish(s, inference.Event{Error: err.Error()})
		return
	}
	s.generated++
	var tl *inference.TokenLogprob
	if j.req.Logprobs {
		lp, top := e.lctx.Logprobs(s.batchIdx, tok, j.req.TopLogprobs)
		// A preserved marker (<tool_call>) is listed as the text it is
		// sent as, so the tokens still join into the output.
		t := e.tokenLogprob(tok, lp, j.preserved[tok])
		for _, a := range top {
			t.Top = append(t.Top, e.tokenLogprob(a.Token, a.Logprob, j.preserved[a.Token]))
		}
		tl = &t
	}
	if e.model.IsEOG(tok) {
		// The end token is not part of the answer, but it is a completion
		// token (usage counts it), so it keeps its logprob entry, with no
		// text: one entry per completion token.
		text, lps := s.gate.FlushLogprobs()
		if tl != nil {
			lps = append(lps, inference.Unsent(*tl))
		}
		e.finish(s, inference.Event{Text: text, Logprobs: lps, Done: true, FinishReason: inference.FinishStop})
		return
	}
	piece := e.model.Piece(tok, j.preserved[tok])
	jsonDone := false
	if s.json != nil {
		var n int
		n, jsonDone = s.json.Feed(piece)
		piece = piece[:n]
		if tl != nil && n < len(tl.Bytes) {
			// The token runs past the JSON value: it keeps the part sent.
			tl.Bytes = tl.Bytes[:n:n]
			tl.Token = string(tl.Bytes)
		}
	}
	// The gate releases each token's logprob with the token's text, so the
	// logprobs sent join into the content sent (a leading space trimmed or
	// a stop sequence held back and cut leaves neither in either).
	text, lps, stopped := s.gate.PushLogprob(piece, tl)
	if stopped || jsonDone {
		if !stopped {
			rest, more := s.gate.FlushLogprobs()
			text, lps = text+rest, append(lps, more...)
		}
		e.finish(s, inference.Event{Text: text, Logprobs: lps, Done: true, FinishReason: inference.FinishStop})
		return
	}
	// A loop ends as the token limit would have ended it, long before.
	looping := s.loop.Push(int32(tok))
	if looping || (j.req.MaxTokens > 0 && s.generated >= j.req.MaxTokens) || len(s.cache)+1 >= e.nCtxSeq {
		rest, more := s.gate.FlushLogprobs()
		e.finish(s, inference.Event{Text: text + rest, Logprobs: append(lps, more...), Done: true, FinishReason: inference.FinishLength})
		return
	}
	if text != "" || lps != nil {
		j.out.push(inference.Event{Text: text, Logprobs: lps})
	}
	s.pending = tok
	s.hasTok = true
}

func (e *Engine) tokenLogprob(tok llamacpp.Token, lp float32, special bool) inference.TokenLogprob {
	b := e.model.Piece(tok, special)
	return inference.TokenLogprob{ID: tok, Token: string(b), Bytes: b, Logprob: lp}
}

// finish ends the slot's job with ev (a Done event gets usage) and frees the
// slot; the slot's KV cache stays for prefix reuse.
func (e *Engine) finish(s *slot, ev inference.Event) {
	j := s.job
	if ev.Done {
		ev.Usage = &inference.Usage{PromptTokens: len(j.prompt), CompletionTokens: s.generated, CachedTokens: s.cached}
	}
	j.out.push(ev)
	j.freeSampler()
	s.job = nil
	s.hasTok = false
	s.batchIdx = -1
	s.lastUsed = time.Now()
	// A partly fed prompt leaves a cache that matches the prompt prefix,
	// which is still valid to reuse.
}

func (e *Engine) failAll(msg string) {
	for _, s := range e.slots {
		if s.active() {
			e.finish(s, inference.Event{Error: msg})
		}
	}
	for {
		select {
		case j := <-e.queue:
			j.freeSampler()
			j.out.push(inference.Event{Error: msg})
		default:
			return
		}
	}
}

func commonPrefix(a, b []llamacpp.Token) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
