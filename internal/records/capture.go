package records

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/refresh"
)

// MaxCapture bounds the prompt and the output a record keeps (bytes); a
// longer text is cut at a character boundary and marked.
const MaxCapture = 64 << 10

// Truncate cuts a captured text to MaxCapture bytes.
func Truncate(s string) string {
	if len(s) <= MaxCapture {
		return s
	}
	cut := MaxCapture
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…[truncated]"
}

// Capture knows which teams capture their prompts and outputs in the
// request log. It re-reads them every few seconds, so that a change made
// through another replica applies here too; it is asked on every request.
type Capture struct {
	list  func(ctx context.Context) ([]string, error)
	teams atomic.Pointer[map[string]bool]
	loop  *refresh.Loop
}

// NewCapture loads the capturing teams from list and refreshes them every
// refresh (default 2 s) until Close.
func NewCapture(ctx context.Context, list func(ctx context.Context) ([]string, error), interval time.Duration, log *slog.Logger) (*Capture, error) {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	c := &Capture{list: list}
	if err := c.Reload(ctx); err != nil {
		return nil, err
	}
	c.loop = refresh.Every(interval, "records: teams that capture", log, c.Reload)
	return c, nil
}

// Reload reads the capturing teams now.
func (c *Capture) Reload(ctx context.Context) error {
	ids, err := c.list(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	c.teams.Store(&m)
	return nil
}

// Enabled reports whether team captures its prompts and outputs.
func (c *Capture) Enabled(team string) bool {
	m := c.teams.Load()
	return m != nil && (*m)[team]
}

// Close stops the refresh.
func (c *Capture) Close() { c.loop.Stop() }
