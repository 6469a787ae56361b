// Command engine is Sovereign's engine benchmark: a load generator for any
// OpenAI-compatible server, and a compare step that puts two of its result
// files side by side against the acceptance targets.
//
// Bench mode (the default) measures one server:
//
//	go run ./bench/engine -base-url http://127.0.0.1:8080 -model gemma3-270m \
//	    -label sovereign -json-out sovereign.json
//
// Compare mode prints the final table: each server's median over rounds,
// ours/peer ratios with their spread over rounds, and PASS/FAIL against the
// targets (compare.go):
//
//	go run ./bench/engine -compare -ours s1.json,s2.json \
//	    -peer llama-server=l1.json,l2.json [-peer NAME=…] [-extra NAME=x.json]
//
// Every request is a streamed (SSE) completion at temperature 0 whose prompt
// starts with a random nonce, so no prefix cache can help either server.
// bench/README.md explains each number.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

const (
	// maxCachedTokens is how many cached prompt tokens a nonce-prefixed
	// prompt may share with an earlier one: BOS, a chat template's opening
	// tokens (with -endpoint chat) and perhaps the nonce's first token.
	maxCachedTokens = 8
)

type config struct {
	baseURL      string
	model        string
	apiKey       string
	label        string
	jsonOut      string
	endpoint     string
	banTokens    []int
	banBias      int
	promptWords  int
	promptRuns   int
	singleRuns   int
	rounds       int
	decodeTokens int
	streams      []int
	threads      int
	timeout      time.Duration
}

