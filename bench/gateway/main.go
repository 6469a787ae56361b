// Command gateway is Sovereign's gateway-overhead benchmark: an open-model
// load generator that measures, in one run, the latency that each gateway
// adds in front of the same fast mock upstream (bench/gateway/mockupstream).
//
//	go run ./bench/gateway -targets direct,sovereign,sovereign-governed,litellm,portkey \
//	    -mock-url http://127.0.0.1:18190 -sovereign-url http://127.0.0.1:18191 \
//	    -sovereign-key sk-sov-... -sovereign-gov-url http://127.0.0.1:18194 \
//	    -sovereign-gov-key sk-sov-... -litellm-url http://127.0.0.1:18192 \
//	    -litellm-key sk-... -portkey-url http://127.0.0.1:18193
//
// bench/gateway/run.sh starts the mock and the gateways and runs it.
// sovereign-governed is a second Sovereign server with its governance set up
// (limit rules in Redis and three input policies; run.sh does it): its
// latency minus the plain Sovereign's is the cost of governance. Each
// target is measured in turn, non-streamed and streamed, with
// POST /v1/chat/completions:
//
//   - concurrency 1: sequential requests after a warm-up, latency p50/p99;
//   - fixed arrival rates (default 500, 1000, 2000 RPS): request i is
//     scheduled at start+i/rate and sent in its own goroutine whether or not
//     earlier ones have finished, and its latency runs from that scheduled
//     time, so a server that falls behind cannot hide the queue (no
//     coordinated omission);
//   - a ladder of rates, climbed until the p99 added latency reaches 5 ms,
//     for the highest rate each target holds.
//
// A streamed request's latency ends when "data: [DONE]" is read; its time to
// first byte is when the first "data:" line arrives. Added latency is a
// gateway's figure minus the direct path's at the same percentile and load;
// the direct path is measured again after the gateways, and the mean of its
// two measurements is the baseline at c=1 and the fixed rates.
// The results are a Markdown table (stdout and -md-out), JSON (-json-out),
// ratios against Sovereign and PASS/FAIL lines; the exit status is 1 on FAIL.
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
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const chatPath = "/v1/chat/completions"

// Names of the targets this benchmark knows.
const (
	direct    = "direct"
	sovereign = "sovereign"
	// sovereignGov is a second Sovereign server with its governance on:
	// rate limits and quotas in Redis and input policies (run.sh sets them
	// up), measured against the plain one for the cost of governance.
	sovereignGov = "sovereign-governed"
	litellm      = "litellm"
	portkey      = "portkey"
)

var displayName = map[string]string{direct: "direct", sovereign: "Sovereign", sovereignGov: "Sovereign (governed)", litellm: "LiteLLM", portkey: "Portkey"}

// knownTargets is the list -targets is checked against, for messages.
const knownTargets = "direct, sovereign, sovereign-governed, litellm, portkey"

type config struct {
	targets        []string
	modes          []string
	mockURL        string
	sovURL         string
	sovKey         string
	govURL         string
	govKey         string
	govConfig      string
	redisPID       int
	liteURL        string
	liteKey        string
	portkeyURL     string
	model          string
	c1Requests     int
	c1Warmup       int
	c1MaxTime      time.Duration
	rates          []int
	rateDur        time.Duration
	rateWarm       time.Duration
	ladder         []int
	ladderDur      time.Duration
	ladderWarm     time.Duration
	addedBudget    time.Duration
	overloadWindow time.Duration
	drain          time.Duration
	procs          int
	pids           map[string]int
	jsonOut        string
	mdOut          string
	note           string
	checkP99       time.Duration
	checkRate      int
	checkRatio     float64
	checkGovP99    time.Duration
	govRounds      int
	govRoundDur    time.Duration
}

