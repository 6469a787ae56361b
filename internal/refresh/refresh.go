// Package refresh runs a reload every interval until stopped: how a
// replica picks up what another changed in the shared database (limit
// rules, policies, which teams capture), without a round trip per request.
package refresh

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Loop is a running refresh.
type Loop struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Every calls reload every interval (each call bounded to 5 s) until Stop;
// a failure is retried at the next tick. A run of failures (the database
// down: every loop of every replica meets it every tick) is logged as
// "<what>: reloading" at its first failure and then once a minute, and its
// end once, so an outage does not flood the log.
func Every(interval time.Duration, what string, log *slog.Logger, reload func(ctx context.Context) error) *Loop {
	if log == nil {
		log = slog.Default()
	}
	l := &Loop{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		failures := 0
		var logged time.Time
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := reload(ctx)
				cancel()
				switch {
				case err != nil:
					failures++
					if failures == 1 || time.Since(logged) >= time.Minute {
						logged = time.Now()
						log.Warn(what+": reloading", "err", err, "failures", failures)
					}
				case failures > 0:
					log.Info(what+": reloaded again", "after_failures", failures)
					failures = 0
				}
			}
		}
	}()
	return l
}

// Stop ends the loop and waits for a reload in progress; it may be called
// more than once.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.once.Do(func() { close(l.stop) })
	<-l.done
}