func main() {
	var (
		cfg        config
		compare    bool
		ours       string
		peers      namedFiles
		extras     namedFiles
		banFlag    string
		streamFlag string
		t          = defaultTargets
	)
	flag.StringVar(&cfg.baseURL, "base-url", "http://127.0.0.1:8080", "server base URL (the part before /v1/...)")
	flag.StringVar(&cfg.model, "model", "gemma3-270m", "model id sent in every request")
	flag.StringVar(&cfg.apiKey, "api-key", "", "bearer token sent as Authorization (empty: none)")
	flag.StringVar(&cfg.label, "label", "server", "name of this server in tables and JSON")
	flag.StringVar(&cfg.jsonOut, "json-out", "", "write the results as JSON to this file")
	flag.StringVar(&cfg.endpoint, "endpoint", "completions", "API used: completions (/v1/completions, raw prompt) or chat (/v1/chat/completions)")
	flag.StringVar(&banFlag, "ban-tokens", "1,106", "comma-separated token ids given logit_bias -100 so generations run to max_tokens (Gemma 3: <eos>=1, <end_of_turn>=106); empty: none")
	flag.IntVar(&cfg.banBias, "ban-bias", -100, "logit_bias value given to -ban-tokens (-100 is OpenAI's \"ban\")")
	flag.IntVar(&cfg.promptWords, "prompt-words", 380, "words of filler in the long prompt (380 words is about 500 Gemma 3 tokens)")
	flag.IntVar(&cfg.promptRuns, "prompt-runs", 5, "long-prompt requests measured for prompt tok/s")
	flag.IntVar(&cfg.singleRuns, "single-runs", 5, "sequential requests measured for single-stream decode tok/s")
	flag.IntVar(&cfg.rounds, "rounds", 2, "rounds measured at each concurrency level")
	flag.IntVar(&cfg.decodeTokens, "decode-tokens", 128, "max_tokens of the decode and aggregate requests")
	flag.StringVar(&streamFlag, "streams", "1,4,8", "comma-separated concurrency levels for aggregate decode")
	flag.IntVar(&cfg.threads, "threads", 0, "thread count the server was started with (recorded only)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "limit for one request")
	flag.BoolVar(&compare, "compare", false, "compare mode: print the table for -ours against -peer (and -extra) result files")
	flag.StringVar(&ours, "ours", "", "compare: our result files, one per round, comma-separated")
	flag.Var(&peers, "peer", "compare: NAME=FILE[,FILE…], a peer's result files (repeatable; the first is the one the targets use)")
	flag.Var(&extras, "extra", "compare: NAME=FILE[,FILE…], more of our runs shown beside the others without targets (repeatable)")
	flag.Float64Var(&t.single, "target-single", t.single, "compare: minimum single-stream decode ratio ours/peer")
	flag.Float64Var(&t.aggPeer, "target-agg-peer", t.aggPeer, "compare: minimum aggregate decode ratio ours/peer at 8 streams")
	flag.Float64Var(&t.aggSelf, "target-agg-self", t.aggSelf, "compare: minimum aggregate decode at 8 streams over our own single-stream decode")
	flag.Float64Var(&t.prompt, "target-prompt", t.prompt, "compare: minimum prompt tok/s ratio ours/peer")
	flag.Float64Var(&t.ttft, "target-ttft", t.ttft, "compare: most TTFT p50 at 8 streams, ours/peer")
	flag.Parse()

	if compare {
		ok, err := runCompare(os.Stdout, ours, peers, extras, t)
		if err != nil {
			fatalf("%v", err)
		}
		if !ok {
			os.Exit(1)
		}
		return
	}

	var err error
	if cfg.banTokens, err = parseInts(banFlag); err != nil {
		fatalf("-ban-tokens: %v", err)
	}
	if cfg.streams, err = parseInts(streamFlag); err != nil || len(cfg.streams) == 0 {
		fatalf("-streams: want a list like 1,4,8")
	}
	if cfg.endpoint != "completions" && cfg.endpoint != "chat" {
		fatalf("-endpoint must be completions or chat")
	}
	if cfg.promptRuns < 1 || cfg.singleRuns < 1 || cfg.rounds < 1 || cfg.decodeTokens < 2 {
		fatalf("-prompt-runs, -single-runs and -rounds must be >= 1, -decode-tokens >= 2")
	}
	cfg.baseURL = strings.TrimRight(cfg.baseURL, "/")

	rep, err := runBench(context.Background(), cfg)
	if err != nil {
		fatalf("%s: %v", cfg.label, err)
	}
	printReport(os.Stdout, rep)
	if cfg.jsonOut != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fatalf("%v", err)
		}
		if err := os.WriteFile(cfg.jsonOut, append(data, '\n'), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench/engine: "+format+"\n", args...)
	os.Exit(2)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Results

// Report is what one bench run writes with -json-out.
type Report struct {
	Label         string       `json:"label"`
	BaseURL       string       `json:"base_url"`
	Model         string       `json:"model"`
	Endpoint      string       `json:"endpoint"`
	Threads       int          `json:"threads,omitempty"`
	StartedAt     time.Time    `json:"started_at"`
	DurationS     float64      `json:"duration_s"`
	Host          Host         `json:"host"`
	Settings      Settings     `json:"settings"`
	UsageReported bool         `json:"usage_reported"`
	Prompt        PromptResult `json:"prompt"`
	Single        SingleResult `json:"single_stream"`
	Aggregate     []AggResult  `json:"aggregate"`
	TTFT          TTFTSummary  `json:"ttft"`
	Warnings      []string     `json:"warnings,omitempty"`

	mu       sync.Mutex // guards Warnings and warnOnce
	warnOnce map[string]bool
}

// Host describes the machine the client ran on (the servers run on it too:
// the benchmark is loopback only).
type Host struct {
	CPU       string `json:"cpu"`
	NumCPU    int    `json:"num_cpu"`
	LoadAvg   string `json:"loadavg_at_start"`
	GoVersion string `json:"go_version"`
}

// Settings echoes the knobs the run used.
type Settings struct {
	PromptWords  int   `json:"prompt_words"`
	DecodeTokens int   `json:"decode_tokens"`
	BanTokens    []int `json:"ban_tokens"`
	BanBias      int   `json:"ban_bias"`
	PromptRuns   int   `json:"prompt_runs"`
	SingleRuns   int   `json:"single_runs"`
	Rounds       int   `json:"rounds"`
	Streams      []int `json:"streams"`
}

// PromptResult is the prompt-processing (prefill) measurement.
type PromptResult struct {
	Runs         []PromptRun `json:"runs"`
	PromptTokens int         `json:"prompt_tokens"` // median over runs
	TTFTMs       float64     `json:"ttft_ms"`       // median over runs
	TokS         float64     `json:"tok_s"`         // median over runs
}

// PromptRun is one long-prompt request with max_tokens 1.
type PromptRun struct {
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"` // as reported by the server (0 if not)
	TTFTMs       float64 `json:"ttft_ms"`
	TokS         float64 `json:"tok_s"`
}

// SingleResult is the single-stream decode measurement.
type SingleResult struct {
	Runs []SingleRun `json:"runs"`
	TokS float64     `json:"tok_s"` // median over runs
}

// SingleRun is one sequential request with max_tokens -decode-tokens.
type SingleRun struct {
	PromptTokens     int     `json:"prompt_tokens"` // -1 if the server sent no usage
	CompletionTokens int     `json:"completion_tokens"`
	TTFTMs           float64 `json:"ttft_ms"`
	DecodeMs         float64 `json:"decode_ms"` // first to last token
	TokS             float64 `json:"tok_s"`     // (tokens-1) / decode time
}

// AggResult is the aggregate decode measurement at one concurrency level.
type AggResult struct {
	Streams   int        `json:"streams"`
	Rounds    []AggRound `json:"rounds"`
	TokS      float64    `json:"tok_s"` // median over rounds
	TTFTP50Ms float64    `json:"ttft_p50_ms"`
	TTFTMaxMs float64    `json:"ttft_max_ms"`
}

// AggRound is one batch of concurrent requests started together.
type AggRound struct {
	WallS            float64   `json:"wall_s"`
	CompletionTokens int       `json:"completion_tokens"`
	TokS             float64   `json:"tok_s"` // completion tokens / wall
	TTFTMs           []float64 `json:"ttft_ms"`
}

// TTFTSummary summarises time to first token over a documented request set.
type TTFTSummary struct {
	Set   string  `json:"set"`
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

func (r *Report) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warnOnce == nil {
		r.warnOnce = map[string]bool{}
	}
	if !r.warnOnce[msg] {
		r.warnOnce[msg] = true
		r.Warnings = append(r.Warnings, msg)
	}
}

// ---------------------------------------------------------------------------
// Prompts

// filler is original prose cycled to build the long prompt. Its content does
// not matter for speed; it only has to be ordinary text.
var filler = []string{
	"The harbour town wakes before dawn, when the fishing boats slip out past the breakwater and the gulls follow them in wide, noisy circles.",
	"By seven the bakery on the corner has its shutters up, and the smell of bread drifts down to the quay where the nets are mended.",
	"The old lighthouse no longer guides ships, but the town keeps its lamp lit every night because nobody can agree on switching it off.",
	"In the school on the hill the children learn to read tide tables before they learn long division, and most of them can tie six knots.",
	"Every spring a storm floods the lower streets, and every summer the council promises a new sea wall that never quite gets built.",
	"The market sells mackerel, crab, samphire, apples from the inland farms, and a sharp white cheese that visitors either love or avoid.",
	"On Sundays a brass band plays on the bandstand, slightly out of tune, to an audience of retired sailors and patient dogs.",
	"The railway reached the town a century ago, and the station still has its iron clock, its wooden benches and a cat called Signal.",
	"Winter evenings are long and dark, so the library runs a reading club, a chess club and a surprisingly competitive quiz league.",
	"When the herring stopped coming the town turned to tourism, renting cottages, running boat trips and selling paintings of the bay.",
	"The harbour master keeps a ledger of every vessel that has moored there since 1892, written in a dozen different hands.",
	"At night the only sounds are the halyards tapping against the masts and the slow, steady breathing of the sea against the stones.",
}

func nonce() string { return fmt.Sprintf("%08x", rand.Uint32()) }

// longPrompt is the prefill workload: a unique nonce first, then about
// words words of filler.
func longPrompt(words int) string {
	var b strings.Builder
	b.WriteString(nonce())
	b.WriteString(": read these notes about a harbour town, then summarise them.\n\n")
	n := 0
	for i := 0; n < words; i++ {
		s := filler[i%len(filler)]
		b.WriteString(s)
		b.WriteString(" ")
		n += len(strings.Fields(s))
	}
	b.WriteString("\n\nSummary:")
	return b.String()
}

// shortPrompt is the decode workload: a unique nonce first, then a request
// for a long answer.
func shortPrompt() string {
	return nonce() + ": Write a long, detailed story about a lighthouse keeper in a small harbour town, " +
		"describing the town, its people and a winter storm in as much detail as you can.\n\n"
}

// ---------------------------------------------------------------------------
// Streaming client

type requestResult struct {
	start            time.Time
	first, last, end time.Time
	promptTokens     int // -1 when the server sent no usage
	cachedTokens     int // usage.prompt_tokens_details.cached_tokens, when sent
	completionTokens int
	chunks           int
	usage            bool
	finish           string
}

func (r requestResult) ttft() time.Duration { return r.first.Sub(r.start) }

type client struct {
	cfg  config
	http *http.Client
}

func newClient(cfg config) *client {
	tr := &http.Transport{
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &client{cfg: cfg, http: &http.Client{Transport: tr}}
}

type streamChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// newRequest builds one completion request; streamed requests ask for a
// usage chunk.
func (c *client) newRequest(ctx context.Context, prompt string, maxTokens int, stream bool) (*http.Request, error) {
	body := map[string]any{
		"model":       c.cfg.model,
		"max_tokens":  maxTokens,
		"temperature": 0,
		"stream":      stream,
	}
	if stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	path := "/v1/completions"
	if c.cfg.endpoint == "chat" {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	if len(c.cfg.banTokens) > 0 {
		bias := map[string]int{}
		for _, t := range c.cfg.banTokens {
			bias[strconv.Itoa(t)] = c.cfg.banBias
		}
		body["logit_bias"] = bias
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.baseURL+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	// A key makes Go's transport send the request again when the server
	// closed the idle keep-alive connection it was written to (llama-server
	// does close idle connections; a POST is otherwise not replayed and
	// fails with EOF). The OpenAI SDKs send the same header.
	req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%016x", rand.Uint64()))
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.cfg.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.apiKey)
	}
	return req, nil
}

func checkStatus(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return fmt.Errorf("POST %s: %s: %s", resp.Request.URL.Path, resp.Status, strings.TrimSpace(string(msg)))
}

// countPromptTokens asks for the prompt's token count with a non-streamed
// request (whose response always carries usage). It is only used, after the
// timed request, for servers that send no usage chunk when streaming.
func (c *client) countPromptTokens(ctx context.Context, prompt string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, prompt, 1, false)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := checkStatus(resp); err != nil {
		return 0, err
	}
	var out struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	if out.Usage.PromptTokens <= 0 {
		return 0, errors.New("non-streamed response has no usage.prompt_tokens")
	}
	return out.Usage.PromptTokens, nil
}

// stream sends one streamed request and times its tokens.
func (c *client) stream(ctx context.Context, prompt string, maxTokens int) (requestResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, prompt, maxTokens, true)
	if err != nil {
		return requestResult{}, err
	}

	res := requestResult{promptTokens: -1}
	res.start = time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if err := checkStatus(resp); err != nil {
		return res, err
	}

	// SSE: "data:" lines accumulate into one event, a blank line ends it.
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	var event []byte
	var eventAt time.Time
	done := false
	dispatch := func() error {
		if len(event) == 0 {
			return nil
		}
		payload := bytes.TrimSpace(event)
		event = event[:0]
		if string(payload) == "[DONE]" {
			done = true
			return nil
		}
		var ch streamChunk
		if err := json.Unmarshal(payload, &ch); err != nil {
			return fmt.Errorf("bad SSE payload %.200q: %v", payload, err)
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return fmt.Errorf("server error in stream: %s", ch.Error)
		}
		for _, choice := range ch.Choices {
			if choice.Text != "" || choice.Delta.Content != "" {
				res.chunks++
				if res.first.IsZero() {
					res.first = eventAt
				}
				res.last = eventAt
			}
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				res.finish = *choice.FinishReason
			}
		}
		if u := ch.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
			res.usage = true
			res.promptTokens = u.PromptTokens
			res.completionTokens = u.CompletionTokens
			if u.PromptTokensDetails != nil {
				res.cachedTokens = u.PromptTokensDetails.CachedTokens
			}
		}
		return nil
	}
	for !done {
		line, err := rd.ReadBytes('\n')
		now := time.Now()
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if derr := dispatch(); derr != nil {
				return res, derr
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(event) == 0 {
				eventAt = now
			} else {
				event = append(event, '\n')
			}
			event = append(event, line[len("data:"):]...)
		}
		if err != nil {
			if derr := dispatch(); derr != nil {
				return res, derr
			}
			if errors.Is(err, io.EOF) {
				break
			}
			return res, err
		}
	}
	res.end = time.Now()
	if res.first.IsZero() {
		return res, fmt.Errorf("stream ended without any generated text (finish_reason %q)", res.finish)
	}
	if !res.usage {
		// No usage chunk: a "length" finish means exactly max_tokens were
		// generated; otherwise count content chunks (one token each on
		// servers that stream token by token).
		res.completionTokens = res.chunks
		if res.finish == "length" {
			res.completionTokens = maxTokens
		}
	}
	return res, nil
}

