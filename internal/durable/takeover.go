package durable

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// takeover keeps servers sharing a PostgreSQL database from losing each
// other's work. DBOS resumes a server's interrupted workflows when that
// same server starts again; a server that never comes back would leave
// its workflows PENDING. So each server writes a heartbeat, and every few
// seconds one server (an advisory lock makes the pass exclusive) resumes
// the PENDING workflows whose server has not written one for DeadAfter:
// DBOS puts them back on a queue, a live server picks them up, and they
// continue after their last finished step.
//
// A server that is alive but stalled longer than DeadAfter (a very long GC
// pause, a frozen VM) could see its running workflow resumed elsewhere,
// so a step runs at least once, never exactly once: steps are written to
// be repeatable (Step's contract).
type takeover struct {
	e     *Engine
	db    *sql.DB
	table string // the heartbeat table, beside DBOS's own
}

// Advisory lock keys: a takeover pass ("SOVTAKE") and DBOS's migrations
// ("SOVMIGR").
const (
	takeoverLock  = 0x534f5654414b45
	migrationsKey = 0x534f564d494752
)

// migrationLock holds a session advisory lock on the database until the
// returned function is called.
func migrationLock(ctx context.Context, url string) (func(), error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("durable: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("durable: %w", err)
	}
	// Polled rather than waited for: a statement waiting on the lock is
	// an open transaction, which the holder's CREATE INDEX CONCURRENTLY
	// (one of DBOS's migrations) would wait for in turn — a deadlock
	// PostgreSQL does not detect.
	for {
		var got bool
		err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, migrationsKey).Scan(&got)
		if err == nil && got {
			break
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("durable: %w", err)
	}
	return func() {
		conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationsKey)
		conn.Close()
		db.Close()
	}, nil
}

func openTakeover(ctx context.Context, e *Engine) (*takeover, error) {
	db, err := sql.Open("pgx", e.cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("durable: %w", err)
	}
	db.SetMaxOpenConns(2)
	t := &takeover{e: e, db: db, table: pgx.Identifier{e.cfg.Schema, "sovereign_executors"}.Sanitize()}
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{e.cfg.Schema}.Sanitize()+`;
CREATE TABLE IF NOT EXISTS `+t.table+` (
	executor_id text PRIMARY KEY,
	seen_at timestamptz NOT NULL
)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("durable: heartbeat table: %w", err)
	}
	// The first heartbeat comes before Launch, so no other server takes
	// this one's workflows as orphans while it resumes them itself.
	if err := t.beat(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return t, nil
}

func (t *takeover) beat(ctx context.Context) error {
	_, err := t.db.ExecContext(ctx, `INSERT INTO `+t.table+` (executor_id, seen_at) VALUES ($1, now())
ON CONFLICT (executor_id) DO UPDATE SET seen_at = now()`, t.e.cfg.ExecutorID)
	if err != nil {
		return fmt.Errorf("durable: heartbeat: %w", err)
	}
	return nil
}

func (t *takeover) run(ctx context.Context) {
	defer t.db.Close()
	beat := time.NewTicker(t.e.cfg.Heartbeat)
	defer beat.Stop()
	scan := time.NewTicker(max(t.e.cfg.DeadAfter/3, time.Second))
	defer scan.Stop()
	for {
		select {
		case <-ctx.Done():
			// A server that stops cleanly says so: its queued work is
			// taken over at once rather than after DeadAfter.
			c, cancel := context.WithTimeout(context.Background(), time.Second)
			t.db.ExecContext(c, `UPDATE `+t.table+` SET seen_at = '-infinity' WHERE executor_id = $1`, t.e.cfg.ExecutorID)
			cancel()
			return
		case <-beat.C:
			if err := t.beat(ctx); err != nil && ctx.Err() == nil {
				t.e.log.Warn("durable: heartbeat failed", "err", err)
			}
		case <-scan.C:
			n, err := t.pass(ctx)
			if err != nil && ctx.Err() == nil {
				t.e.log.Warn("durable: takeover pass failed", "err", err)
			}
			if n > 0 {
				t.e.log.Info("durable: resumed workflows of servers that stopped", "workflows", n)
			}
		}
	}
}

// pass resumes the PENDING workflows of servers whose heartbeat is older
// than DeadAfter (or who never wrote one), and returns how many.
func (t *takeover) pass(ctx context.Context) (int, error) {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var got bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock($1)`, takeoverLock).Scan(&got); err != nil || !got {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT executor_id, seen_at > now() - make_interval(secs => $1), seen_at = '-infinity' FROM `+t.table,
		t.e.cfg.DeadAfter.Seconds())
	if err != nil {
		return 0, err
	}
	live, stopped := map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var id string
		var alive, gone bool
		if err := rows.Scan(&id, &alive, &gone); err != nil {
			rows.Close()
			return 0, err
		}
		live[id], stopped[id] = alive, gone
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	pending, err := dbos.ListWorkflows(t.e.dctx, dbos.WithFilterStatus(dbos.WorkflowStatusPending), dbos.WithFilterAppVersion(Version),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return 0, err
	}
	var orphans []string
	for _, w := range pending {
		// A workflow PENDING on a live server is running there; one
		// created moments ago may not be dequeued yet: both are left. A
		// server that stopped cleanly ended its steps before it said so
		// (Close): its work is taken at once.
		if !live[w.ExecutorID] && (stopped[w.ExecutorID] || time.Since(w.UpdatedAt) > t.e.cfg.DeadAfter) {
			orphans = append(orphans, w.ID)
		}
	}
	if len(orphans) == 0 {
		return 0, tx.Commit()
	}
	if _, err := dbos.ResumeWorkflows[any](t.e.dctx, orphans); err != nil {
		return 0, err
	}
	// The lock is held until the workflows are back on their queue, so
	// no other pass resumes them a second time.
	return len(orphans), tx.Commit()
}
