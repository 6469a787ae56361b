package postgres

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sovereign-ai/sovereign/internal/events"
)

// eventsChannel is the NOTIFY channel on which appends to the event log
// are announced (Dialect.EventNotify). It is database-wide: deployments
// sharing a database in different schemas wake each other, harmlessly,
// since a wake-up only makes readers look at their own log.
const eventsChannel = "sovereign_events"

var _ events.Listener = (*Store)(nil)

// ListenEvents implements events.Listener: it LISTENs on a connection
// taken from the pool for as long as it runs, and calls wake once
// listening and then at every notice that a server (this one or another)
// stored events, until ctx ends or the connection fails. The connection is
// closed afterwards, never returned to the pool. Errors: the connection
// failed; ctx's error once it ends.
func (s *Store) ListenEvents(ctx context.Context, wake func()) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: listen for events: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		pc := c.Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+eventsChannel); err != nil {
			return discard{err}
		}
		wake() // what was stored while nobody listened
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				return discard{err}
			}
			wake()
		}
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("postgres: listen for events: %w", err)
}

// discard is a connection's error that also tells database/sql not to
// return the connection to the pool (it is LISTENing, or broken).
type discard struct{ err error }

func (d discard) Error() string   { return d.err.Error() }
func (d discard) Unwrap() []error { return []error{driver.ErrBadConn, d.err} }