// ---------------------------------------------------------------------------
// Bench

func runBench(ctx context.Context, cfg config) (*Report, error) {
	c := newClient(cfg)
	rep := &Report{
		Label:     cfg.label,
		BaseURL:   cfg.baseURL,
		Model:     cfg.model,
		Endpoint:  cfg.endpoint,
		Threads:   cfg.threads,
		StartedAt: time.Now().UTC().Truncate(time.Second),
		Host:      hostInfo(),
		Settings: Settings{
			PromptWords:  cfg.promptWords,
			DecodeTokens: cfg.decodeTokens,
			BanTokens:    cfg.banTokens,
			BanBias:      cfg.banBias,
			PromptRuns:   cfg.promptRuns,
			SingleRuns:   cfg.singleRuns,
			Rounds:       cfg.rounds,
			Streams:      cfg.streams,
		},
	}
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%s %5.1fs] %s\n", cfg.label, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	// Warm-up: one long prefill and one short decode, both discarded.
	logf("warm-up")
	if _, err := c.stream(ctx, longPrompt(cfg.promptWords), 1); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	w, err := c.stream(ctx, shortPrompt(), 16)
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	rep.UsageReported = w.usage
	if !w.usage {
		rep.warn("server sent no usage chunk (stream_options.include_usage): completion tokens = max_tokens when finish_reason is length, else content chunks; prompt tokens from a non-streamed re-request of the same prompt after timing")
	}

	// Prompt processing: time to first token of a long unique prompt.
	for i := 0; i < cfg.promptRuns; i++ {
		prompt := longPrompt(cfg.promptWords)
		r, err := c.stream(ctx, prompt, 1)
		if err != nil {
			return nil, fmt.Errorf("prompt run %d: %w", i+1, err)
		}
		if r.promptTokens < 0 {
			if r.promptTokens, err = c.countPromptTokens(ctx, prompt); err != nil {
				return nil, fmt.Errorf("prompt run %d: counting prompt tokens: %w", i+1, err)
			}
		}
		run := PromptRun{PromptTokens: r.promptTokens, CachedTokens: r.cachedTokens, TTFTMs: ms(r.ttft())}
		if r.cachedTokens > maxCachedTokens {
			rep.warn("the server reported %d cached prompt tokens on a nonce-prefixed prompt: a prefix cache helped, prompt tok/s is inflated", r.cachedTokens)
		}
		if r.promptTokens > 0 {
			run.TokS = float64(r.promptTokens) / r.ttft().Seconds()
		}
		rep.Prompt.Runs = append(rep.Prompt.Runs, run)
		logf("prompt %d/%d: %d tokens, ttft %.0f ms, %.1f tok/s", i+1, cfg.promptRuns, run.PromptTokens, run.TTFTMs, run.TokS)
	}
	rep.Prompt.PromptTokens = int(median(pluck(rep.Prompt.Runs, func(r PromptRun) float64 { return float64(r.PromptTokens) })))
	rep.Prompt.TTFTMs = median(pluck(rep.Prompt.Runs, func(r PromptRun) float64 { return r.TTFTMs }))
	rep.Prompt.TokS = median(pluck(rep.Prompt.Runs, func(r PromptRun) float64 { return r.TokS }))

	// Single-stream decode: sequential requests, rate between first and last token.
	for i := 0; i < cfg.singleRuns; i++ {
		r, err := c.stream(ctx, shortPrompt(), cfg.decodeTokens)
		if err != nil {
			return nil, fmt.Errorf("single-stream run %d: %w", i+1, err)
		}
		checkLength(rep, r, cfg.decodeTokens)
		run := SingleRun{PromptTokens: r.promptTokens, CompletionTokens: r.completionTokens, TTFTMs: ms(r.ttft()), DecodeMs: ms(r.last.Sub(r.first))}
		if d := r.last.Sub(r.first).Seconds(); d > 0 && r.completionTokens > 1 {
			run.TokS = float64(r.completionTokens-1) / d
		}
		rep.Single.Runs = append(rep.Single.Runs, run)
		logf("single %d/%d: %d tokens, %.1f tok/s", i+1, cfg.singleRuns, run.CompletionTokens, run.TokS)
	}
	rep.Single.TokS = median(pluck(rep.Single.Runs, func(r SingleRun) float64 { return r.TokS }))

	// Aggregate decode: N streams started together, tokens / wall time.
	var allTTFT []float64
	for _, n := range cfg.streams {
		agg := AggResult{Streams: n}
		var levelTTFT []float64
		for round := 0; round < cfg.rounds; round++ {
			results := make([]requestResult, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-gate
					results[i], errs[i] = c.stream(ctx, shortPrompt(), cfg.decodeTokens)
				}(i)
			}
			close(gate)
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return nil, fmt.Errorf("aggregate %d streams: %w", n, err)
			}
			var start, end time.Time
			ar := AggRound{}
			for i, r := range results {
				checkLength(rep, r, cfg.decodeTokens)
				if i == 0 || r.start.Before(start) {
					start = r.start
				}
				if r.end.After(end) {
					end = r.end
				}
				ar.CompletionTokens += r.completionTokens
				ar.TTFTMs = append(ar.TTFTMs, ms(r.ttft()))
			}
			ar.WallS = end.Sub(start).Seconds()
			ar.TokS = float64(ar.CompletionTokens) / ar.WallS
			agg.Rounds = append(agg.Rounds, ar)
			levelTTFT = append(levelTTFT, ar.TTFTMs...)
			logf("aggregate %d streams, round %d/%d: %d tokens in %.2fs = %.1f tok/s", n, round+1, cfg.rounds, ar.CompletionTokens, ar.WallS, ar.TokS)
		}
		agg.TokS = median(pluck(agg.Rounds, func(r AggRound) float64 { return r.TokS }))
		agg.TTFTP50Ms = percentile(levelTTFT, 50)
		agg.TTFTMaxMs = percentile(levelTTFT, 100)
		rep.Aggregate = append(rep.Aggregate, agg)
		allTTFT = append(allTTFT, levelTTFT...)
	}
	rep.TTFT = TTFTSummary{
		Set:   fmt.Sprintf("every request of the aggregate phase (streams %s x %d rounds)", joinInts(cfg.streams), cfg.rounds),
		N:     len(allTTFT),
		P50Ms: percentile(allTTFT, 50),
		P99Ms: percentile(allTTFT, 99),
	}
	rep.DurationS = time.Since(began).Seconds()
	return rep, nil
}

