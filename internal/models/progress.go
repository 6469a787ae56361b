package models

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress is a human progress display for a byte transfer: bytes done and
// total, percent, and throughput in MB/s. On a terminal it redraws one line
// with '\r' (at most ten times a second); on anything else (a log file, a
// pipe, a test buffer) it prints a plain line every few seconds. [Progress.Finish]
// always prints the final state on its own line.
//
// A Progress is an io.Writer that counts what is written to it, so it can sit
// in an io.MultiWriter or io.TeeReader. A nil *Progress, or one made with a
// nil writer, counts nothing and prints nothing. Its methods are safe for
// concurrent use.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	total    int64
	done     int64
	start    time.Time
	last     time.Time
	tty      bool
	every    time.Duration
	finished bool
	now      func() time.Time
}

// NewProgress returns a Progress that reports to w under label for a transfer
// of total bytes (total <= 0 when unknown: then no percent is shown).
func NewProgress(w io.Writer, label string, total int64) *Progress {
	p := &Progress{w: w, label: label, total: total, now: time.Now}
	p.tty = isTerminal(w)
	if p.tty {
		p.every = 100 * time.Millisecond
	} else {
		p.every = 2 * time.Second
	}
	p.start = p.now()
	p.last = p.start
	return p
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Write counts len(b) bytes as done and never fails.
func (p *Progress) Write(b []byte) (int, error) {
	p.Add(int64(len(b)))
	return len(b), nil
}

// Add counts n more bytes as done and redraws if it is time to.
func (p *Progress) Add(n int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if t := p.now(); t.Sub(p.last) >= p.every {
		p.last = t
		p.draw(false)
	}
}

// SetTotal changes the expected total (for sources that learn it late).
func (p *Progress) SetTotal(total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

// SetLabel changes the label (for a transfer made of steps whose label
// counts them).
func (p *Progress) SetLabel(label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

// Step counts n more bytes as done and prints the state on its own line at
// once. It is for a transfer made of steps, each with its own Progress (the
// parts of a multi-part model): the overall line comes between theirs
// rather than over them.
func (p *Progress) Step(n int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.last = p.now()
	p.draw(true)
}

// Finish prints the final state followed by a newline. Calling it again does
// nothing.
func (p *Progress) Finish() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	p.draw(true)
}

// line renders the current state.
func (p *Progress) line() string {
	elapsed := p.now().Sub(p.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(p.done) / elapsed / 1e6
	}
	var b strings.Builder
	b.WriteString(p.label)
	b.WriteString("  ")
	if p.total > 0 {
		pct := float64(p.done) * 100 / float64(p.total)
		if pct > 100 {
			pct = 100
		}
		if p.tty {
			const width = 24
			fill := int(pct / 100 * width)
			b.WriteString("[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "] ")
		}
		fmt.Fprintf(&b, "%s / %s  %5.1f%%", FormatBytes(p.done), FormatBytes(p.total), pct)
	} else {
		b.WriteString(FormatBytes(p.done))
	}
	fmt.Fprintf(&b, "  %.1f MB/s", rate)
	return b.String()
}

func (p *Progress) draw(final bool) {
	l := p.line()
	switch {
	case p.tty && final:
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", l)
	case p.tty:
		fmt.Fprintf(p.w, "\r%s\x1b[K", l)
	default:
		fmt.Fprintln(p.w, l)
	}
}

// FormatBytes renders n with a decimal unit (B, kB, MB, GB).
func FormatBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	default:
		return fmt.Sprintf("%d B", n)
	}
}
