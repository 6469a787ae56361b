// Package metrics exposes Sovereign's Prometheus metrics: HTTP requests and
// latency by route, tokens by model, and the engine's queue depth and loaded
// models, read at scrape time.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ModelState is what the metrics read of a loaded model.
type ModelState struct {
	ID       string
	State    string
	Inflight int
}

// Metrics holds the collectors.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	records  *prometheus.CounterVec
	// The request log's spool: what it holds, and what it replayed.
	spooledRecords, spooledBytes prometheus.Gauge
	replayed                     prometheus.Counter
	// limits counts refused requests, limit store failures and tokens
	// that could not be charged.
	limitRefused   *prometheus.CounterVec
	limitErrors    *prometheus.CounterVec
	limitUnsettled prometheus.Counter
	decisionsLost  prometheus.Counter
	eventsLost     prometheus.Counter
}

// New registers the collectors; models is called at scrape time for the
// engine gauges (it may be nil).
func New(models func() []ModelState) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sovereign_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sovereign_http_request_duration_seconds", Help: "HTTP request latency by route (streams: until the last byte).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"route"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sovereign_tokens_total", Help: "Tokens processed by model and kind (prompt, completion).",
		}, []string{"model", "kind"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sovereign_model_requests_total", Help: "Inference requests by model and outcome (ok, error), counting failures after a stream started.",
		}, []string{"model", "outcome"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sovereign_request_log_lost_total", Help: "Request records not stored, by reason: buffer_full (the log writer was behind), store_error (the database refused them and no spool could take them), spool_full (the spool was full, in drop mode) or spool_damaged (spooled records that no longer verified on disk). A gap marker in the chain records them.",
		}, []string{"reason"}),
		spooledRecords: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sovereign_request_log_spooled_records", Help: "Request records waiting in the local spool for the database to take them.",
		}),
		spooledBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sovereign_request_log_spooled_bytes", Help: "Size of the request log's local spool on disk (records_spool_bytes bounds it).",
		}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sovereign_request_log_replayed_total", Help: "Spooled request records the database took once it was back.",
		}),
		limitRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sovereign_limit_refused_total", Help: "Requests refused by a rate limit or quota, by dimension.",
		}, []string{"dimension"}),
		limitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sovereign_limit_store_errors_total", Help: "Limit checks the limits store (Redis) failed, by what was done: open (admitted) or closed (refused).",
		}, []string{"mode"}),
		limitUnsettled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sovereign_limit_unsettled_tokens_total", Help: "Tokens used beyond a request's reservation that its tokens-per-minute bucket could not take.",
		}),
		decisionsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sovereign_policy_decisions_lost_total", Help: "Policy decisions not stored (the writer's buffer was full, or the store failed).",
		}),
		eventsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sovereign_events_lost_total", Help: "Events not stored in the event log (the bus's queue was full, or the store failed): GET /v1/events and webhooks never see them.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.tokens, m.outcomes, m.records, m.spooledRecords, m.spooledBytes, m.replayed, m.limitRefused, m.limitErrors, m.limitUnsettled, m.decisionsLost, m.eventsLost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if models != nil {
		reg.MustRegister(&engineCollector{models: models})
	}
	return m
}

// Handler serves the metrics in Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveRequest records one finished request.
func (m *Metrics) ObserveRequest(route, method string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// RecordsDropped counts request records lost to a full log buffer.
func (m *Metrics) RecordsDropped(n int) { m.records.WithLabelValues("buffer_full").Add(float64(n)) }

// RecordsFailed counts request records the store did not take.
func (m *Metrics) RecordsFailed(n int) { m.records.WithLabelValues("store_error").Add(float64(n)) }

// RecordsLost counts request records lost for reason (spool_full,
// spool_damaged).
func (m *Metrics) RecordsLost(reason string, n int) {
	m.records.WithLabelValues(reason).Add(float64(n))
}

// RecordsReplayed counts spooled request records the database took.
func (m *Metrics) RecordsReplayed(n int) { m.replayed.Add(float64(n)) }

// RecordsSpooled sets what the request log's spool holds.
func (m *Metrics) RecordsSpooled(records int, bytes int64) {
	m.spooledRecords.Set(float64(records))
	m.spooledBytes.Set(float64(bytes))
}

// AddTokens counts prompt and completion tokens for model.
func (m *Metrics) AddTokens(model string, prompt, completion int) {
	m.tokens.WithLabelValues(model, "prompt").Add(float64(prompt))
	m.tokens.WithLabelValues(model, "completion").Add(float64(completion))
}

// ObserveModel counts one inference request to model and how it ended.
func (m *Metrics) ObserveModel(model string, failed bool) {
	outcome := "ok"
	if failed {
		outcome = "error"
	}
	m.outcomes.WithLabelValues(model, outcome).Inc()
}

var (
	queueDesc  = prometheus.NewDesc("sovereign_model_requests_inflight", "Requests running or queued per loaded model.", []string{"model"}, nil)
	loadedDesc = prometheus.NewDesc("sovereign_models_loaded", "Models loaded (state ready) in runner processes.", nil, nil)
)

type engineCollector struct{ models func() []ModelState }

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDesc
	ch <- loadedDesc
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	loaded := 0
	for _, s := range c.models() {
		if s.State == "ready" {
			loaded++
		}
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(s.Inflight), s.ID)
	}
	ch <- prometheus.MustNewConstMetric(loadedDesc, prometheus.GaugeValue, float64(loaded))
}

// LimitsRefused counts a request refused by a limit.
func (m *Metrics) LimitsRefused(dimension string) { m.limitRefused.WithLabelValues(dimension).Inc() }

// LimitsBackendError counts a failed limit check and what was done.
func (m *Metrics) LimitsBackendError(mode string) { m.limitErrors.WithLabelValues(mode).Inc() }

// LimitsUnsettled counts tokens a bucket could not be charged.
func (m *Metrics) LimitsUnsettled(tokens int64) { m.limitUnsettled.Add(float64(tokens)) }

// DecisionsLost counts policy decisions that were not stored.
func (m *Metrics) DecisionsLost(n int) { m.decisionsLost.Add(float64(n)) }

// EventsLost counts events that were not stored in the event log.
func (m *Metrics) EventsLost(n int) { m.eventsLost.Add(float64(n)) }
