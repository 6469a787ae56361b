package catalog

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Observation is what the server measured of one request to a model.
type Observation struct {
	// Latency is from the request's arrival to its last byte.
	Latency time.Duration
	// TTFT is the time to the first generated text (0 when none, or not a
	// generation).
	TTFT time.Duration
	// CompletionTokens and Decode (the time from the first to the last
	// token) give the decode speed.
	CompletionTokens int
	Decode           time.Duration
	// Failed marks a request that ended in an error, including one that
	// failed after its response had started.
	Failed bool
}

// Figures are a model's live figures over the window.
type Figures struct {
	Window   string `json:"window"`
	Requests int    `json:"requests"`
	Errors   int    `json:"errors"`
	// LatencyP50Ms and TTFTP50Ms are medians in milliseconds (0 with no
	// data); DecodeTokensPerSecond is completion tokens over decode time.
	LatencyP50Ms          float64 `json:"latency_p50_ms"`
	TTFTP50Ms             float64 `json:"ttft_p50_ms"`
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
}

// windowMinutes is how far back the figures look.
const windowMinutes = 60

// samplesPerMinute bounds the latencies kept per model and minute.
const samplesPerMinute = 256

type bucket struct {
	minute   int64
	requests int
	errors   int
	latency  []float32 // ms
	ttft     []float32 // ms
	tokens   int
	decode   time.Duration
}

type series struct {
	buckets [windowMinutes]bucket
}

// Stats keeps per-model figures over the last hour in one-minute buckets.
// It is safe for concurrent use.
type Stats struct {
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu     sync.Mutex
	models map[string]*series
}

// NewStats returns empty statistics.
func NewStats() *Stats { return &Stats{Now: time.Now, models: map[string]*series{}} }

// Record adds one observation for model.
func (s *Stats) Record(model string, o Observation) {
	min := s.Now().Unix() / 60
	s.mu.Lock()
	defer s.mu.Unlock()
	sr := s.models[model]
	if sr == nil {
		sr = &series{}
		s.models[model] = sr
	}
	b := &sr.buckets[min%windowMinutes]
	if b.minute != min {
		*b = bucket{minute: min, latency: b.latency[:0], ttft: b.ttft[:0]}
	}
	b.requests++
	if o.Failed {
		b.errors++
		return
	}
	// Reservoir-free sampling: keep the first samples of the minute.
	if len(b.latency) < samplesPerMinute {
		b.latency = append(b.latency, float32(o.Latency.Seconds()*1000))
	}
	if o.TTFT > 0 && len(b.ttft) < samplesPerMinute {
		b.ttft = append(b.ttft, float32(o.TTFT.Seconds()*1000))
	}
	if o.CompletionTokens > 1 && o.Decode > 0 {
		// Decode speed counts the tokens after the first, over the time
		// from the first to the last.
		b.tokens += o.CompletionTokens - 1
		b.decode += o.Decode
	}
}

// Get returns model's figures over the last hour.
func (s *Stats) Get(model string) Figures {
	f := Figures{Window: "1h"}
	min := s.Now().Unix() / 60
	s.mu.Lock()
	defer s.mu.Unlock()
	sr := s.models[model]
	if sr == nil {
		return f
	}
	var lat, ttft []float32
	var tokens int
	var decode time.Duration
	for i := range sr.buckets {
		b := &sr.buckets[i]
		if b.minute <= min-windowMinutes || b.minute > min {
			continue
		}
		f.Requests += b.requests
		f.Errors += b.errors
		lat = append(lat, b.latency...)
		ttft = append(ttft, b.ttft...)
		tokens += b.tokens
		decode += b.decode
	}
	f.LatencyP50Ms = median(lat)
	f.TTFTP50Ms = median(ttft)
	if decode > 0 {
		f.DecodeTokensPerSecond = round(float64(tokens)/decode.Seconds(), 1)
	}
	return f
}

func median(v []float32) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	m := float64(v[len(v)/2])
	if len(v)%2 == 0 {
		m = (float64(v[len(v)/2-1]) + m) / 2
	}
	return round(m, 2)
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