func checkLength(rep *Report, r requestResult, want int) {
	if r.finish == "" {
		rep.warn("a stream ended without a finish_reason after %d tokens: the server cut it short (llama-cpp-python does this unless started with --interrupt_requests False); aggregate numbers are not valid", r.completionTokens)
		return
	}
	if r.completionTokens < want {
		rep.warn("a request stopped after %d of %d tokens (finish_reason %q): the end-token ban was not honoured; decode numbers are per token but batches are shorter", r.completionTokens, want, r.finish)
	}
}

func hostInfo() Host {
	h := Host{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(data))
		if len(f) >= 3 {
			h.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return h
}

// ---------------------------------------------------------------------------
// Statistics

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pluck[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile uses the nearest-rank method: the smallest sample with at least
// p% of the samples at or below it.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

// ---------------------------------------------------------------------------
// Output

func printReport(w io.Writer, r *Report) {
	fmt.Fprintf(w, "\n== %s  (%s, /v1/%s, model %s, threads %d) ==\n", r.Label, r.BaseURL, endpointPath(r.Endpoint), r.Model, r.Threads)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "prompt tok/s\t%.1f\t(%d-token prompt, median of %d, range %s, TTFT %.0f ms)\n", r.Prompt.TokS, r.Prompt.PromptTokens,
		len(r.Prompt.Runs), spread(pluck(r.Prompt.Runs, func(x PromptRun) float64 { return x.TokS })), r.Prompt.TTFTMs)
	fmt.Fprintf(tw, "single-stream decode tok/s\t%.1f\t(%d tokens, median of %d, range %s)\n", r.Single.TokS, r.Settings.DecodeTokens,
		len(r.Single.Runs), spread(pluck(r.Single.Runs, func(x SingleRun) float64 { return x.TokS })))
	for _, a := range r.Aggregate {
		fmt.Fprintf(tw, "aggregate decode tok/s @%d\t%.1f\t(median of %d rounds, range %s, TTFT p50 %.0f ms, max %.0f ms)\n", a.Streams, a.TokS,
			len(a.Rounds), spread(pluck(a.Rounds, func(x AggRound) float64 { return x.TokS })), a.TTFTP50Ms, a.TTFTMaxMs)
	}
	fmt.Fprintf(tw, "TTFT p50 / p99 ms\t%.0f / %.0f\t(n=%d: %s)\n", r.TTFT.P50Ms, r.TTFT.P99Ms, r.TTFT.N, r.TTFT.Set)
	tw.Flush()
	for _, msg := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", msg)
	}
}

// spread formats the smallest and largest of xs.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f-%.1f", slices.Min(xs), slices.Max(xs))
}

func endpointPath(e string) string {
	if e == "chat" {
		return "chat/completions"
	}
	return "completions"
}
