// Package httpapi is Sovereign's HTTP API: routing, request limits, the
// OpenAI-compatible inference endpoints and model listing. Handlers return
// errors; one adapter (handle) renders them as OpenAI error envelopes via
// package apierr. Translation to and from OpenAI shapes is package openai's.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/metrics"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/webhook"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// Server holds the API's dependencies.
type Server struct {
	// Ops are the API's operations that batch lines share with the
	// handlers (the generation service, sources, answers, stored
	// responses).
	// Its Gen is the generation service every model call goes through
	// (nil: Handler builds one over the fields below).
	*Ops
	// Models resolves model names and administers the catalog.
	Models ModelCatalog
	// Auth checks API keys; every /v1 route requires a key with the
	// route's scope.
	Auth Authenticator
	// Keys administers keys and teams (the /v1/keys and /v1/teams routes).
	Keys KeyAdmin
	// Extract reads uploaded files (nil: uploads are refused).
	Extract Extractor
	// DefaultEmbeddingModel is a new collection's embedding model when the
	// request names none.
	DefaultEmbeddingModel string
	// Records, when set, takes one record per API call (the request log).
	Records RecordLogger
	// RecordStore reads the request log (GET /v1/logs; nil: those routes
	// answer 404).
	RecordStore records.Store
	// Limits, when set, enforces rate limits and quotas on inference
	// routes and serves /v1/limits.
	Limits Limiter
	// Capture says which teams' records keep prompts and outputs (nil:
	// none).
	Capture CaptureSet
	// Policies, when set, evaluates policies on inference requests and
	// answers and serves /v1/policies and /v1/policy_decisions.
	Policies Policies
	// Events, when set, serves GET /v1/events from the event log (nil:
	// that route answers 404).
	Events EventLog
	// Stop, when closed, ends the open event streams: the server is
	// shutting down (clients resume elsewhere with Last-Event-ID).
	Stop <-chan struct{}
	// Metrics, when set, records requests and tokens and serves /metrics.
	Metrics *metrics.Metrics
	// Ready reports whether the server can serve (GET /readyz); nil: ready.
	// It answers for the server itself (shutting down); ReadyChecks, for
	// what it depends on.
	Ready func(ctx context.Context) error
	// ReadyChecks are the dependencies GET /readyz checks and reports one
	// by one (the database, Redis).
	ReadyChecks []ReadyCheck
	// MaxBody bounds request bodies (default 8 MiB).
	MaxBody int64

	mux *http.ServeMux
	// Batches serves files and batches (OpenAI's Batch API; nil: those
	// routes answer 404).
	Batches BatchService
	// Workflows defines and runs workflows (nil: the routes answer 404).
	Workflows *workflow.Service
	// Webhooks manages the teams' webhooks and their deliveries (nil:
	// the routes answer 404).
	Webhooks *webhook.Service
	// Idempotency, when set, makes the create routes honour an
	// Idempotency-Key header (docs/idempotency.md).
	Idempotency IdempotencyService
	// handler is the whole API as Handler built it, for Invoke.
	handler http.Handler
}