func main() {
	var (
		cfg                             config
		targetsFlag, modesFlag          string
		ratesFlag, ladderFlag           string
		c1Max, rateDur, rateWarm        time.Duration
		ladderDur, ladderWarm, budget   time.Duration
		overloadWin, drain, checkP99    time.Duration
		c1N, c1Warm, procs, checkRate   int
		checkRatio                      float64
		mockURL, sovURL, liteURL, pkURL string
		mockPID, sovPID, litePID, pkPID int
		govURL, govKey, govConfig       string
		govPID, redisPID                int
		checkGovP99, govRoundDur        time.Duration
		govRounds                       int
		sovKey, liteKey, model          string
		jsonOut, mdOut, note            string
	)
	flag.StringVar(&targetsFlag, "targets", "direct,sovereign,sovereign-governed,litellm,portkey", "comma-separated targets to measure, in this order after direct (which always goes first: added latency is computed against it)")
	flag.StringVar(&modesFlag, "modes", "non-stream,stream,stream-tools", "comma-separated modes: non-stream, stream, stream-tools (streamed, with 8 tools and an image part)")
	flag.StringVar(&mockURL, "mock-url", "http://127.0.0.1:18190", "the mock upstream's base URL (the direct target; Portkey's custom host is this + /v1)")
	flag.StringVar(&sovURL, "sovereign-url", "http://127.0.0.1:18191", "Sovereign's base URL")
	flag.StringVar(&sovKey, "sovereign-key", "", "bearer token for Sovereign")
	flag.StringVar(&govURL, "sovereign-gov-url", "http://127.0.0.1:18194", "the governed Sovereign's base URL (limits in Redis and policies set up, see run.sh)")
	flag.StringVar(&govKey, "sovereign-gov-key", "", "bearer token for the governed Sovereign")
	flag.StringVar(&govConfig, "sovereign-gov-config", "all", "what the governed Sovereign has set up, for the report: all (limits on three scopes and policies), team (one team rule and the policies), limits, policies or none")
	flag.StringVar(&liteURL, "litellm-url", "http://127.0.0.1:18192", "LiteLLM proxy's base URL")
	flag.StringVar(&liteKey, "litellm-key", "", "bearer token for LiteLLM (its master key; empty: none)")
	flag.StringVar(&pkURL, "portkey-url", "http://127.0.0.1:18193", "Portkey gateway's base URL")
	flag.StringVar(&model, "model", "mock", "model id sent in every request")
	flag.IntVar(&mockPID, "mock-pid", 0, "process id of the mock upstream, for its CPU time per request on the direct row (0: not reported)")
	flag.IntVar(&sovPID, "sovereign-pid", 0, "process id of Sovereign, for its CPU time per request (0: not reported)")
	flag.IntVar(&govPID, "sovereign-gov-pid", 0, "process id of the governed Sovereign, for its CPU time per request (0: not reported)")
	flag.IntVar(&redisPID, "redis-pid", 0, "process id of the Redis server the governed Sovereign keeps its limits in, for its CPU time per governed request (0: not reported)")
	flag.IntVar(&litePID, "litellm-pid", 0, "process id of LiteLLM's proxy, for its CPU time per request (0: not reported)")
	flag.IntVar(&pkPID, "portkey-pid", 0, "process id of Portkey's gateway, for its CPU time per request (0: not reported)")
	flag.IntVar(&c1N, "c1-requests", 2000, "sequential requests measured at concurrency 1")
	flag.IntVar(&c1Warm, "c1-warmup", 200, "sequential warm-up requests before them (not counted)")
	flag.DurationVar(&c1Max, "c1-max-time", 8*time.Second, "stop the concurrency-1 phase after this long even if -c1-requests are not done (slow gateways)")
	flag.StringVar(&ratesFlag, "rates", "500,1000,2000", "fixed arrival rates (requests/s) reported in the table")
	flag.DurationVar(&rateDur, "rate-duration", 4*time.Second, "measured time at each fixed rate")
	flag.DurationVar(&rateWarm, "rate-warmup", time.Second, "warm-up at the same rate before each fixed-rate measurement (not counted)")
	flag.StringVar(&ladderFlag, "ladder", "250,500,1000,1500,2000,3000,4000,6000,8000", "rates climbed for the highest one held (fixed-rate results are reused); empty: skip")
	flag.DurationVar(&ladderDur, "ladder-duration", 2*time.Second, "measured time at each ladder rate")
	flag.DurationVar(&ladderWarm, "ladder-warmup", 500*time.Millisecond, "warm-up before each ladder rate (not counted)")
	flag.DurationVar(&budget, "max-added-p99", 5*time.Millisecond, "a rate is held while p99 added latency stays below this (the direct path: its own p99) with no errors")
	flag.DurationVar(&overloadWin, "overload-window", 250*time.Millisecond, "a step is abandoned as overloaded once more than rate x this requests are in flight")
	flag.DurationVar(&drain, "drain", 5*time.Second, "how long a step waits for its last requests after the schedule ends")
	flag.IntVar(&procs, "procs", 2, "GOMAXPROCS of the load generator (0: leave as is)")
	flag.StringVar(&jsonOut, "json-out", "", "write the results as JSON to this file")
	flag.StringVar(&mdOut, "md-out", "", "write the Markdown report to this file")
	flag.StringVar(&note, "note", "", "free text printed under the title (run.sh: versions and how the servers were started)")
	flag.DurationVar(&checkP99, "target-p99", time.Millisecond, "target: Sovereign's p99 added latency at -target-rate, non-streamed")
	flag.IntVar(&checkRate, "target-rate", 1000, "the rate of that target (must be one of -rates)")
	flag.Float64Var(&checkRatio, "target-ratio", 10, "target: LiteLLM's and Portkey's added latency / Sovereign's at concurrency 1")
	flag.DurationVar(&checkGovP99, "target-gov-p99", 500*time.Microsecond, "target: the governed Sovereign's p99 minus the plain one's at -target-rate, non-streamed")
	flag.IntVar(&govRounds, "gov-rounds", 6, "paired rounds for the governance check: the plain and the governed Sovereign take turns at -target-rate, non-streamed (ABBA order), and the check compares their pooled latencies (0: compare their single fixed-rate steps)")
	flag.DurationVar(&govRoundDur, "gov-round-duration", 3*time.Second, "measured time of each paired round (after half a second's warm-up)")
	flag.Parse()

	var err error
	cfg = config{
		mockURL: strings.TrimRight(mockURL, "/"), sovURL: strings.TrimRight(sovURL, "/"), sovKey: sovKey,
		govURL: strings.TrimRight(govURL, "/"), govKey: govKey, govConfig: govConfig, redisPID: redisPID,
		liteURL: strings.TrimRight(liteURL, "/"), liteKey: liteKey, portkeyURL: strings.TrimRight(pkURL, "/"),
		model: model, c1Requests: c1N, c1Warmup: c1Warm, c1MaxTime: c1Max,
		rateDur: rateDur, rateWarm: rateWarm, ladderDur: ladderDur, ladderWarm: ladderWarm,
		addedBudget: budget, overloadWindow: overloadWin, drain: drain, procs: procs,
		pids:    map[string]int{direct: mockPID, sovereign: sovPID, sovereignGov: govPID, litellm: litePID, portkey: pkPID},
		jsonOut: jsonOut, mdOut: mdOut, note: note,
		checkP99: checkP99, checkRate: checkRate, checkRatio: checkRatio, checkGovP99: checkGovP99,
		govRounds: govRounds, govRoundDur: govRoundDur,
	}
	switch cfg.govConfig {
	case "all":
	case "team", "limits", "policies", "none":
		displayName[sovereignGov] = "Sovereign (governed: " + cfg.govConfig + ")"
	default:
		fatalf("-sovereign-gov-config: unknown value %q (want all, team, limits, policies or none)", cfg.govConfig)
	}
	cfg.targets = splitList(targetsFlag)
	for _, t := range cfg.targets {
		if _, ok := displayName[t]; !ok {
			fatalf("-targets: unknown target %q (want %s)", t, knownTargets)
		}
	}
	// Direct goes first: the others' added latency is computed against it.
	slices.SortStableFunc(cfg.targets, func(a, b string) int {
		switch {
		case a == direct && b != direct:
			return -1
		case b == direct && a != direct:
			return 1
		}
		return 0
	})
	seen := map[string]bool{}
	cfg.targets = slices.DeleteFunc(cfg.targets, func(t string) bool {
		dup := seen[t]
		seen[t] = true
		return dup
	})
	cfg.modes = splitList(modesFlag)
	for _, m := range cfg.modes {
		if m != "non-stream" && m != "stream" && m != toolsMode {
			fatalf("-modes: unknown mode %q (want non-stream, stream, %s)", m, toolsMode)
		}
	}
	if len(cfg.targets) == 0 || len(cfg.modes) == 0 {
		fatalf("-targets and -modes must not be empty")
	}
	if cfg.rates, err = parseInts(ratesFlag); err != nil {
		fatalf("-rates: %v", err)
	}
	if cfg.ladder, err = parseInts(ladderFlag); err != nil {
		fatalf("-ladder: %v", err)
	}
	slices.Sort(cfg.ladder)
	for _, r := range append(slices.Clone(cfg.rates), cfg.ladder...) {
		if r <= 0 {
			fatalf("rates must be positive")
		}
	}
	if cfg.c1Requests < 1 || cfg.rateDur <= 0 || cfg.ladderDur <= 0 {
		fatalf("-c1-requests, -rate-duration and -ladder-duration must be positive")
	}
	if cfg.procs > 0 {
		runtime.GOMAXPROCS(cfg.procs)
	}

	rep := run(context.Background(), cfg)
	var md bytes.Buffer
	pass := writeMarkdown(&md, rep, cfg)
	os.Stdout.Write(md.Bytes())
	if cfg.mdOut != "" {
		if err := os.WriteFile(cfg.mdOut, md.Bytes(), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	if cfg.jsonOut != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fatalf("%v", err)
		}
		if err := os.WriteFile(cfg.jsonOut, append(data, '\n'), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	if !pass {
		os.Exit(1)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench/gateway: "+format+"\n", args...)
	os.Exit(2)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
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

// Report is what -json-out holds.
type Report struct {
	StartedAt time.Time      `json:"started_at"`
	DurationS float64        `json:"duration_s"`
	Host      Host           `json:"host"`
	Note      string         `json:"note,omitempty"`
	Settings  Settings       `json:"settings"`
	Targets   []TargetReport `json:"targets"`
	Ratios    []Ratio        `json:"ratios,omitempty"`
	Checks    []Check        `json:"checks,omitempty"`
	Pass      bool           `json:"pass"`
	// SovereignLog compares the requests sent to Sovereign with the
	// records its request log holds for them; GovernedLog the same for the
	// governed Sovereign (its own server, its own database).
	SovereignLog *LogCount `json:"sovereign_log,omitempty"`
	GovernedLog  *LogCount `json:"sovereign_governed_log,omitempty"`
	// GovernanceCost is the governed Sovereign's latency minus the plain
	// one's, per mode and load point.
	GovernanceCost []GovCost `json:"governance_cost,omitempty"`
	// GovRounds is the paired measurement the governance check reads.
	GovRounds *GovRounds `json:"governance_rounds,omitempty"`
}

// GovRounds is the plain and the governed Sovereign taking turns at one
// rate, non-streamed, in ABBA order (plain then governed, governed then
// plain, ...), so that both meet the machine in the same states: one p99
// each from every request of their rounds pooled, rather than from one
// step each measured a minute apart. On a shared two-core machine the
// tail of a single few-second step moves by as much as the governance
// costs; pooled paired rounds are what a difference of p99s can be read
// from.
type GovRounds struct {
	Rate      int       `json:"rate"`
	Rounds    int       `json:"rounds"`
	RoundS    float64   `json:"round_s"`
	PlainP99  []float64 `json:"plain_p99_ms"`    // per round; -1: overloaded
	GovP99    []float64 `json:"governed_p99_ms"` // per round
	PlainPool Point     `json:"plain_pooled"`
	GovPool   Point     `json:"governed_pooled"`
	// CPU ms per request over the rounds: each server's, and Redis's per
	// governed request.
	PlainCPU *float64 `json:"plain_cpu_ms_per_request,omitempty"`
	GovCPU   *float64 `json:"governed_cpu_ms_per_request,omitempty"`
	RedisCPU *float64 `json:"redis_cpu_ms_per_request,omitempty"`
	Error    string   `json:"error,omitempty"`
	// sent and answered per server, for the request-log counts.
	sent, answered map[string]int64
}

// GovCost is what governance costs at one load point: the governed
// Sovereign's percentile minus the plain Sovereign's, same mode, same run
// (both against the same direct baseline, so this is also the difference of
// their added latencies). Null: either was overloaded there.
type GovCost struct {
	Mode  string   `json:"mode"`
	Point string   `json:"point"` // "c=1", "1000 RPS", ...
	P50Ms *float64 `json:"p50_ms"`
	P99Ms *float64 `json:"p99_ms"`
}

// LogCount is how many requests went to a Sovereign server and how many
// records its request log has (read back through GET /v1/usage). Answered
// counts the requests the server answered (it sent a status line): each of
// those it certainly received. Sent also counts requests the load generator
// cut off in an overloaded step, some of which may never have reached the
// server; when no step overloaded the two are equal. Lost is the server's
// own count of records it dropped (sovereign_request_log_lost_total in
// /metrics; nil: not read).
type LogCount struct {
	Sent     int64  `json:"sent"`
	Answered int64  `json:"answered"`
	Recorded int64  `json:"recorded"`
	Lost     *int64 `json:"lost,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Host describes the machine: the load generator, the mock and the gateways
// all run on it.
type Host struct {
	CPU        string `json:"cpu"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"loadgen_gomaxprocs"`
	LoadAvg    string `json:"loadavg_at_start"`
	GoVersion  string `json:"go_version"`
}

// Settings echoes the knobs of the run.
type Settings struct {
	Model          string  `json:"model"`
	C1Requests     int     `json:"c1_requests"`
	C1Warmup       int     `json:"c1_warmup"`
	C1MaxTimeS     float64 `json:"c1_max_time_s"`
	Rates          []int   `json:"rates"`
	RateDurationS  float64 `json:"rate_duration_s"`
	RateWarmupS    float64 `json:"rate_warmup_s"`
	Ladder         []int   `json:"ladder"`
	LadderDurS     float64 `json:"ladder_duration_s"`
	LadderWarmupS  float64 `json:"ladder_warmup_s"`
	MaxAddedP99Ms  float64 `json:"max_added_p99_ms"`
	OverloadWindow float64 `json:"overload_window_s"`
}

// TargetReport is one target: its modes, or why it could not be measured.
type TargetReport struct {
	Name  string       `json:"name"`
	URL   string       `json:"url"`
	Error string       `json:"error,omitempty"`
	Modes []ModeReport `json:"modes,omitempty"`
}

// ModeReport is one target in one mode (non-stream or stream).
type ModeReport struct {
	Mode      string `json:"mode"`
	Error     string `json:"error,omitempty"`
	C1        *Dist  `json:"c1,omitempty"`
	Rates     []Step `json:"rates,omitempty"`
	Ladder    []Step `json:"ladder,omitempty"`
	MaxRPS    int    `json:"max_rps"`               // highest ladder rate held; 0: none
	MaxRPSCap string `json:"max_rps_cap,omitempty"` // why the climb stopped early, if not by failing
	Errors    int    `json:"errors"`                // non-200 and transport errors, c=1 and fixed rates
	// Requests is every request sent in this mode, warm-ups included;
	// CPUMsPerReq is the server process's CPU time (user+system) over them
	// divided by their number (for direct: the mock's).
	Requests    int64    `json:"requests"`
	Answered    int64    `json:"answered"` // of Requests, those the server answered (any status)
	CPUMsPerReq *float64 `json:"cpu_ms_per_request,omitempty"`
	// RedisCPUMsPerReq is, for the governed Sovereign, the Redis server's
	// CPU time over the same requests divided by their number.
	RedisCPUMsPerReq *float64 `json:"redis_cpu_ms_per_request,omitempty"`
	// For direct only: Again is its second measurement, taken after the
	// gateways in the same mode, and Baseline the mean of the two, which
	// the gateways' added figures at c=1 and the fixed rates are computed
	// against (ladder rungs use direct's one ladder run).
	Again    *Again    `json:"again,omitempty"`
	Baseline *Baseline `json:"baseline,omitempty"`
}

// Again is the direct path's second measurement at c=1 and the fixed rates.
type Again struct {
	C1    *Dist  `json:"c1"`
	Rates []Step `json:"rates"`
}

// Baseline holds the direct path's figures that added latency is computed
// against. A nil percentile: direct itself was overloaded.
type Baseline struct {
	C1    Point   `json:"c1"`
	Rates []Point `json:"rates"`
}

// Point is one set of percentiles, in milliseconds.
type Point struct {
	Rate   int      `json:"rate,omitempty"`
	P50    *float64 `json:"p50_ms"`
	P99    *float64 `json:"p99_ms"`
	TTFB50 *float64 `json:"ttfb_p50_ms,omitempty"`
	TTFB99 *float64 `json:"ttfb_p99_ms,omitempty"`
}

// Dist is a latency distribution at concurrency 1. Added* are the target's
// figures minus the direct path's (absent for direct).
type Dist struct {
	N           int      `json:"n"`
	Errors      int      `json:"errors"`
	P50Ms       float64  `json:"p50_ms"`
	P99Ms       float64  `json:"p99_ms"`
	MaxMs       float64  `json:"max_ms"`
	TTFBP50Ms   *float64 `json:"ttfb_p50_ms,omitempty"`
	TTFBP99Ms   *float64 `json:"ttfb_p99_ms,omitempty"`
	AddedP50Ms  *float64 `json:"added_p50_ms,omitempty"`
	AddedP99Ms  *float64 `json:"added_p99_ms,omitempty"`
	AddedTTFB50 *float64 `json:"added_ttfb_p50_ms,omitempty"`
	AddedTTFB99 *float64 `json:"added_ttfb_p99_ms,omitempty"`
	ErrorSample string   `json:"error_sample,omitempty"`
}

// Step is one arrival rate. Percentiles run over every request scheduled in
// the measured window; one that failed, was cut off or was never sent
// (overload) counts as infinitely slow, and a percentile that lands on such a
// request is null.
type Step struct {
	Rate        int      `json:"rate"`
	Scheduled   int      `json:"scheduled"` // in the measured window
	OK          int      `json:"ok"`
	Errors      int      `json:"errors"`    // non-200 or transport error
	Cancelled   int      `json:"cancelled"` // cut off by the overload or drain limit
	Unsent      int      `json:"unsent"`    // never sent: the step was abandoned
	Overload    bool     `json:"overload"`
	AbandonedAt float64  `json:"abandoned_at_s,omitempty"`
	AchievedRPS float64  `json:"achieved_rps"` // OK responses / measured window
	P50Ms       *float64 `json:"p50_ms"`
	P99Ms       *float64 `json:"p99_ms"`
	MaxMs       *float64 `json:"max_ms"`
	TTFBP50Ms   *float64 `json:"ttfb_p50_ms,omitempty"`
	TTFBP99Ms   *float64 `json:"ttfb_p99_ms,omitempty"`
	AddedP50Ms  *float64 `json:"added_p50_ms,omitempty"`
	AddedP99Ms  *float64 `json:"added_p99_ms,omitempty"`
	AddedTTFB50 *float64 `json:"added_ttfb_p50_ms,omitempty"`
	AddedTTFB99 *float64 `json:"added_ttfb_p99_ms,omitempty"`
	// SendLate* is how far behind schedule the load generator sent (its own
	// timer and scheduling jitter); included in every latency above.
	SendLateP50Ms float64 `json:"send_late_p50_ms"`
	SendLateP99Ms float64 `json:"send_late_p99_ms"`
	Held          bool    `json:"held"` // no errors and p99 (added) below the budget
	ErrorSample   string  `json:"error_sample,omitempty"`
	// lat is every measured request's latency, sorted (failed and unsent
	// ones as math.MaxInt64), for pooling steps.
	lat []int64
}

// Ratio is one gateway's added latency over Sovereign's.
type Ratio struct {
	Gateway string   `json:"gateway"`
	Mode    string   `json:"mode"`
	Point   string   `json:"point"` // "c=1 p50", "1000 RPS p99", ...
	Value   *float64 `json:"value"` // null: not measurable (overload, missing)
	Floored bool     `json:"floored,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// Check is one acceptance target.
type Check struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Target string `json:"target"`
	Result string `json:"result"` // PASS, FAIL
}

func ptr(x float64) *float64 { return &x }

// ---------------------------------------------------------------------------
// Requests

type target struct {
	name   string
	url    string
	header http.Header
	client *http.Client
	sent   atomic.Int64
	// answered counts responses received (any status).
	answered atomic.Int64
}

type mode struct {
	name   string
	stream bool
	body   []byte
}

func newTarget(name string, cfg config) *target {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	t := &target{name: name, header: h}
	switch name {
	case direct:
		t.url = cfg.mockURL + chatPath
		h.Set("Authorization", "Bearer dummy")
	case sovereign:
		t.url = cfg.sovURL + chatPath
		h.Set("Authorization", "Bearer "+cfg.sovKey)
	case sovereignGov:
		t.url = cfg.govURL + chatPath
		h.Set("Authorization", "Bearer "+cfg.govKey)
	case litellm:
		t.url = cfg.liteURL + chatPath
		if cfg.liteKey != "" {
			h.Set("Authorization", "Bearer "+cfg.liteKey)
		}
	case portkey:
		t.url = cfg.portkeyURL + chatPath
		h.Set("Authorization", "Bearer dummy")
		h.Set("x-portkey-provider", "openai")
		h.Set("x-portkey-custom-host", cfg.mockURL+"/v1")
	}
	// IdleConnTimeout stays under the 5 s keep-alive timeout of uvicorn and
	// Node, so the client drops an idle connection before the server does (a
	// POST on a connection the server just closed would fail, not retry).
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     4 * time.Second,
		DisableCompression:  true,
	}
	t.client = &http.Client{Transport: tr}
	return t
}

// toolsMode is a streamed request as an agent sends it: 8 function tools
// and a user message with a text and an image part. It measures what a
// gateway adds for a larger body that it must pass on whole.
const toolsMode = "stream-tools"

func newMode(name, model string) *mode {
	body := `{"model":` + strconv.Quote(model) + `,"messages":[{"role":"user","content":"hi"}],"max_tokens":8`
	m := &mode{name: name, stream: name == "stream" || name == toolsMode}
	if name == toolsMode {
		body = `{"model":` + strconv.Quote(model) + `,"messages":[{"role":"user","content":[{"type":"text","text":"What is in this picture, and what should I do next?"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + benchImage + `","detail":"low"}}]}],"max_tokens":8,"tools":` + benchTools()
	}
	if m.stream {
		body += `,"stream":true`
	}
	m.body = []byte(body + "}")
	return m
}

// benchImage is a 1×1 PNG, base64.
const benchImage = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// benchTools is 8 function tools with small JSON schemas, as JSON.
func benchTools() string {
	var tools []map[string]any
	for _, name := range []string{"get_weather", "search_docs", "create_ticket", "send_email", "lookup_user", "list_orders", "refund_order", "schedule_call"} {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "The " + strings.ReplaceAll(name, "_", " ") + " tool.",
			"parameters": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "query"},
				"properties": map[string]any{
					"id":    map[string]any{"type": "string", "description": "An identifier."},
					"query": map[string]any{"type": "string", "description": "What to look for."},
					"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
					"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				}},
		}})
	}
	b, _ := json.Marshal(tools)
	return string(b)
}

