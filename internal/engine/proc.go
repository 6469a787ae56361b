package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

// errRunnerGone marks a runner that exited before it became ready for
// reasons other than a load failure (e.g. killed while loading).
var errRunnerGone = errors.New("runner exited")

// proc is one runner child process.
type proc struct {
	id, path string
	token    string
	addr     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *tail

	ready    chan struct{} // closed when the runner is healthy or failed to load
	loadErr  error
	loadTime time.Duration
	exitedCh chan struct{}

	// guarded by Manager.mu
	inflight int
	lastUsed time.Time
	// lastInteractive is when an interactive request last entered; freed,
	// when set, is closed at the next release (background requests wait
	// on it for a slot).
	lastInteractive time.Time
	freed           chan struct{}

	once   sync.Once
	killed bool
	mu     sync.Mutex
	health runnerproto.Health
}

func (p *proc) state() string {
	select {
	case <-p.ready:
		if p.loadErr != nil {
			return StateFailed
		}
		return StateReady
	default:
		return StateLoading
	}
}

func (p *proc) pid() int {
	if p.cmd != nil && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// startLocked launches the runner for id and returns at once; p.ready is
// closed when it is healthy or has failed.
func (m *Manager) startLocked(id, path string) *proc {
	p := &proc{id: id, path: path, token: newToken(), ready: make(chan struct{}), exitedCh: make(chan struct{}), stderr: newTail(40), lastUsed: m.cfg.Now()}
	m.runners[id] = p
	args := []string{"runner", "--model", path, "--parent-stdin",
		"--slots", strconv.Itoa(m.cfg.Slots), "--ctx", strconv.Itoa(m.cfg.CtxPerSlot),
		"--batch", strconv.Itoa(m.cfg.Batch), "--threads", strconv.Itoa(m.cfg.Threads),
		"--queue", strconv.Itoa(m.cfg.Slots + m.cfg.MaxQueue)}
	if m.cfg.Deterministic {
		args = append(args, "--deterministic")
	}
	cmd := exec.Command(m.cfg.Exe, args...)
	cmd.Env = append(os.Environ(), runnerproto.EnvToken+"="+p.token)
	cmd.Stderr = p.stderr
	p.cmd = cmd
	stdout, err1 := cmd.StdoutPipe()
	stdin, err2 := cmd.StdinPipe()
	p.stdin = stdin
	if err := errors.Join(err1, err2); err != nil {
		p.loadErr = err
		close(p.ready)
		delete(m.runners, id)
		return p
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		p.loadErr = fmt.Errorf("starting runner for %s: %w", id, err)
		close(p.ready)
		delete(m.runners, id)
		return p
	}
	m.cfg.Log.Info("starting model runner", "model", id, "pid", cmd.Process.Pid, "path", path)
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var msg struct {
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Addr != "" {
				addrCh <- msg.Addr
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		waitErr := make(chan error, 1)
		go func() { waitErr <- cmd.Wait() }()
		ok := p.awaitReady(m, addrCh, waitErr, started)
		if ok {
			m.becameReady(p)
		}
		var err error
		if ok {
			err = <-waitErr
		} else if p.loadErr != nil && !errors.Is(p.loadErr, errRunnerGone) {
			err = p.loadErr
		}
		close(p.exitedCh)
		p.mu.Lock()
		killed := p.killed
		p.mu.Unlock()
		if !killed {
			m.exited(p, ok, err)
		}
	}()
	return p
}

// awaitReady waits for the runner's address and a healthy /health, and
// closes p.ready either way. It reports whether the runner became ready.
func (p *proc) awaitReady(m *Manager, addrCh <-chan string, waitErr <-chan error, started time.Time) bool {
	fail := func(err error) bool {
		p.loadErr = err
		close(p.ready)
		return false
	}
	deadline := time.NewTimer(m.cfg.LoadTimeout)
	defer deadline.Stop()
	select {
	case p.addr = <-addrCh:
	case err := <-waitErr:
		return fail(p.loadFailure(err))
	case <-deadline.C:
		p.cmd.Process.Kill()
		<-waitErr
		return fail(p.loadFailure(errors.New("timed out waiting for the runner to listen")))
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		h, err := p.fetchHealth(m.client)
		if err == nil && h.Status == "ok" {
			p.mu.Lock()
			p.health = h
			p.mu.Unlock()
			p.loadTime = time.Since(started)
			close(p.ready)
			return true
		}
		select {
		case err := <-waitErr:
			return fail(p.loadFailure(err))
		case <-deadline.C:
			p.cmd.Process.Kill()
			<-waitErr
			return fail(p.loadFailure(fmt.Errorf("model did not load within %s", m.cfg.LoadTimeout)))
		case <-tick.C:
		}
	}
}

func (p *proc) loadFailure(err error) error {
	p.mu.Lock()
	killed := p.killed
	p.mu.Unlock()
	if killed {
		return errRunnerGone
	}
	return fmt.Errorf("%w: model %q (%s): %s", inference.ErrModelFailed, p.id, p.path, p.describeExit(err))
}

// describeExit explains a runner's end with its last stderr lines.
func (p *proc) describeExit(err error) string {
	var b strings.Builder
	if err != nil {
		b.WriteString(err.Error())
	} else {
		b.WriteString("runner exited")
	}
	if lines := p.stderr.lines(); len(lines) > 0 {
		b.WriteString("; runner stderr: ")
		b.WriteString(strings.Join(lines, " | "))
	}
	return b.String()
}

func (p *proc) fetchHealth(c *http.Client) (runnerproto.Health, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/health", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := c.Do(req)
	if err != nil {
		return runnerproto.Health{}, err
	}
	defer resp.Body.Close()
	var h runnerproto.Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h, err
}

// kill stops the runner: closing stdin asks it to exit, SIGKILL after a
// grace period makes sure.
func (p *proc) kill() {
	p.once.Do(func() {
		p.mu.Lock()
		p.killed = true
		p.mu.Unlock()
		if p.stdin != nil {
			p.stdin.Close()
		}
		if p.cmd == nil || p.cmd.Process == nil {
			return
		}
		select {
		case <-p.exitedCh:
		case <-time.After(3 * time.Second):
			p.cmd.Process.Kill()
			<-p.exitedCh
		}
	})
}

// tail keeps the last n lines written to it.
type tail struct {
	mu      sync.Mutex
	n       int
	buf     []string
	partial []byte
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := strings.IndexByte(string(t.partial), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
		if line == "" {
			continue
		}
		t.buf = append(t.buf, line)
		if len(t.buf) > t.n {
			t.buf = t.buf[len(t.buf)-t.n:]
		}
	}
	if len(t.partial) > 4096 {
		t.partial = t.partial[len(t.partial)-4096:]
	}
	return len(b), nil
}

// lines returns the last lines, the most useful last; at most 8 are kept for
// error messages.
func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	if p := strings.TrimSpace(string(t.partial)); p != "" {
		out = append(out, p)
	}
	if len(out) > 8 {
		out = out[len(out)-8:]
	}
	return out
}