// NewGenerator is the generation service over the server's catalog,
// policies, limits, capture settings, metrics, request log and keys.
func (s *Server) NewGenerator() *generate.Service {
	g := &generate.Service{Models: s.Models, Policies: s.Policies, Limits: s.Limits, Capture: s.Capture, Records: s.Records, Keys: s.Keys}
	if s.Metrics != nil {
		g.Metrics = s.Metrics // a nil *Metrics must stay a nil interface
	}
	return g
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// CaptureSet knows which teams capture their prompts and outputs.
type CaptureSet interface {
	Enabled(team string) bool
	Reload(ctx context.Context) error
}

// RecordLogger takes request records; it must not block.
type RecordLogger interface {
	Log(records.Record)
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	if s.Ops == nil {
		s.Ops = &Ops{}
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.MaxBody <= 0 {
		s.MaxBody = 8 << 20
	}
	if s.Gen == nil {
		s.Gen = s.NewGenerator()
	}
	mux := http.NewServeMux()
	s.mux = mux
	route := func(pattern string, scope auth.Scope, h handlerFunc) { mux.Handle(pattern, s.handle(scope, h)) }
	alive := func(w http.ResponseWriter, r *http.Request) error {
		return wire.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
	// /livez is the name Kubernetes' own components use for liveness
	// (the Helm chart's probe); /healthz stays for existing probes.
	route("GET /healthz", public, alive)
	route("GET /livez", public, alive)
	route("GET /readyz", public, s.readyz)
	if s.Metrics != nil {
		mux.Handle("GET /metrics", s.Metrics.Handler())
	}
	for _, rt := range s.routes() {
		route(rt.pattern, rt.scope, rt.h)
	}
	route("/", public, s.notFound)
	s.handler = s.observe(mux)
	return s.handler
}

// public marks routes that need no API key.
const public auth.Scope = ""

// anyKey is the "scope" of a route every valid key may call (GET /v1/me:
// who am I).
const anyKey auth.Scope = "(any key)"

type apiRoute struct {
	pattern string
	scope   auth.Scope
	h       handlerFunc
}

// routes is every authenticated route with the scope it requires.
func (s *Server) routes() []apiRoute {
	return []apiRoute{
		{"GET /v1/models", auth.ScopeModelsRead, s.listModels},
		{"GET /v1/models/{id}", auth.ScopeModelsRead, s.getModel},
		{"POST /v1/models/{id}", auth.ScopeModelsWrite, s.idempotent(s.createModel)},
		{"PATCH /v1/models/{id}", auth.ScopeModelsWrite, s.updateModel},
		{"DELETE /v1/models/{id}", auth.ScopeModelsWrite, s.deleteModel},
		{"POST /v1/models/{id}/load", auth.ScopeModelsWrite, s.loadModel},
		{"POST /v1/models/{id}/unload", auth.ScopeModelsWrite, s.unloadModel},
		{"POST /v1/models/compare", auth.ScopeInference, s.compareModels},
		{"POST /v1/chat/completions", auth.ScopeInference, s.chatCompletions},
		{"POST /v1/completions", auth.ScopeInference, s.completions},
		{"POST /v1/embeddings", auth.ScopeInference, s.embeddings},
		{"POST /v1/responses", auth.ScopeInference, s.createResponse},
		{"GET /v1/responses/{id}", auth.ScopeInference, s.getResponse},
		{"DELETE /v1/responses/{id}", auth.ScopeInference, s.deleteResponse},
		{"GET /v1/responses/{id}/input_items", auth.ScopeInference, s.listInputItems},
		{"POST /v1/tokenize", auth.ScopeInference, s.tokenize},
		{"POST /v1/detokenize", auth.ScopeInference, s.detokenize},
		{"POST /v1/rerank", auth.ScopeInference, s.rerank},
		{"POST /v2/rerank", auth.ScopeInference, s.rerankV2}, // Cohere's v2 client (a vendor route)
		// Administrators create any key; a person signed in to a team
		// their own, within their role (auth.Service.CreateKeyAs).
		{"POST /v1/keys", auth.ScopeKeysRead, s.idempotent(s.createKey)},
		{"GET /v1/keys", auth.ScopeKeysRead, s.listKeys},
		{"GET /v1/keys/{id}", auth.ScopeKeysRead, s.getKey},
		{"DELETE /v1/keys/{id}", auth.ScopeAdmin, s.revokeKey},
		{"POST /v1/keys/{id}/rotate", auth.ScopeAdmin, s.idempotent(s.rotateKey)},
		{"POST /v1/teams", auth.ScopeAdmin, s.idempotent(s.createTeam)},
		{"GET /v1/teams", auth.ScopeAdmin, s.listTeams},
		{"PATCH /v1/teams/{id}", auth.ScopeAdmin, s.updateTeam},
		{"GET /v1/teams/{id}/members", auth.ScopeAdmin, s.listMembers},
		{"PUT /v1/teams/{id}/members/{user_id}", auth.ScopeAdmin, s.putMember},
		{"DELETE /v1/teams/{id}/members/{user_id}", auth.ScopeAdmin, s.deleteMember},
		{"POST /v1/users", auth.ScopeAdmin, s.idempotent(s.createUser)},
		{"GET /v1/users", auth.ScopeAdmin, s.listUsers},
		{"GET /v1/users/{id}", auth.ScopeAdmin, s.getUser},
		{"POST /v1/users/{id}", auth.ScopeAdmin, s.updateUser},
		{"GET /v1/me", anyKey, s.me},
		{"POST /v1/invitations", auth.ScopeAdmin, s.createInvitation},
		{"GET /v1/invitations", auth.ScopeAdmin, s.listInvitations},
		{"DELETE /v1/invitations/{id}", auth.ScopeAdmin, s.deleteInvitation},
		{"POST /v1/collections", sourcesScope, s.idempotent(s.createCollection)},
		{"GET /v1/collections", sourcesScope, s.listCollections},
		{"GET /v1/collections/{id}", sourcesScope, s.getCollection},
		{"DELETE /v1/collections/{id}", sourcesScope, s.deleteCollection},
		{"POST /v1/collections/{id}/documents", sourcesScope, s.idempotent(s.createDocument)},
		{"GET /v1/collections/{id}/documents", sourcesScope, s.listDocuments},
		{"GET /v1/collections/{id}/documents/{doc}", sourcesScope, s.getDocument},
		{"DELETE /v1/collections/{id}/documents/{doc}", sourcesScope, s.deleteDocument},
		{"POST /v1/collections/{id}/search", sourcesScope, s.searchCollection},
		{"GET /v1/source_links", sourcesScope, s.listSourceLinks},
		{"GET /v1/logs", auth.ScopeRecordsRead, s.listLogs},
		{"GET /v1/logs/export", auth.ScopeRecordsRead, s.exportLogs},
		{"GET /v1/logs/checkpoints", auth.ScopeRecordsRead, s.listCheckpoints},
		{"GET /v1/logs/{id}", auth.ScopeRecordsRead, s.getLog},
		{"GET /v1/logs/{id}/proof", auth.ScopeRecordsRead, s.logProof},
		{"GET /v1/usage", auth.ScopeRecordsRead, s.usage},
		{"GET /v1/policies", auth.ScopeAdmin, s.listPolicies},
		{"POST /v1/policies", auth.ScopeAdmin, s.idempotent(s.createPolicy)},
		{"POST /v1/policies/test", auth.ScopeAdmin, s.testPolicy},
		{"GET /v1/policies/{id}", auth.ScopeAdmin, s.getPolicy},
		{"PUT /v1/policies/{id}", auth.ScopeAdmin, s.updatePolicy},
		{"DELETE /v1/policies/{id}", auth.ScopeAdmin, s.deletePolicy},
		{"GET /v1/policy_decisions", auth.ScopeRecordsRead, s.listDecisions},
		{"GET /v1/policy_decisions/{id}", auth.ScopeRecordsRead, s.getDecision},
		{"GET /v1/events", auth.ScopeInference, s.streamEvents},
		{"POST /v1/files", auth.ScopeInference, s.idempotent(s.uploadFile)},
		{"GET /v1/files", auth.ScopeInference, s.listFiles},
		{"GET /v1/files/{id}", auth.ScopeInference, s.getFile},
		{"DELETE /v1/files/{id}", auth.ScopeInference, s.deleteFile},
		{"GET /v1/files/{id}/content", auth.ScopeInference, s.fileContent},
		{"POST /v1/batches", auth.ScopeInference, s.idempotent(s.createBatch)},
		{"GET /v1/batches", auth.ScopeInference, s.listBatches},
		{"GET /v1/batches/{id}", auth.ScopeInference, s.getBatch},
		{"POST /v1/batches/{id}/cancel", auth.ScopeInference, s.cancelBatch},
		{"GET /v1/limits", auth.ScopeInference, s.listLimits},
		{"GET /v1/limits/rules", auth.ScopeAdmin, s.listLimitRules},
		{"GET /v1/limits/rules/{scope}/{subject...}", auth.ScopeAdmin, s.getLimitRule},
		{"PUT /v1/limits/rules/{scope}/{subject...}", auth.ScopeAdmin, s.putLimitRule},
		{"DELETE /v1/limits/rules/{scope}/{subject...}", auth.ScopeAdmin, s.deleteLimitRule},
		{"POST /v1/workflows", auth.ScopeWorkflows, s.idempotent(s.createWorkflow)},
		{"GET /v1/workflows", auth.ScopeWorkflows, s.listWorkflows},
		{"GET /v1/workflows/{id}", auth.ScopeWorkflows, s.getWorkflow},
		{"PUT /v1/workflows/{id}", auth.ScopeWorkflows, s.updateWorkflow},
		{"DELETE /v1/workflows/{id}", auth.ScopeWorkflows, s.deleteWorkflow},
		{"POST /v1/workflows/{id}/runs", auth.ScopeWorkflows, s.idempotent(s.startRun)},
		{"GET /v1/workflow_runs", auth.ScopeWorkflows, s.listRuns},
		{"GET /v1/workflow_runs/{id}", auth.ScopeWorkflows, s.getRun},
		{"POST /v1/workflow_runs/{id}/cancel", auth.ScopeWorkflows, s.cancelRun},
		{"GET /v1/workflow_runs/{id}/events", auth.ScopeWorkflows, s.runEvents},
		{"GET /v1/approvals", auth.ScopeApprovals, s.listApprovals},
		{"GET /v1/approvals/{id}", auth.ScopeApprovals, s.getApproval},
		{"POST /v1/approvals/{id}", auth.ScopeApprovals, s.idempotent(s.decideApproval)},
		{"POST /v1/webhooks", auth.ScopeWebhooks, s.idempotent(s.createWebhook)},
		{"GET /v1/webhooks", auth.ScopeWebhooks, s.listWebhooks},
		{"GET /v1/webhooks/{id}", auth.ScopeWebhooks, s.getWebhook},
		{"PATCH /v1/webhooks/{id}", auth.ScopeWebhooks, s.updateWebhook},
		{"DELETE /v1/webhooks/{id}", auth.ScopeWebhooks, s.deleteWebhook},
		{"POST /v1/webhooks/{id}/rotate_secret", auth.ScopeWebhooks, s.idempotent(s.rotateWebhookSecret)},
		{"GET /v1/webhooks/{id}/deliveries", auth.ScopeWebhooks, s.listWebhookDeliveries},
		{"GET /v1/webhooks/{id}/deliveries/{delivery_id}", auth.ScopeWebhooks, s.getWebhookDelivery},
		{"POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", auth.ScopeWebhooks, s.redeliverWebhook},
	}
}

// ReadyCheck is one dependency GET /readyz checks.
type ReadyCheck struct {
	// Name names it in the answer's "checks" ("database", "redis").
	Name string
	// Check returns nil when the dependency answers.
	Check func(ctx context.Context) error
	// Degrades says the server still serves without the dependency, less
	// well (Redis when rate limits fail open: requests are admitted
	// unchecked): its failure makes the server "degraded" (200, still
	// ready) rather than "not_ready" (503). Impact says what is lost.
	Degrades bool
	Impact   string
}

// readyTimeout bounds each readiness check: a dependency that does not
// answer within it is unavailable, so that a probe gets an answer.
const readyTimeout = 2 * time.Second

// readiness is GET /readyz's answer.
type readiness struct {
	// Status is "ready", "degraded" (ready, a dependency it can do
	// without is down) or "not_ready".
	Status string `json:"status"`
	// Reason says what failed (absent when nothing did).
	Reason string `json:"reason,omitempty"`
	// Checks holds each dependency's state: "ok" or "unavailable".
	Checks map[string]string `json:"checks,omitempty"`
}

// readyz answers 200 when the server can serve — "ready", or "degraded"
// when only a dependency it can do without is down — and 503
// "not_ready" when it is shutting down or a dependency it needs is down.
// The checks run at once, each within readyTimeout.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	out := readiness{Status: "ready"}
	var reasons []string
	if s.Ready != nil {
		if err := s.Ready(r.Context()); err != nil {
			out.Status = "not_ready"
			reasons = append(reasons, err.Error())
		}
	}
	errs := make([]error, len(s.ReadyChecks))
	var wg sync.WaitGroup
	for i, c := range s.ReadyChecks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			errs[i] = c.Check(ctx)
		}()
	}
	wg.Wait()
	if len(s.ReadyChecks) > 0 {
		out.Checks = make(map[string]string, len(s.ReadyChecks))
	}
	var causes []any
	for i, c := range s.ReadyChecks {
		if errs[i] == nil {
			out.Checks[c.Name] = "ok"
			continue
		}
		out.Checks[c.Name] = "unavailable"
		// The body says which dependency and what it means; the driver's
		// text (hosts, ports, users) goes to the log only: /readyz needs
		// no key.
		reason := c.Name + ": unavailable"
		if c.Impact != "" {
			reason += " (" + c.Impact + ")"
		}
		reasons = append(reasons, reason)
		causes = append(causes, c.Name, errs[i].Error())
		switch {
		case !c.Degrades:
			out.Status = "not_ready"
		case out.Status == "ready":
			out.Status = "degraded"
		}
	}
	out.Reason = strings.Join(reasons, "; ")
	status := http.StatusOK
	switch out.Status {
	case "not_ready":
		status = http.StatusServiceUnavailable
		s.Log.Warn("not ready", append([]any{"reason", out.Reason}, causes...)...)
	case "degraded":
		s.Log.Warn("ready, degraded", append([]any{"reason", out.Reason}, causes...)...)
	}
	return wire.JSON(w, status, out)
}