var (
	dataPrefix = []byte("data:")
	doneLine   = []byte("data: [DONE]")
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	errNoDone  = errors.New(`stream ended without "data: [DONE]"`)
	errEmpty   = errors.New("empty response body")
)

type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// do sends one request and returns when its response is complete (non-stream:
// the body is read; stream: "data: [DONE]" is read) and, for streams, when the
// first "data:" line arrived.
func (t *target) do(ctx context.Context, m *mode) (first, done time.Time, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(m.body))
	if err != nil {
		return first, done, err
	}
	req.Header = t.header // read-only, shared by all requests
	t.sent.Add(1)
	resp, err := t.client.Do(req)
	if err != nil {
		return first, done, err
	}
	t.answered.Add(1)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return first, done, &statusError{resp.StatusCode, strings.TrimSpace(string(b))}
	}
	if !m.stream {
		n, err := io.Copy(io.Discard, resp.Body)
		done = time.Now()
		if err == nil && n == 0 {
			err = errEmpty
		}
		return first, done, err
	}
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() {
		br.Reset(nil)
		readerPool.Put(br)
	}()
	for {
		line, rerr := br.ReadSlice('\n')
		if len(line) > 0 {
			if first.IsZero() && bytes.HasPrefix(line, dataPrefix) {
				first = time.Now()
			}
			if bytes.Equal(bytes.TrimRight(line, "\r\n"), doneLine) {
				done = time.Now()
				// Read to the end so the connection goes back to the pool.
				_, err = io.Copy(io.Discard, br)
				return first, done, err
			}
		}
		switch {
		case rerr == nil, errors.Is(rerr, bufio.ErrBufferFull):
		case errors.Is(rerr, io.EOF):
			return first, done, errNoDone
		default:
			return first, done, rerr
		}
	}
}

// ---------------------------------------------------------------------------
// Phases

func durMs(ns int64) float64 { return float64(ns) / 1e6 }

