// Package durable is Sovereign's durable execution engine: the background
// work that must outlive the request that started it and the process that
// runs it — document ingestion now, workflow runs, batch lines and webhook
// deliveries next — runs here as workflows of checkpointed steps.
//
// It is DBOS Transact (github.com/dbos-inc/dbos-transact-golang), embedded:
// its tables live in the application's own database (SQLite: the same file,
// through a handle of its own; PostgreSQL: the same database, schema
// "dbos"), so there is no other server to run. A workflow is a Go function
// registered by name; each step's result is stored when the step ends, and
// a workflow interrupted by a crash resumes after its last finished step —
// at the next start of the same server, or, on PostgreSQL, on another
// server once this one's heartbeat is stale (takeover.go). See
// docs/durable.md for the choice of DBOS and what it guarantees.
package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	// The SQLite driver registration DBOS needs for a sqlite: URL (it
	// registers modernc.org/sqlite's error codes; the driver itself is the
	// one the store uses).
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
)

// Version is the version of the registered workflows' code. DBOS resumes
// only workflows started by the same version, so it changes only when a
// workflow's steps change in a way an interrupted run could not resume
// through (docs/durable.md, "Upgrades").
const Version = "sovereign-durable-1"

// Context is a running workflow's context: steps, sleeps and messages take
// it.
type Context = dbos.Context

// Config configures an Engine.
type Config struct {
	// DatabaseURL is the application's database: a SQLite path (plain,
	// sqlite:path or sqlite:///path) or a postgres:// URL.
	DatabaseURL string
	// ExecutorID names this server among those sharing a PostgreSQL
	// database; it must be stable across restarts (a server resumes its
	// own interrupted work at start) and unique among live servers. On
	// SQLite, which one server uses, it is always "local".
	ExecutorID string
	// Schema is the PostgreSQL schema of DBOS's tables (default: "dbos",
	// or "<schema>_dbos" when DatabaseURL sets a search_path, so that
	// applications sharing a database in schemas of their own — the
	// tests do — keep their durable work apart too).
	Schema string
	// Heartbeat is how often a server on PostgreSQL says it is alive
	// (default 2 s), and DeadAfter how long after its last heartbeat
	// another server takes over its unfinished workflows (default 15 s).
	Heartbeat, DeadAfter time.Duration
	// SkipMigrations leaves DBOS's tables as they are (serve with
	// migrate_on_start false: `sovereign migrate` owns them): New fails
	// when they are behind this build, and accepts them newer (a newer
	// release migrated them during a rolling upgrade).
	SkipMigrations bool
	Log            *slog.Logger
}

// Engine runs durable workflows.
type Engine struct {
	cfg      Config
	log      *slog.Logger
	dctx     dbos.Context
	postgres bool

	mu       sync.Mutex
	launched bool
	queues   map[string]dbos.Queue
	starts   map[string]func(ctx context.Context, q dbos.Queue, id string, input any) error
	// active tells, by workflow name, whether the object a workflow works
	// on still wants it (Resumable).
	active map[string]func(ctx context.Context, id string) (bool, error)

	stop context.CancelFunc
	done chan struct{}
}