var versionPath = regexp.MustCompile(`^/v(\d+)(/|$)`)

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	if m := versionPath.FindStringSubmatch(r.URL.Path); m != nil && m[1] != "1" {
		return apierr.New(apierr.UnsupportedAPIVersion, fmt.Sprintf("API version v%s is not supported; this server serves /v1", m[1]))
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return apierr.New(apierr.MethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
	}
	return apierr.New(apierr.NotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
}

// handle adapts a handlerFunc: it checks the API key and scope, bounds the
// body, turns a returned error or a panic into an OpenAI envelope, and logs
// server errors.
func (s *Server) handle(scope auth.Scope, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.bodyLimit(r))
		rw := &trackingWriter{ResponseWriter: w}
		if scope != public {
			var err error
			if r, err = s.authenticate(r, scope); err != nil {
				info(r.Context()).NoteError(err)
				apierr.Write(rw, err)
				return
			}
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Log.Error("panic in handler", "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !rw.wrote {
					apierr.Write(rw, apierr.New(apierr.Internal, "internal server error"))
				}
			}
		}()
		err := h(rw, r)
		if err == nil {
			return
		}
		info(r.Context()).NoteError(err)
		if rw.wrote {
			// Streaming already started; the handler reported in-band. The
			// access log line records the failure.
			if call, ok := r.Context().Value(infoCtx).(*generate.Call); ok {
				call.Fail(err)
			} else {
				s.Log.Warn("request failed after response started", "path", r.URL.Path, "err", err)
			}
			return
		}
		e := apierr.Write(rw, err)
		switch {
		case e.Status() == http.StatusServiceUnavailable:
			s.Log.Warn("request refused", "path", r.URL.Path, "code", e.Code, "err", e.Err)
		case e.Status() >= 500:
			s.Log.Error("request failed", "path", r.URL.Path, "code", e.Code, "err", e.Err)
		}
	})
}

// trackingWriter records whether the response has started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Flush passes through to the underlying writer.
func (t *trackingWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// streamTimeout bounds one generation, so a stuck request cannot hold a slot
// forever.
const streamTimeout = 30 * time.Minute

func withTimeout(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), streamTimeout)
}