// percentileNs uses the nearest-rank method on sorted samples; math.MaxInt64
// marks a request that never completed.
func percentileNs(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return math.MaxInt64
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func msOrNil(ns int64) *float64 {
	if ns == math.MaxInt64 {
		return nil
	}
	return ptr(durMs(ns))
}

// runC1 measures sequential requests: a warm-up (c1Warmup requests or a
// quarter of c1MaxTime), then up to c1Requests or c1MaxTime, whichever ends
// first.
func runC1(ctx context.Context, t *target, m *mode, cfg config) (*Dist, error) {
	warmEnd := time.Now().Add(cfg.c1MaxTime / 4)
	for i := 0; i < cfg.c1Warmup && (i == 0 || time.Now().Before(warmEnd)); i++ {
		if _, _, err := t.do(ctx, m); err != nil && i == 0 {
			return nil, err
		}
	}
	lat := make([]int64, 0, cfg.c1Requests)
	var ttfb []int64
	d := &Dist{}
	deadline := time.Now().Add(cfg.c1MaxTime)
	for i := 0; i < cfg.c1Requests && time.Now().Before(deadline); i++ {
		start := time.Now()
		first, done, err := t.do(ctx, m)
		if err != nil {
			d.Errors++
			if d.ErrorSample == "" {
				d.ErrorSample = err.Error()
			}
			continue
		}
		lat = append(lat, int64(done.Sub(start)))
		if !first.IsZero() {
			ttfb = append(ttfb, int64(first.Sub(start)))
		}
	}
	if len(lat) == 0 {
		return nil, fmt.Errorf("no request succeeded: %s", d.ErrorSample)
	}
	slices.Sort(lat)
	d.N = len(lat)
	d.P50Ms = durMs(percentileNs(lat, 50))
	d.P99Ms = durMs(percentileNs(lat, 99))
	d.MaxMs = durMs(lat[len(lat)-1])
	if len(ttfb) > 0 {
		slices.Sort(ttfb)
		d.TTFBP50Ms = ptr(durMs(percentileNs(ttfb, 50)))
		d.TTFBP99Ms = ptr(durMs(percentileNs(ttfb, 99)))
	}
	return d, nil
}

// Request outcomes within a step.
const (
	outUnsent uint8 = iota
	outOK
	outError
	outCancelled
)

// runStep offers rate requests/s for warm+dur: request i is due at
// start+i/rate and goes out in its own goroutine at that time; its latency
// runs from then. Only requests due after the warm-up are counted. The step
// is abandoned (overload) once more than rate x overloadWindow requests are
// in flight: the rest are never sent and those in flight are cancelled.
func runStep(ctx context.Context, t *target, m *mode, rate int, warm, dur time.Duration, cfg config) Step {
	n := int(int64(rate) * int64(warm+dur) / int64(time.Second))
	nWarm := int(int64(rate) * int64(warm) / int64(time.Second))
	lat := make([]int64, n)
	ttfb := make([]int64, n)
	late := make([]int64, n)
	outcome := make([]uint8, n)
	var (
		inflight  atomic.Int64
		wg        sync.WaitGroup
		errMu     sync.Mutex
		errSample string
	)
	limit := max(int64(float64(rate)*cfg.overloadWindow.Seconds()), 32)
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	fire := func(i int, at time.Time) {
		defer wg.Done()
		defer inflight.Add(-1)
		first, done, err := t.do(stepCtx, m)
		if err != nil {
			if stepCtx.Err() != nil {
				outcome[i] = outCancelled
				return
			}
			outcome[i] = outError
			errMu.Lock()
			if errSample == "" {
				errSample = err.Error()
			}
			errMu.Unlock()
			return
		}
		lat[i] = int64(done.Sub(at))
		if !first.IsZero() {
			ttfb[i] = int64(first.Sub(at))
		}
		outcome[i] = outOK
	}

	// No garbage collection while the step runs (a step allocates a few
	// hundred MB at most; the memory limit is a backstop): the collector's
	// CPU time and assists would otherwise land in the measured latencies
	// of whichever target happened to be running. It catches up after.
	gcPercent := debug.SetGCPercent(-1)
	memLimit := debug.SetMemoryLimit(2 << 30)
	defer func() {
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(memLimit)
		runtime.GC()
	}()

	unlock := lockDispatcher()
	start := time.Now().Add(time.Millisecond)
	abandonedAt := -1.0
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(int64(i) * int64(time.Second) / int64(rate)))
		sleepUntil(at)
		if inflight.Load() >= limit {
			abandonedAt = time.Since(start).Seconds()
			break
		}
		inflight.Add(1)
		wg.Add(1)
		late[i] = int64(time.Since(at))
		go fire(i, at)
	}
	unlock()

	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	if abandonedAt >= 0 {
		cancel()
		<-finished
	} else {
		select {
		case <-finished:
		case <-time.After(cfg.drain):
			cancel()
			<-finished
		}
	}

	s := Step{Rate: rate, Overload: abandonedAt >= 0, ErrorSample: errSample}
	if s.Overload {
		s.AbandonedAt = math.Round(abandonedAt*100) / 100
	}
	var all, firsts, lates []int64
	for i := nWarm; i < n; i++ {
		s.Scheduled++
		switch outcome[i] {
		case outOK:
			s.OK++
			all = append(all, lat[i])
			if ttfb[i] > 0 {
				firsts = append(firsts, ttfb[i])
			}
			lates = append(lates, late[i])
			continue
		case outError:
			s.Errors++
			lates = append(lates, late[i])
		case outCancelled:
			s.Cancelled++
			lates = append(lates, late[i])
		default:
			s.Unsent++
		}
		all = append(all, math.MaxInt64)
		if m.stream {
			firsts = append(firsts, math.MaxInt64)
		}
	}
	slices.Sort(all)
	s.lat = all
	s.P50Ms = msOrNil(percentileNs(all, 50))
	s.P99Ms = msOrNil(percentileNs(all, 99))
	s.MaxMs = msOrNil(percentileNs(all, 100))
	if m.stream && len(firsts) > 0 {
		slices.Sort(firsts)
		s.TTFBP50Ms = msOrNil(percentileNs(firsts, 50))
		s.TTFBP99Ms = msOrNil(percentileNs(firsts, 99))
	}
	if len(lates) > 0 {
		slices.Sort(lates)
		s.SendLateP50Ms = durMs(percentileNs(lates, 50))
		s.SendLateP99Ms = durMs(percentileNs(lates, 99))
	}
	s.AchievedRPS = math.Round(float64(s.OK) / dur.Seconds())
	return s
}