// New opens the engine on cfg's database (creating or migrating DBOS's
// tables). Register workflows and queues, then Launch.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 2 * time.Second
	}
	if cfg.DeadAfter <= 0 {
		cfg.DeadAfter = 15 * time.Second
	}
	e := &Engine{cfg: cfg, log: log, queues: map[string]dbos.Queue{}, starts: map[string]func(context.Context, dbos.Queue, string, any) error{},
		active: map[string]func(context.Context, string) (bool, error){}}
	dc := dbos.Config{
		AppName:            "sovereign",
		ApplicationVersion: Version,
		// DBOS logs every workflow's start and every retried step at
		// info and error level; the application keeps its warnings.
		Logger: slog.New(minLevel{log.Handler(), slog.LevelWarn}).With("component", "durable"),
	}
	switch u := cfg.DatabaseURL; {
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		e.postgres = true
		if cfg.Schema == "" {
			cfg.Schema = schemaFor(u)
		}
		e.cfg.Schema = cfg.Schema
		dc.DatabaseURL, dc.DatabaseSchema = u, cfg.Schema
		if cfg.ExecutorID == "" {
			cfg.ExecutorID, _ = os.Hostname()
			e.cfg.ExecutorID = cfg.ExecutorID
		}
		dc.ExecutorID = cfg.ExecutorID
	default:
		path := strings.TrimPrefix(strings.TrimPrefix(u, "sqlite://"), "sqlite:")
		if path == "" || path == ":memory:" {
			return nil, errors.New("durable: the durable engine needs a database file (not an in-memory database)")
		}
		dc.DatabaseURL, dc.ExecutorID = "sqlite:"+path, "local"
	}
	if cfg.SkipMigrations {
		st, err := ReadSchema(ctx, cfg.DatabaseURL, cfg.Schema)
		if err != nil {
			return nil, err
		}
		if st.Behind() {
			return nil, fmt.Errorf("durable: the durable engine's schema is behind this release: %s; run `sovereign migrate` first (or start serve with migrate_on_start true)", st)
		}
		dc.SkipMigrations = true
	} else if e.postgres {
		// DBOS creates and migrates its schema on its own, and two
		// servers doing it at once collide (CREATE SCHEMA IF NOT EXISTS
		// is not safe against a concurrent one): servers take turns.
		unlock, err := migrationLock(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	// The engine's life is Close's to end, not ctx's: DBOS treats the
	// cancellation of the context it was built on as a user's cancel of
	// every running workflow (they end CANCELLED, and nothing resumes
	// CANCELLED work), while its own Shutdown leaves them PENDING for this
	// server's next start or another server's takeover. serve's context is
	// cancelled by SIGTERM, so building on it made every rolling restart
	// strand the work in flight (issue 27).
	dctx, err := dbos.NewContext(context.WithoutCancel(ctx), dc)
	if err != nil {
		return nil, fmt.Errorf("durable: %w", err)
	}
	e.dctx = dctx
	return e, nil
}

// Register makes fn runnable as the workflow name. Call it before Launch.
// fn's input is stored as JSON and given back to it when the workflow
// resumes after a crash; its steps run through Step.
func Register[P any](e *Engine, name string, fn func(Context, P) error) {
	wf := func(ctx dbos.Context, in P) (struct{}, error) { return struct{}{}, fn(ctx, in) }
	// DBOS keys its registry by the function's name, which this one
	// wrapper shares across workflows of the same input type: each is
	// registered as an instance of its own name.
	dbos.RegisterWorkflow(e.dctx, wf, dbos.WithWorkflowName(name), dbos.WithInstance(instance(name)))
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts[name] = func(ctx context.Context, q dbos.Queue, id string, input any) error {
		in, ok := input.(P)
		if !ok {
			return fmt.Errorf("durable: workflow %s takes %T, not %T", name, *new(P), input)
		}
		opts := []dbos.WorkflowOption{dbos.WithWorkflowID(id), dbos.WithRunInstance(instance(name))}
		if q != nil {
			opts = append(opts, dbos.WithQueue(q))
		}
		// The id makes a start idempotent: starting a workflow id that
		// exists returns it, whatever its state. The workflow runs on the
		// engine's own context, not the caller's (a request's, which ends
		// before the work does): Close's shutdown then interrupts it like
		// a queued one, leaving it PENDING, instead of letting it run on
		// while the database closes under it.
		_, err := dbos.RunWorkflow(e.dctx, wf, in, opts...)
		return err
	}
}

// instance names a registered workflow for DBOS (ConfiguredInstance).
type instance string

func (i instance) ConfigName() string { return string(i) }

// Queue declares a queue whose workflows run at most concurrency at a
// time on each server (0: no bound).
func (e *Engine) Queue(name string, concurrency int) error {
	opts := []dbos.QueueOption{dbos.WithQueueBasePollingInterval(200 * time.Millisecond)}
	if concurrency > 0 {
		opts = append(opts, dbos.WithWorkerConcurrency(concurrency))
	}
	q, err := dbos.RegisterQueue(e.dctx, name, opts...)
	if err != nil {
		return fmt.Errorf("durable: queue %s: %w", name, err)
	}
	e.mu.Lock()
	e.queues[name] = q
	e.mu.Unlock()
	return nil
}

// Launch starts running workflows: this server's interrupted ones resume,
// and on PostgreSQL the heartbeat and the takeover of dead servers' work
// begin.
func (e *Engine) Launch(ctx context.Context) error {
	loop, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stop, e.done = stop, make(chan struct{})
	var t *takeover
	if e.postgres {
		var err error
		if t, err = openTakeover(ctx, e); err != nil {
			stop()
			close(e.done)
			return err
		}
	}
	if err := dbos.Launch(e.dctx); err != nil {
		stop()
		if t != nil {
			t.db.Close()
		}
		close(e.done)
		return fmt.Errorf("durable: %w", err)
	}
	e.mu.Lock()
	e.launched = true
	e.mu.Unlock()
	n, err := e.repair(ctx, t)
	if err != nil {
		e.log.Warn("durable: resuming work an earlier shutdown cancelled", "err", err)
	} else if n > 0 {
		e.log.Info("durable: resumed work an earlier shutdown had cancelled", "workflows", n)
	}
	if t != nil {
		go func() {
			defer close(e.done)
			t.run(loop)
		}()
	} else {
		close(e.done)
	}
	return nil
}

// Resumable says how to tell whether the object a workflow of name works
// on still wants the work: active(ctx, id) is given the workflow's id and
// reports false once the object is gone, finished or cancelled by a user.
// Launch's repair pass resumes a CANCELLED workflow of name only when
// active says so (see repair).
func (e *Engine) Resumable(name string, active func(ctx context.Context, id string) (bool, error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active[name] = active
}

// repair resumes the workflows that a shutdown, not a user, cancelled.
// Versions before issue 27 built DBOS on serve's signal context, so a
// SIGTERM cancelled every running workflow as if a user had: those
// workflows sit CANCELLED while their document still says processing,
// their batch in_progress, their run running. A workflow is CANCELLED by
// a user only through Cancel, and every caller of Cancel (workflow runs)
// marks its object cancelled first; so a CANCELLED workflow whose object
// is still active was cut by a shutdown, and resumes after its last
// finished step. The pass runs at every Launch: once the stranded work is
// back, it finds nothing (a shutdown no longer cancels). On PostgreSQL it
// holds the takeover lock, so two servers starting together do not resume
// the same workflow twice.
func (e *Engine) repair(ctx context.Context, t *takeover) (int, error) {
	e.mu.Lock()
	names := make([]string, 0, len(e.active))
	for n := range e.active {
		names = append(names, n)
	}
	e.mu.Unlock()
	if len(names) == 0 {
		return 0, nil
	}
	if t != nil {
		tx, err := t.db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, takeoverLock); err != nil {
			return 0, err
		}
	}
	ws, err := dbos.ListWorkflows(e.dctx, dbos.WithFilterStatus(dbos.WorkflowStatusCancelled), dbos.WithFilterName(names...),
		dbos.WithFilterAppVersion(Version), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, w := range ws {
		e.mu.Lock()
		active := e.active[w.Name]
		e.mu.Unlock()
		ok, err := active(ctx, w.ID)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", w.ID, err)
		}
		if ok {
			ids = append(ids, w.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := dbos.ResumeWorkflows[any](e.dctx, ids); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// Start starts the workflow name with input under id, on queue (""
// runs it at once, not queued). Starting an id that exists does nothing:
// callers derive ids from what the work is about ("ingest:doc_…"), so a
// repeated start — a retried request, a sweep after a crash — cannot run
// the work twice.
func (e *Engine) Start(ctx context.Context, queue, name, id string, input any) error {
	e.mu.Lock()
	start, ok := e.starts[name]
	q, qok := e.queues[queue]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("durable: no workflow %q", name)
	}
	if queue != "" && !qok {
		return fmt.Errorf("durable: no queue %q", queue)
	}
	return start(ctx, q, id, input)
}

// Status is a workflow's state: "PENDING" (running or to resume),
// "ENQUEUED", "SUCCESS", "ERROR", "CANCELLED", …; "" when there is no
// workflow of that id.
func (e *Engine) Status(ctx context.Context, id string) (string, error) {
	ws, err := dbos.ListWorkflows(e.dctx, dbos.WithFilterWorkflowIDs(id), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil || len(ws) == 0 {
		return "", err
	}
	return string(ws[0].Status), nil
}

// StepOptions tune a step: Retries more attempts after a failure (0: none),
// the first after Backoff (default 100 ms), doubling up to MaxBackoff
// (default 5 s). Retryable, when set, decides whether a failure is worth
// another attempt (a 400 is not; a 429 or a 503 is): false ends the step
// with that error at once.
type StepOptions struct {
	Retries             int
	Backoff, MaxBackoff time.Duration
	Retryable           func(error) bool
}

// Step runs fn as the step name of the workflow ctx runs: once, its result
// stored; a resumed workflow gets the stored result instead of running it
// again. A step interrupted by a crash runs again, so fn must be safe to
// repeat.
func Step[R any](ctx Context, name string, fn func(context.Context) (R, error), o StepOptions) (R, error) {
	opts := []dbos.StepOption{dbos.WithStepName(name)}
	if o.Retries > 0 {
		opts = append(opts, dbos.WithStepMaxRetries(o.Retries))
		if o.Backoff > 0 {
			opts = append(opts, dbos.WithStepBaseInterval(o.Backoff))
		}
		if o.MaxBackoff > 0 {
			opts = append(opts, dbos.WithStepMaxInterval(o.MaxBackoff))
		}
		if o.Retryable != nil {
			opts = append(opts, dbos.WithStepRetryPredicate(o.Retryable))
		}
	}
	return dbos.RunAsStep(ctx, func(c context.Context) (R, error) { return fn(c) }, opts...)
}

// Close stops DBOS, waiting up to timeout for running steps to end, then
// the heartbeat. Unfinished workflows stay PENDING: they resume at this
// server's next start or, on PostgreSQL, on another server, which takes
// them over at its next pass because the last heartbeat says this server
// stopped. DBOS's shutdown does not mark them CANCELLED (only a user's
// Cancel does), and the heartbeat stops last so no other server resumes a
// workflow while its steps are still ending here.
func (e *Engine) Close(timeout time.Duration) {
	if err := dbos.Shutdown(e.dctx, timeout); err != nil {
		e.log.Warn("durable: shutdown", "err", err)
	}
	if e.stop != nil {
		e.stop()
		<-e.done
	}
}

// schemaFor is the default schema of DBOS's tables for a PostgreSQL URL.
func schemaFor(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "dbos"
	}
	first, _, _ := strings.Cut(u.Query().Get("search_path"), ",")
	first = strings.Trim(strings.TrimSpace(first), `"`)
	if first == "" || first == "public" || first == "$user" {
		return "dbos"
	}
	return first + "_dbos"
}

// minLevel drops records below a level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}

func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }

// Recv waits up to timeout for a message on topic sent to the running
// workflow (Send); ok is false when the timeout passed first. The wait
// is durable: its deadline is stored, and a workflow resumed after a
// crash waits only what is left.
func Recv[R any](ctx Context, topic string, timeout time.Duration) (msg R, ok bool, err error) {
	msg, err = dbos.Recv[R](ctx, topic, timeout)
	if errors.Is(err, dbos.ErrTimeout) {
		return msg, false, nil
	}
	return msg, err == nil, err
}

// Sleep waits d, durably: a workflow resumed after a crash sleeps only
// what is left.
func Sleep(ctx Context, d time.Duration) error {
	_, err := dbos.Sleep(ctx, d)
	return err
}

// Send sends msg on topic to the workflow id. key makes it idempotent: a
// message sent again with the same key is delivered once.
func (e *Engine) Send(ctx context.Context, id, topic string, msg any, key string) error {
	return dbos.Send(e.dctx.From(e.dctx, context.WithoutCancel(ctx)), id, msg, topic, dbos.WithIdempotencyKey(key))
}

// Cancel cancels the workflow id: its running step ends, no other starts.
func (e *Engine) Cancel(ctx context.Context, id string) error {
	return dbos.CancelWorkflow(e.dctx.From(e.dctx, context.WithoutCancel(ctx)), id)
}

// Interrupted reports whether err is the engine stopping a workflow (a
// cancellation, this server shutting down) rather than a step's failure.
func Interrupted(err error) bool {
	return errors.Is(err, dbos.ErrWorkflowCancelled) || errors.Is(err, context.Canceled)
}