// settle waits for a target to drain what an overloaded step left queued:
// until three sequential requests in a row come back within threshold, or
// limit passes.
func settle(ctx context.Context, t *target, m *mode, threshold, limit time.Duration) {
	deadline := time.Now().Add(limit)
	good := 0
	for time.Now().Before(deadline) && good < 3 {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		start := time.Now()
		_, done, err := t.do(rctx, m)
		cancel()
		if err == nil && done.Sub(start) < threshold {
			good++
			continue
		}
		good = 0
		time.Sleep(100 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// The run

type logger struct{ began time.Time }

func (l logger) printf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[gateway %5.1fs] %s\n", time.Since(l.began).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config) *Report {
	rep := &Report{
		StartedAt: time.Now().UTC().Truncate(time.Second),
		Host:      hostInfo(),
		Note:      cfg.note,
		Settings: Settings{
			Model: cfg.model, C1Requests: cfg.c1Requests, C1Warmup: cfg.c1Warmup, C1MaxTimeS: cfg.c1MaxTime.Seconds(),
			Rates: cfg.rates, RateDurationS: cfg.rateDur.Seconds(), RateWarmupS: cfg.rateWarm.Seconds(),
			Ladder: cfg.ladder, LadderDurS: cfg.ladderDur.Seconds(), LadderWarmupS: cfg.ladderWarm.Seconds(),
			MaxAddedP99Ms: durMs(int64(cfg.addedBudget)), OverloadWindow: cfg.overloadWindow.Seconds(),
		},
	}
	log := logger{time.Now()}
	for _, name := range cfg.targets {
		t := newTarget(name, cfg)
		rep.Targets = append(rep.Targets, TargetReport{Name: name, URL: t.url})
	}
	// Mode-major order: every target in one mode, then the next mode, so
	// that direct's figures for a mode are there when the gateways need them.
	for _, mname := range cfg.modes {
		m := newMode(mname, cfg.model)
		var base *ModeReport
		for ti, name := range cfg.targets {
			tr := &rep.Targets[ti]
			if tr.Error != "" {
				continue
			}
			t := newTarget(name, cfg)
			mr := measure(ctx, t, m, cfg, base, log)
			t.client.CloseIdleConnections()
			if mr.Error != "" && mr.C1 == nil {
				log.printf("%s %s: %s", name, mname, mr.Error)
			}
			tr.Modes = append(tr.Modes, mr)
			if name == direct && mr.C1 != nil {
				base = &tr.Modes[len(tr.Modes)-1]
			}
		}
		if base != nil && len(cfg.targets) > 1 {
			rebase(ctx, rep, base, m, cfg, log)
		}
		if mname == "non-stream" && cfg.govRounds > 0 && rep.mode(sovereign, mname) != nil && rep.mode(sovereignGov, mname) != nil {
			rep.GovRounds = govRounds(ctx, m, cfg, log)
		}
	}
	for _, tr := range rep.Targets {
		if (tr.Name != sovereign && tr.Name != sovereignGov) || tr.Error != "" {
			continue
		}
		lc := &LogCount{}
		for _, mr := range tr.Modes {
			lc.Sent += mr.Requests
			lc.Answered += mr.Answered
		}
		if rep.GovRounds != nil {
			lc.Sent += rep.GovRounds.sent[tr.Name]
			lc.Answered += rep.GovRounds.answered[tr.Name]
		}
		base, key := cfg.sovURL, cfg.sovKey
		if tr.Name == sovereignGov {
			base, key = cfg.govURL, cfg.govKey
		}
		lc.Recorded, lc.Error = countRecords(ctx, base, key, lc.Answered, log.began)
		lc.Lost = lostRecords(ctx, base)
		if tr.Name == sovereign {
			rep.SovereignLog = lc
		} else {
			rep.GovernedLog = lc
		}
		log.printf("%s request log: %d records for %d requests answered (%d sent), lost %s", tr.Name, lc.Recorded, lc.Answered, lc.Sent, fmtLost(lc.Lost))
	}
	rep.DurationS = math.Round(time.Since(log.began).Seconds()*10) / 10
	return rep
}

// govRounds runs the paired rounds (GovRounds) in mode m.
func govRounds(ctx context.Context, m *mode, cfg config, log logger) *GovRounds {
	gr := &GovRounds{Rate: cfg.checkRate, Rounds: cfg.govRounds, RoundS: cfg.govRoundDur.Seconds(),
		sent: map[string]int64{}, answered: map[string]int64{}}
	targets := map[string]*target{sovereign: newTarget(sovereign, cfg), sovereignGov: newTarget(sovereignGov, cfg)}
	defer func() {
		for _, t := range targets {
			t.client.CloseIdleConnections()
		}
	}()
	cpu := map[string]time.Duration{}
	var redisCPU time.Duration
	cpuOK := true
	pooled := map[string][]int64{}
	log.printf("governance: %d paired rounds of %v at %d RPS, non-streamed (Sovereign and %s in turn)", cfg.govRounds, cfg.govRoundDur, cfg.checkRate, displayName[sovereignGov])
	// Both servers first finish what the ladder left them (an overloaded
	// rung leaves the request log and Redis a backlog for seconds).
	time.Sleep(2 * time.Second)
	for _, t := range targets {
		settle(ctx, t, m, 5*time.Millisecond, 10*time.Second)
	}
	for r := 0; r < cfg.govRounds; r++ {
		order := []string{sovereign, sovereignGov}
		if r%2 == 1 {
			order = []string{sovereignGov, sovereign}
		}
		for _, name := range order {
			t := targets[name]
			c0, ok0 := cpuTime(cfg.pids[name])
			r0, rok0 := cpuTime(cfg.redisPID)
			s := runStep(ctx, t, m, cfg.checkRate, 500*time.Millisecond, cfg.govRoundDur, cfg)
			c1, ok1 := cpuTime(cfg.pids[name])
			r1, rok1 := cpuTime(cfg.redisPID)
			cpuOK = cpuOK && ok0 && ok1
			cpu[name] += c1 - c0
			if name == sovereignGov && rok0 && rok1 {
				redisCPU += r1 - r0
			}
			pooled[name] = append(pooled[name], s.lat...)
			p99 := -1.0
			if s.P99Ms != nil && !s.Overload {
				p99 = *s.P99Ms
			}
			if name == sovereign {
				gr.PlainP99 = append(gr.PlainP99, p99)
			} else {
				gr.GovP99 = append(gr.GovP99, p99)
			}
			log.printf("governance round %d: %s p99 %s ms", r+1, name, fmtPtr(s.P99Ms))
			if s.Overload {
				settle(ctx, t, m, 50*time.Millisecond, 10*time.Second)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for name, t := range targets {
		gr.sent[name], gr.answered[name] = t.sent.Load(), t.answered.Load()
	}
	point := func(lat []int64) Point {
		slices.Sort(lat)
		return Point{Rate: cfg.checkRate, P50: msOrNil(percentileNs(lat, 50)), P99: msOrNil(percentileNs(lat, 99))}
	}
	gr.PlainPool, gr.GovPool = point(pooled[sovereign]), point(pooled[sovereignGov])
	if cpuOK && cfg.pids[sovereign] > 0 && cfg.pids[sovereignGov] > 0 {
		gr.PlainCPU = ptr(durMs(int64(cpu[sovereign])) / float64(max(gr.sent[sovereign], 1)))
		gr.GovCPU = ptr(durMs(int64(cpu[sovereignGov])) / float64(max(gr.sent[sovereignGov], 1)))
	}
	if cfg.redisPID > 0 && redisCPU > 0 {
		gr.RedisCPU = ptr(durMs(int64(redisCPU)) / float64(max(gr.sent[sovereignGov], 1)))
	}
	log.printf("governance, pooled: Sovereign p50 %s p99 %s ms, %s p50 %s p99 %s ms", fmtPtr(gr.PlainPool.P50), fmtPtr(gr.PlainPool.P99),
		displayName[sovereignGov], fmtPtr(gr.GovPool.P50), fmtPtr(gr.GovPool.P99))
	return gr
}

// countRecords reads how many records the request log of the Sovereign
// server at base holds since start (GET /v1/usage, summed over teams),
// waiting up to 10 s for the writer to catch up with want.
func countRecords(ctx context.Context, base, key string, want int64, start time.Time) (int64, string) {
	var n int64
	for deadline := time.Now().Add(10 * time.Second); ; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/usage?group_by=team&since=%d", base, start.Add(-time.Second).Unix()), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return n, err.Error()
		}
		var u struct {
			Data []struct {
				Requests int64 `json:"requests"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&u)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return n, fmt.Sprintf("GET /v1/usage: HTTP %d %v", resp.StatusCode, err)
		}
		n = 0
		for _, d := range u.Data {
			n += d.Requests
		}
		// The usage calls themselves are recorded too, after they answer.
		if n >= want || time.Now().After(deadline) {
			return n, ""
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// lostRecords reads the records a Sovereign server says it dropped
// (sovereign_request_log_lost_total, summed over reasons, from its public
// /metrics); nil when it cannot be read. A counter never incremented is
// absent: 0.
func lostRecords(ctx context.Context, base string) *int64 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var n float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sovereign_request_log_lost_total") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			n += v
		}
	}
	if sc.Err() != nil {
		return nil
	}
	x := int64(n)
	return &x
}

func fmtLost(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return strconv.FormatInt(*p, 10)
}

// rebase measures the direct path a second time at c=1 and the fixed rates,
// after the gateways, and recomputes the gateways' added figures there
// against the mean of direct's two measurements: that halves the weight of a
// hiccup in either and cancels a drift across the mode.
func rebase(ctx context.Context, rep *Report, base *ModeReport, m *mode, cfg config, log logger) {
	t := newTarget(direct, cfg)
	defer t.client.CloseIdleConnections()
	log.printf("direct %s: again, for the baseline", m.name)
	again := &Again{}
	c1, err := runC1(ctx, t, m, cfg)
	if err != nil {
		log.printf("direct %s: %v", m.name, err)
		return
	}
	again.C1 = c1
	for _, rate := range cfg.rates {
		s := runStep(ctx, t, m, rate, cfg.rateWarm, cfg.rateDur, cfg)
		log.printf("direct %s: %d RPS: p50 %s, p99 %s ms", m.name, rate, fmtPtr(s.P50Ms), fmtPtr(s.P99Ms))
		again.Rates = append(again.Rates, s)
		time.Sleep(200 * time.Millisecond)
	}
	base.Again = again

	mean := func(a, b *float64) *float64 {
		if a == nil || b == nil {
			return nil
		}
		return ptr((*a + *b) / 2)
	}
	b := &Baseline{C1: Point{
		P50:    mean(&base.C1.P50Ms, &c1.P50Ms),
		P99:    mean(&base.C1.P99Ms, &c1.P99Ms),
		TTFB50: mean(base.C1.TTFBP50Ms, c1.TTFBP50Ms),
		TTFB99: mean(base.C1.TTFBP99Ms, c1.TTFBP99Ms),
	}}
	for _, s1 := range base.Rates {
		s2, ok := findStep(again.Rates, s1.Rate)
		if !ok {
			continue
		}
		b.Rates = append(b.Rates, Point{
			Rate: s1.Rate, P50: mean(s1.P50Ms, s2.P50Ms), P99: mean(s1.P99Ms, s2.P99Ms),
			TTFB50: mean(s1.TTFBP50Ms, s2.TTFBP50Ms), TTFB99: mean(s1.TTFBP99Ms, s2.TTFBP99Ms),
		})
	}
	base.Baseline = b

	for ti := range rep.Targets {
		if rep.Targets[ti].Name == direct {
			continue
		}
		for mi := range rep.Targets[ti].Modes {
			mr := &rep.Targets[ti].Modes[mi]
			if mr.Mode != m.name || mr.C1 == nil {
				continue
			}
			mr.C1.AddedP50Ms = sub(&mr.C1.P50Ms, b.C1.P50)
			mr.C1.AddedP99Ms = sub(&mr.C1.P99Ms, b.C1.P99)
			mr.C1.AddedTTFB50 = sub(mr.C1.TTFBP50Ms, b.C1.TTFB50)
			mr.C1.AddedTTFB99 = sub(mr.C1.TTFBP99Ms, b.C1.TTFB99)
			for si := range mr.Rates {
				s := &mr.Rates[si]
				for _, p := range b.Rates {
					if p.Rate == s.Rate {
						s.AddedP50Ms = sub(s.P50Ms, p.P50)
						s.AddedP99Ms = sub(s.P99Ms, p.P99)
						s.AddedTTFB50 = sub(s.TTFBP50Ms, p.TTFB50)
						s.AddedTTFB99 = sub(s.TTFBP99Ms, p.TTFB99)
					}
				}
			}
		}
	}
}

// measure runs every phase for one target in one mode. base is the direct
// path's report in the same mode (nil when direct is not measured); the
// target's added figures are computed against it as they come.
func measure(ctx context.Context, t *target, m *mode, cfg config, base *ModeReport, log logger) (mr ModeReport) {
	mr = ModeReport{Mode: m.name}
	isDirect := t.name == direct
	pid := cfg.pids[t.name]
	cpu0, cpuOK := cpuTime(pid)
	redisPID := 0
	if t.name == sovereignGov {
		redisPID = cfg.redisPID
	}
	redis0, redisOK := cpuTime(redisPID)
	defer func() {
		mr.Requests, mr.Answered = t.sent.Load(), t.answered.Load()
		if cpu1, ok := cpuTime(pid); ok && cpuOK && mr.Requests > 0 {
			mr.CPUMsPerReq = ptr(durMs(int64(cpu1-cpu0)) / float64(mr.Requests))
		}
		if redis1, ok := cpuTime(redisPID); ok && redisOK && mr.Requests > 0 {
			mr.RedisCPUMsPerReq = ptr(durMs(int64(redis1-redis0)) / float64(mr.Requests))
		}
	}()
	log.printf("%s %s: concurrency 1", t.name, m.name)
	c1, err := runC1(ctx, t, m, cfg)
	if err != nil {
		mr.Error = err.Error()
		return mr
	}
	mr.C1 = c1
	mr.Errors += c1.Errors
	if base != nil && !isDirect {
		c1.AddedP50Ms = ptr(c1.P50Ms - base.C1.P50Ms)
		c1.AddedP99Ms = ptr(c1.P99Ms - base.C1.P99Ms)
		c1.AddedTTFB50 = sub(c1.TTFBP50Ms, base.C1.TTFBP50Ms)
		c1.AddedTTFB99 = sub(c1.TTFBP99Ms, base.C1.TTFBP99Ms)
	}
	log.printf("%s %s: c=1 p50 %.3f ms, p99 %.3f ms (n=%d)", t.name, m.name, c1.P50Ms, c1.P99Ms, c1.N)
	threshold := max(time.Duration(4*c1.P99Ms*1e6), 20*time.Millisecond)

	step := func(rate int, warm, dur time.Duration) Step {
		s := runStep(ctx, t, m, rate, warm, dur, cfg)
		if b := base.find(rate); b != nil && !isDirect {
			s.AddedP50Ms = sub(s.P50Ms, b.P50Ms)
			s.AddedP99Ms = sub(s.P99Ms, b.P99Ms)
			s.AddedTTFB50 = sub(s.TTFBP50Ms, b.TTFBP50Ms)
			s.AddedTTFB99 = sub(s.TTFBP99Ms, b.TTFBP99Ms)
		}
		p99 := s.P99Ms
		if !isDirect {
			p99 = s.AddedP99Ms
		}
		s.Held = s.Errors == 0 && s.Cancelled == 0 && s.Unsent == 0 && p99 != nil && *p99 < durMs(int64(cfg.addedBudget))
		log.printf("%s %s: %d RPS: p50 %s, p99 %s ms, ok %d/%d, errors %d%s", t.name, m.name, rate,
			fmtPtr(s.P50Ms), fmtPtr(s.P99Ms), s.OK, s.Scheduled, s.Errors, map[bool]string{true: " OVERLOAD", false: ""}[s.Overload])
		if s.Overload || s.Errors > 0 || s.Cancelled > 0 {
			settle(ctx, t, m, threshold, 20*time.Second)
		} else {
			time.Sleep(200 * time.Millisecond)
		}
		return s
	}

	for _, rate := range cfg.rates {
		s := step(rate, cfg.rateWarm, cfg.rateDur)
		mr.Errors += s.Errors
		mr.Rates = append(mr.Rates, s)
	}

	// The ladder: climb until a rate is not held. Fixed-rate results stand
	// in for ladder rates they cover.
	for _, rate := range cfg.ladder {
		if !isDirect {
			b := base.find(rate)
			if base == nil {
				mr.MaxRPSCap = "no direct baseline"
				break
			}
			if b == nil || !b.Held {
				mr.MaxRPSCap = "direct path's limit"
				break
			}
		}
		s, ok := findStep(mr.Rates, rate)
		if !ok {
			s = step(rate, cfg.ladderWarm, cfg.ladderDur)
			mr.Ladder = append(mr.Ladder, s)
		}
		// One more try for a rung missed without overload: on a shared
		// 2-core machine a single scheduling hiccup can put 1% of a short
		// step over the budget.
		if !s.Held && !s.Overload {
			log.printf("%s %s: %d RPS not held; once more", t.name, m.name, rate)
			s = step(rate, cfg.ladderWarm, cfg.ladderDur)
			mr.Ladder = append(mr.Ladder, s)
		}
		if !s.Held {
			break
		}
		mr.MaxRPS = rate
		if rate == cfg.ladder[len(cfg.ladder)-1] {
			mr.MaxRPSCap = "top of the ladder"
		}
	}
	return mr
}

func sub(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	return ptr(*a - *b)
}

func findStep(steps []Step, rate int) (Step, bool) {
	for _, s := range steps {
		if s.Rate == rate {
			return s, true
		}
	}
	return Step{}, false
}

// find returns the step at rate among a report's fixed rates and ladder.
// A rung tried twice has two steps; find prefers the one that held.
func (mr *ModeReport) find(rate int) *Step {
	if mr == nil {
		return nil
	}
	var first *Step
	for _, steps := range [][]Step{mr.Rates, mr.Ladder} {
		for i := range steps {
			if steps[i].Rate != rate {
				continue
			}
			if steps[i].Held {
				return &steps[i]
			}
			if first == nil {
				first = &steps[i]
			}
		}
	}
	return first
}

// cpuTime is a process's user+system CPU time from /proc/PID/stat (in
// clock ticks of 10 ms: USER_HZ is 100 on Linux).
func cpuTime(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command name (which may hold spaces) start
	// after the last ')'; utime and stime are fields 14 and 15 of the line.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

func hostInfo() Host {
	h := Host{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			h.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return h
}

// ---------------------------------------------------------------------------
// Output

func fmtPtr(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *x)
}

func (r *Report) target(name string) *TargetReport {
	for i := range r.Targets {
		if r.Targets[i].Name == name {
			return &r.Targets[i]
		}
	}
	return nil
}

func (r *Report) mode(name, mode string) *ModeReport {
	t := r.target(name)
	if t == nil {
		return nil
	}
	for i := range t.Modes {
		if t.Modes[i].Mode == mode && t.Modes[i].C1 != nil {
			return &t.Modes[i]
		}
	}
	return nil
}

// cell formats a p50 / p99 pair: absolute for direct, added (signed) for a
// gateway; "overload" where a percentile landed on a request that never
// completed.
func cell(abs50, abs99, add50, add99 *float64, isDirect bool) string {
	one := func(abs, add *float64) string {
		if abs == nil {
			return "overload"
		}
		if isDirect {
			return fmt.Sprintf("%.2f", *abs)
		}
		if add == nil {
			return fmt.Sprintf("(%.2f)", *abs)
		}
		return fmt.Sprintf("%+.2f", *add)
	}
	return one(abs50, add50) + " / " + one(abs99, add99)
}

// directC1 and directRate return what the direct row shows: the baseline
// (mean of its two measurements) where there is one, else its one
// measurement.
func directC1(mr *ModeReport) Point {
	if mr.Baseline != nil {
		return mr.Baseline.C1
	}
	return Point{P50: &mr.C1.P50Ms, P99: &mr.C1.P99Ms, TTFB50: mr.C1.TTFBP50Ms, TTFB99: mr.C1.TTFBP99Ms}
}

func directRate(mr *ModeReport, rate int) (Point, bool) {
	if mr.Baseline != nil {
		for _, p := range mr.Baseline.Rates {
			if p.Rate == rate {
				return p, true
			}
		}
	}
	s, ok := findStep(mr.Rates, rate)
	if !ok {
		return Point{}, false
	}
	return Point{Rate: rate, P50: s.P50Ms, P99: s.P99Ms, TTFB50: s.TTFBP50Ms, TTFB99: s.TTFBP99Ms}, true
}

func fmtMs(x *float64) string {
	if x == nil {
		return "overload"
	}
	return fmt.Sprintf("%.2f", *x)
}

func maxRPSCell(mr *ModeReport, ladder []int) string {
	switch {
	case len(ladder) == 0:
		return "-"
	case mr.MaxRPS == 0 && mr.MaxRPSCap != "":
		return "- (" + mr.MaxRPSCap + ")"
	case mr.MaxRPS == 0:
		return fmt.Sprintf("none (not at %d)", ladder[0])
	case mr.MaxRPSCap != "":
		return fmt.Sprintf("≥ %d (%s)", mr.MaxRPS, mr.MaxRPSCap)
	}
	return strconv.Itoa(mr.MaxRPS)
}

// writeMarkdown renders the report and computes ratios and checks (stored in
// r); it reports whether every check passed.
func writeMarkdown(w io.Writer, r *Report, cfg config) bool {
	fmt.Fprintf(w, "## Gateway overhead: latency added in front of a mock OpenAI upstream\n\n")
	fmt.Fprintf(w, "Host: %s, %d CPUs (load generator GOMAXPROCS=%d; the load generator, the mock and the gateway under test share these CPUs); load at start %s; %s; %s UTC, %.0f s.\n",
		r.Host.CPU, r.Host.NumCPU, r.Host.GOMAXPROCS, r.Host.LoadAvg, r.Host.GoVersion, r.StartedAt.Format("2006-01-02 15:04"), r.DurationS)
	if r.Note != "" {
		fmt.Fprintf(w, "%s\n", r.Note)
	}
	fmt.Fprintf(w, "\nPOST /v1/chat/completions, model %q, max_tokens 8. Milliseconds, p50 / p99. The direct row is absolute; gateway rows are **added** latency (gateway − direct, same percentile, same load, same run). "+
		"Fixed rates: open model, latency from each request's scheduled start, %gs measured after %gs warm-up; c=1: %d sequential requests (or %gs) after %d warm-up. "+
		"Streamed: until `data: [DONE]`. \"overload\": the percentile fell on a request that failed or was never served (the step is abandoned once more than rate × %gs are in flight). "+
		"Max RPS: the highest rate of the ladder %s held with no errors and p99 added below %g ms (direct: its own p99), %gs each; a gateway stops where direct does. "+
		"CPU ms/req: the server process's CPU time over every request of the row, warm-ups included (direct: the mock's).\n\n",
		r.Settings.Model, r.Settings.RateDurationS, r.Settings.RateWarmupS, r.Settings.C1Requests, r.Settings.C1MaxTimeS, r.Settings.C1Warmup, r.Settings.OverloadWindow,
		joinInts(r.Settings.Ladder), r.Settings.MaxAddedP99Ms, r.Settings.LadderDurS)

	fmt.Fprintf(w, "| target | mode | c=1 |")
	for _, rate := range cfg.rates {
		fmt.Fprintf(w, " %d RPS |", rate)
	}
	fmt.Fprintf(w, " errors | max RPS, p99 added < %g ms | CPU ms/req |\n|---|---|---|", r.Settings.MaxAddedP99Ms)
	for range cfg.rates {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintf(w, "---|---|---|\n")
	for _, tr := range r.Targets {
		isDirect := tr.Name == direct
		if tr.Error != "" || len(tr.Modes) == 0 {
			fmt.Fprintf(w, "| %s | | not measured: %s |\n", displayName[tr.Name], tr.Error)
			continue
		}
		for i := range tr.Modes {
			mr := &tr.Modes[i]
			if mr.C1 == nil {
				fmt.Fprintf(w, "| %s | %s | not measured: %s |\n", displayName[tr.Name], mr.Mode, mdEscape(mr.Error))
				continue
			}
			if isDirect {
				p := directC1(mr)
				fmt.Fprintf(w, "| %s | %s | %s |", displayName[tr.Name], mr.Mode, cell(p.P50, p.P99, nil, nil, true))
			} else {
				fmt.Fprintf(w, "| %s | %s | %s |", displayName[tr.Name], mr.Mode, cell(&mr.C1.P50Ms, &mr.C1.P99Ms, mr.C1.AddedP50Ms, mr.C1.AddedP99Ms, false))
			}
			for _, rate := range cfg.rates {
				if isDirect {
					if p, ok := directRate(mr, rate); ok {
						fmt.Fprintf(w, " %s |", cell(p.P50, p.P99, nil, nil, true))
					} else {
						fmt.Fprintf(w, " - |")
					}
					continue
				}
				s, ok := findStep(mr.Rates, rate)
				if !ok {
					fmt.Fprintf(w, " - |")
					continue
				}
				fmt.Fprintf(w, " %s |", cell(s.P50Ms, s.P99Ms, s.AddedP50Ms, s.AddedP99Ms, false))
			}
			cpu := "-"
			if mr.CPUMsPerReq != nil {
				cpu = fmt.Sprintf("%.3f", *mr.CPUMsPerReq)
			}
			fmt.Fprintf(w, " %d | %s | %s |\n", mr.Errors, maxRPSCell(mr, cfg.ladder), cpu)
		}
	}

	// The direct path's two measurements, side by side: the noise floor.
	if d := r.target(direct); d != nil {
		var parts []string
		for i := range d.Modes {
			mr := &d.Modes[i]
			if mr.Again == nil || mr.C1 == nil || mr.Again.C1 == nil {
				continue
			}
			items := []string{fmt.Sprintf("c=1 %.2f / %.2f", mr.C1.P99Ms, mr.Again.C1.P99Ms)}
			for _, rate := range cfg.rates {
				s1, ok1 := findStep(mr.Rates, rate)
				s2, ok2 := findStep(mr.Again.Rates, rate)
				if ok1 && ok2 {
					items = append(items, fmt.Sprintf("%d RPS %s / %s", rate, fmtMs(s1.P99Ms), fmtMs(s2.P99Ms)))
				}
			}
			parts = append(parts, mr.Mode+": "+strings.Join(items, ", "))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "\nThe direct path is measured twice per mode, before and after the gateways; its row and the added figures at c=1 and the fixed rates use the mean of the two. "+
				"Its p99, first / second (ms): %s. Differences of that size are this machine's run-to-run noise, and they bound how finely a p99 difference can be read.\n", strings.Join(parts, "; "))
		}
	}

	// Streamed time to first byte.
	var ttfbRows []string
	for _, tr := range r.Targets {
		mr := r.mode(tr.Name, "stream")
		if mr == nil || mr.C1.TTFBP50Ms == nil {
			continue
		}
		if tr.Name == direct {
			p := directC1(mr)
			row := fmt.Sprintf("| %s | %s |", displayName[tr.Name], cell(p.TTFB50, p.TTFB99, nil, nil, true))
			for _, rate := range cfg.rates {
				if p, ok := directRate(mr, rate); ok {
					row += " " + cell(p.TTFB50, p.TTFB99, nil, nil, true) + " |"
				} else {
					row += " - |"
				}
			}
			ttfbRows = append(ttfbRows, row)
			continue
		}
		row := fmt.Sprintf("| %s | %s |", displayName[tr.Name], cell(mr.C1.TTFBP50Ms, mr.C1.TTFBP99Ms, mr.C1.AddedTTFB50, mr.C1.AddedTTFB99, false))
		for _, rate := range cfg.rates {
			s, ok := findStep(mr.Rates, rate)
			if !ok || (s.TTFBP50Ms == nil && s.P50Ms != nil) {
				row += " - |"
				continue
			}
			row += " " + cell(s.TTFBP50Ms, s.TTFBP99Ms, s.AddedTTFB50, s.AddedTTFB99, false) + " |"
		}
		ttfbRows = append(ttfbRows, row)
	}
	if len(ttfbRows) > 0 {
		fmt.Fprintf(w, "\nStreamed, time to the first `data:` line (ms, p50 / p99; direct absolute, gateways added):\n\n| target | c=1 |")
		for _, rate := range cfg.rates {
			fmt.Fprintf(w, " %d RPS |", rate)
		}
		fmt.Fprintf(w, "\n|---|---|")
		for range cfg.rates {
			fmt.Fprintf(w, "---|")
		}
		fmt.Fprintf(w, "\n%s\n", strings.Join(ttfbRows, "\n"))
	}

	// Ratios against Sovereign.
	r.Ratios = nil
	ratioOf := func(gw, mode, point string, gwAdd, sovAdd *float64, gwOverload bool) Ratio {
		rt := Ratio{Gateway: gw, Mode: mode, Point: point}
		switch {
		case gwOverload:
			rt.Note = "∞ (overload)"
		case gwAdd == nil || sovAdd == nil:
			rt.Note = "n/a"
		default:
			den := *sovAdd
			// Sovereign's added latency can come out at or below zero
			// within noise; 10 µs stands in for it then, and the ratio
			// is a lower bound.
			if den < 0.01 {
				den, rt.Floored = 0.01, true
			}
			rt.Value = ptr(*gwAdd / den)
		}
		return rt
	}
	sovModes := map[string]*ModeReport{}
	for _, mname := range cfg.modes {
		sovModes[mname] = r.mode(sovereign, mname)
	}
	for _, gw := range []string{litellm, portkey} {
		for _, mname := range cfg.modes {
			g, s := r.mode(gw, mname), sovModes[mname]
			if g == nil || s == nil {
				continue
			}
			r.Ratios = append(r.Ratios,
				ratioOf(gw, mname, "c=1 p50", g.C1.AddedP50Ms, s.C1.AddedP50Ms, false),
				ratioOf(gw, mname, "c=1 p99", g.C1.AddedP99Ms, s.C1.AddedP99Ms, false))
			gs, gok := findStep(g.Rates, cfg.checkRate)
			ss, sok := findStep(s.Rates, cfg.checkRate)
			if gok && sok {
				r.Ratios = append(r.Ratios,
					ratioOf(gw, mname, fmt.Sprintf("%d RPS p50", cfg.checkRate), gs.AddedP50Ms, ss.AddedP50Ms, gs.P50Ms == nil),
					ratioOf(gw, mname, fmt.Sprintf("%d RPS p99", cfg.checkRate), gs.AddedP99Ms, ss.AddedP99Ms, gs.P99Ms == nil))
			}
		}
	}
	fmtRatio := func(rt Ratio) string {
		if rt.Value == nil {
			return rt.Note
		}
		s := fmt.Sprintf("%.1fx", *rt.Value)
		if rt.Floored {
			s = "≥ " + s
		}
		return s
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintf(w, "\nAdded latency relative to Sovereign's (gateway added ÷ Sovereign added; higher means Sovereign adds less):\n\n")
		points := []string{"c=1 p50", "c=1 p99", fmt.Sprintf("%d RPS p50", cfg.checkRate), fmt.Sprintf("%d RPS p99", cfg.checkRate)}
		fmt.Fprintf(w, "| ratio | mode | %s |\n|---|---|---|---|---|---|\n", strings.Join(points, " | "))
		for _, gw := range []string{litellm, portkey} {
			for _, mname := range cfg.modes {
				var cells []string
				found := false
				for _, p := range points {
					c := "-"
					for _, rt := range r.Ratios {
						if rt.Gateway == gw && rt.Mode == mname && rt.Point == p {
							c, found = fmtRatio(rt), true
						}
					}
					cells = append(cells, c)
				}
				if found {
					fmt.Fprintf(w, "| %s / Sovereign | %s | %s |\n", displayName[gw], mname, strings.Join(cells, " | "))
				}
			}
		}
	}

	// The cost of governance: the governed Sovereign minus the plain one,
	// same mode, same run.
	r.GovernanceCost = nil
	for _, mname := range cfg.modes {
		g, s := r.mode(sovereignGov, mname), sovModes[mname]
		if g == nil || s == nil {
			continue
		}
		r.GovernanceCost = append(r.GovernanceCost, GovCost{Mode: mname, Point: "c=1", P50Ms: ptr(g.C1.P50Ms - s.C1.P50Ms), P99Ms: ptr(g.C1.P99Ms - s.C1.P99Ms)})
		for _, rate := range cfg.rates {
			gs, gok := findStep(g.Rates, rate)
			ss, sok := findStep(s.Rates, rate)
			if gok && sok {
				r.GovernanceCost = append(r.GovernanceCost, GovCost{Mode: mname, Point: fmt.Sprintf("%d RPS", rate), P50Ms: sub(gs.P50Ms, ss.P50Ms), P99Ms: sub(gs.P99Ms, ss.P99Ms)})
			}
		}
	}
	if len(r.GovernanceCost) > 0 {
		fmt.Fprintf(w, "\nGovernance cost: %s minus Sovereign, same mode, same run (ms, p50 / p99; equally the difference of their added latencies; \"overload\": either was overloaded there). "+
			"Sovereign keeps its request log (it cannot be turned off) and has no limit rules, no policies and no Redis; %s has, besides, %s. "+
			"CPU: the governed server's CPU ms per request minus the plain one's; Redis: the Redis server's CPU ms per governed request.\n\n",
			displayName[sovereignGov], displayName[sovereignGov], govDescription(cfg.govConfig))
		fmt.Fprintf(w, "| governance cost | mode | c=1 |")
		for _, rate := range cfg.rates {
			fmt.Fprintf(w, " %d RPS |", rate)
		}
		fmt.Fprintf(w, " CPU ms/req | Redis CPU ms/req |\n|---|---|---|")
		for range cfg.rates {
			fmt.Fprintf(w, "---|")
		}
		fmt.Fprintf(w, "---|---|\n")
		diff := func(x *float64) string {
			if x == nil {
				return "overload"
			}
			return fmt.Sprintf("%+.2f", *x)
		}
		for _, mname := range cfg.modes {
			g, s := r.mode(sovereignGov, mname), sovModes[mname]
			if g == nil || s == nil {
				continue
			}
			fmt.Fprintf(w, "| %s − Sovereign | %s |", displayName[sovereignGov], mname)
			for _, point := range append([]string{"c=1"}, mapInts(cfg.rates, func(r int) string { return fmt.Sprintf("%d RPS", r) })...) {
				c := "-"
				for _, gc := range r.GovernanceCost {
					if gc.Mode == mname && gc.Point == point {
						c = diff(gc.P50Ms) + " / " + diff(gc.P99Ms)
					}
				}
				fmt.Fprintf(w, " %s |", c)
			}
			cpu, redis := "-", "-"
			if g.CPUMsPerReq != nil && s.CPUMsPerReq != nil {
				cpu = fmt.Sprintf("%+.3f", *g.CPUMsPerReq-*s.CPUMsPerReq)
			}
			if g.RedisCPUMsPerReq != nil {
				redis = fmt.Sprintf("%.3f", *g.RedisCPUMsPerReq)
			}
			fmt.Fprintf(w, " %s | %s |\n", cpu, redis)
		}
	}
	if gr := r.GovRounds; gr != nil {
		list := func(xs []float64) string {
			var out []string
			for _, x := range xs {
				if x < 0 {
					out = append(out, "overload")
				} else {
					out = append(out, fmt.Sprintf("%.2f", x))
				}
			}
			return strings.Join(out, ", ")
		}
		fmt.Fprintf(w, "\nPaired rounds (what the governance check reads): Sovereign and %s in turn at %d RPS, non-streamed, %d rounds of %gs each after 0.5 s of warm-up, in ABBA order; "+
			"the p99 of each server's requests from all its rounds pooled. Per-round p99 (ms), Sovereign: %s; %s: %s.\n\n",
			displayName[sovereignGov], gr.Rate, gr.Rounds, gr.RoundS, list(gr.PlainP99), displayName[sovereignGov], list(gr.GovP99))
		fmt.Fprintf(w, "| pooled, %d RPS | p50 | p99 | CPU ms/req | Redis CPU ms/req |\n|---|---|---|---|---|\n", gr.Rate)
		fmt.Fprintf(w, "| Sovereign | %s | %s | %s | - |\n", fmtMs(gr.PlainPool.P50), fmtMs(gr.PlainPool.P99), fmtPtr(gr.PlainCPU))
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", displayName[sovereignGov], fmtMs(gr.GovPool.P50), fmtMs(gr.GovPool.P99), fmtPtr(gr.GovCPU), fmtPtr(gr.RedisCPU))
		d := func(a, b *float64) string {
			if a == nil || b == nil {
				return "overload"
			}
			return fmt.Sprintf("%+.2f", *a-*b)
		}
		dcpu := "-"
		if gr.GovCPU != nil && gr.PlainCPU != nil {
			dcpu = fmt.Sprintf("%+.3f", *gr.GovCPU-*gr.PlainCPU)
		}
		fmt.Fprintf(w, "| governance cost | %s | %s | %s | %s |\n", d(gr.GovPool.P50, gr.PlainPool.P50), d(gr.GovPool.P99, gr.PlainPool.P99), dcpu, fmtPtr(gr.RedisCPU))
	}

	// Checks.
	r.Checks = nil
	check := func(name, value, target string, ok bool) {
		res := "FAIL"
		if ok {
			res = "PASS"
		}
		r.Checks = append(r.Checks, Check{Name: name, Value: value, Target: target, Result: res})
	}
	sov := sovModes["non-stream"]
	{
		name := fmt.Sprintf("Sovereign added p99 at %d RPS, non-streamed", cfg.checkRate)
		target := fmt.Sprintf("<= %.2f ms", durMs(int64(cfg.checkP99)))
		var s Step
		ok := false
		if sov != nil {
			s, ok = findStep(sov.Rates, cfg.checkRate)
		}
		switch {
		case !ok:
			check(name, "not measured", target, false)
		case s.P99Ms == nil:
			check(name, "overload", target, false)
		case s.AddedP99Ms == nil:
			check(name, "no direct baseline", target, false)
		default:
			check(name, fmt.Sprintf("%.3f ms", *s.AddedP99Ms), target, *s.AddedP99Ms <= durMs(int64(cfg.checkP99)))
		}
	}
	// A request with 8 tools and an image part costs Sovereign no more than
	// 0.1 ms over a plain streamed one: the body passes through unread but
	// for the fields the gateway acts on.
	if tools, plain := sovModes[toolsMode], sovModes["stream"]; tools != nil && plain != nil {
		type point struct {
			name        string
			tools, base *float64
		}
		points := []point{{"c=1 p50", tools.C1.AddedP50Ms, plain.C1.AddedP50Ms}, {"c=1 p99", tools.C1.AddedP99Ms, plain.C1.AddedP99Ms}}
		ts, tok := findStep(tools.Rates, cfg.checkRate)
		ps, pok := findStep(plain.Rates, cfg.checkRate)
		if tok && pok {
			points = append(points, point{fmt.Sprintf("%d RPS p50", cfg.checkRate), ts.AddedP50Ms, ps.AddedP50Ms},
				point{fmt.Sprintf("%d RPS p99", cfg.checkRate), ts.AddedP99Ms, ps.AddedP99Ms})
		}
		for _, pt := range points {
			name := fmt.Sprintf("Sovereign added, 8 tools + image minus plain, streamed, %s", pt.name)
			if pt.tools == nil || pt.base == nil {
				check(name, "not measured", "<= 0.100 ms", false)
				continue
			}
			d := *pt.tools - *pt.base
			check(name, fmt.Sprintf("%.3f ms", d), "<= 0.100 ms", d <= 0.1)
		}
	}
	if r.target(sovereignGov) != nil {
		name := fmt.Sprintf("Governance cost: %s p99 − Sovereign p99 at %d RPS, non-streamed", displayName[sovereignGov], cfg.checkRate)
		target := fmt.Sprintf("<= %.2f ms", durMs(int64(cfg.checkGovP99)))
		g, s := r.mode(sovereignGov, "non-stream"), sov
		var gs, ss Step
		gok, sok := false, false
		if g != nil {
			gs, gok = findStep(g.Rates, cfg.checkRate)
		}
		if s != nil {
			ss, sok = findStep(s.Rates, cfg.checkRate)
		}
		if gr := r.GovRounds; gr != nil {
			name = fmt.Sprintf("Governance cost: %s p99 − Sovereign p99 at %d RPS, non-streamed, %d paired rounds of %gs pooled", displayName[sovereignGov], gr.Rate, gr.Rounds, gr.RoundS)
			gok, sok = gr.GovPool.P99 != nil, gr.PlainPool.P99 != nil
			gs, ss = Step{P99Ms: gr.GovPool.P99}, Step{P99Ms: gr.PlainPool.P99}
		}
		switch {
		case !gok:
			check(name, displayName[sovereignGov]+" not measured", target, false)
		case !sok:
			check(name, "Sovereign not measured", target, false)
		case gs.P99Ms == nil:
			check(name, displayName[sovereignGov]+" overloaded", target, false)
		case ss.P99Ms == nil:
			check(name, "Sovereign overloaded", target, false)
		default:
			d := *gs.P99Ms - *ss.P99Ms
			check(name, fmt.Sprintf("%.3f ms (%.3f − %.3f)", d, *gs.P99Ms, *ss.P99Ms), target, d <= durMs(int64(cfg.checkGovP99)))
		}
	}
	for _, l := range []struct {
		name string
		lc   *LogCount
	}{{sovereign, r.SovereignLog}, {sovereignGov, r.GovernedLog}} {
		lc := l.lc
		if lc == nil {
			continue
		}
		// Every request answered leaves a record (the usage reads
		// themselves may add a few more), and the server dropped none.
		value := fmt.Sprintf("%d records for %d requests answered", lc.Recorded, lc.Answered)
		if lc.Sent != lc.Answered {
			value += fmt.Sprintf(" (%d sent, some cut off by the load generator in an overloaded step)", lc.Sent)
		}
		value += ", " + fmtLost(lc.Lost) + " lost"
		if lc.Error != "" {
			value = lc.Error
		}
		ok := lc.Error == "" && lc.Recorded >= lc.Answered && (lc.Lost == nil || *lc.Lost == 0)
		check(displayName[l.name]+"'s request log keeps a record of every request", value, "records ≥ requests answered, 0 lost", ok)
	}
	for _, gw := range []string{litellm, portkey} {
		if r.target(gw) == nil {
			continue
		}
		for _, p := range []string{"c=1 p50", "c=1 p99"} {
			name := fmt.Sprintf("%s added / Sovereign added, %s, non-streamed", displayName[gw], p)
			target := fmt.Sprintf(">= %gx", cfg.checkRatio)
			var rt *Ratio
			for i := range r.Ratios {
				if r.Ratios[i].Gateway == gw && r.Ratios[i].Mode == "non-stream" && r.Ratios[i].Point == p {
					rt = &r.Ratios[i]
				}
			}
			switch {
			case rt == nil:
				check(name, "not measured", target, false)
			case rt.Value == nil:
				check(name, rt.Note, target, false)
			default:
				check(name, fmtRatio(*rt), target, *rt.Value >= cfg.checkRatio)
			}
		}
	}
	r.Pass = len(r.Checks) > 0
	fmt.Fprintf(w, "\n")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%s: %s = %s (target %s)\n", c.Result, c.Name, c.Value, c.Target)
		if c.Result != "PASS" {
			r.Pass = false
		}
	}
	for _, tr := range r.Targets {
		for _, mr := range tr.Modes {
			for _, s := range append(slices.Clone(mr.Rates), mr.Ladder...) {
				if s.ErrorSample != "" {
					fmt.Fprintf(w, "NOTE: %s %s at %d RPS: %d errors, e.g. %s\n", displayName[tr.Name], mr.Mode, s.Rate, s.Errors, truncate(s.ErrorSample, 160))
				}
			}
			if mr.C1 != nil && mr.C1.ErrorSample != "" {
				fmt.Fprintf(w, "NOTE: %s %s at c=1: %d errors, e.g. %s\n", displayName[tr.Name], mr.Mode, mr.C1.Errors, truncate(mr.C1.ErrorSample, 160))
			}
		}
	}
	if r.Pass {
		fmt.Fprintf(w, "\nRESULT: PASS (all targets met)\n")
	} else {
		fmt.Fprintf(w, "\nRESULT: FAIL (see lines marked FAIL)\n")
	}
	return r.Pass
}

// govDescription says what the governed Sovereign has set up, for the
// report (run.sh configures it; see bench/README.md).
func govDescription(what string) string {
	switch what {
	case "limits":
		return "limit rules (requests and tokens per minute, concurrent requests; tokens per day on the team) on its key, its team and the model, kept in Redis, and no policies"
	case "policies":
		return "three input policies (deployment: PII detection, flag on card or IBAN; team: a model allow-list; key: a max_tokens bound) and no limit rules (Redis configured but unused)"
	case "none":
		return "Redis configured but no limit rules and no policies (a control: the two servers differ only by noise)"
	case "team":
		return "one limit rule on its team with every dimension (requests and tokens per minute, concurrent requests, tokens per day and per month), kept in Redis, " +
			"and three input policies (deployment: PII detection, flag on card or IBAN; team: a model allow-list; key: a max_tokens bound), none of which ever refuses a bench request"
	}
	return "limit rules (requests and tokens per minute, concurrent requests; tokens per day on the team) on its key, its team and the model, kept in Redis, " +
		"and three input policies (deployment: PII detection, flag on card or IBAN; team: a model allow-list; key: a max_tokens bound), none of which ever refuses a bench request"
}

func mapInts(xs []int, f func(int) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func mdEscape(s string) string { return strings.ReplaceAll(truncate(s, 200), "|", "\\|") }
