package durable_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// The tests run servers as child processes of the test binary, so that
// one can be killed with SIGKILL mid-step, as a crash would.
func TestMain(m *testing.M) {
	if os.Getenv("DURABLE_TEST_CHILD") == "1" {
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is one server: it registers a three-step workflow whose steps
// append to a side-effect file, optionally starts one, and waits until the
// workflow named by DURABLE_TEST_WAIT has succeeded. Its second step
// blocks forever when DURABLE_TEST_BLOCK is set, so the test can kill the
// server in the middle of it.
func child() error {
	ctx := context.Background()
	if os.Getenv("DURABLE_TEST_SIGTERM") == "1" {
		// As `sovereign serve` does: the engine is built on the context
		// SIGTERM cancels, and a SIGTERM ends the server cleanly.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	side := os.Getenv("DURABLE_TEST_SIDE")
	note := func(s string) error {
		f, err := os.OpenFile(side, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, s)
		return err
	}
	exe := os.Getenv("DURABLE_TEST_EXECUTOR")
	e, err := durable.New(ctx, durable.Config{DatabaseURL: os.Getenv("DURABLE_TEST_DB"), ExecutorID: exe,
		Heartbeat: 300 * time.Millisecond, DeadAfter: 2 * time.Second})
	if err != nil {
		return err
	}
	block := os.Getenv("DURABLE_TEST_BLOCK") == "1"
	durable.Register(e, "test.three", func(ctx durable.Context, in string) error {
		a, err := durable.Step(ctx, "one", func(context.Context) (string, error) { return in + "-1", note("step1 " + exe) }, durable.StepOptions{})
		if err != nil {
			return err
		}
		b, err := durable.Step(ctx, "two", func(c context.Context) (string, error) {
			if err := note("step2 started " + exe); err != nil {
				return "", err
			}
			if block {
				<-c.Done()
				note("step2 interrupted " + exe)
				return "", c.Err()
			}
			return a + "-2", nil
		}, durable.StepOptions{})
		if err != nil {
			return err
		}
		_, err = durable.Step(ctx, "three", func(context.Context) (string, error) { return b + "-3", note("step3 " + exe + " " + b) }, durable.StepOptions{})
		return err
	})
	// A second workflow of the same input type registers beside it.
	durable.Register(e, "test.other", func(ctx durable.Context, in string) error { return nil })
	if a := os.Getenv("DURABLE_TEST_ACTIVE"); a != "" {
		// Whether the object the workflow works on still wants it: "1"
		// for yes (a shutdown cut it), "0" for no (a user cancelled it).
		e.Resumable("test.three", func(context.Context, string) (bool, error) { return a == "1", nil })
	}
	if err := e.Queue("test", 2); err != nil {
		return err
	}
	if err := e.Launch(ctx); err != nil {
		return err
	}
	defer e.Close(time.Second)
	if id := os.Getenv("DURABLE_TEST_START"); id != "" {
		// Not queued: the server that starts the workflow runs it (a
		// queued one goes to whichever server dequeues it first).
		if err := e.Start(ctx, os.Getenv("DURABLE_TEST_QUEUE"), "test.three", id, "in"); err != nil {
			return err
		}
		if os.Getenv("DURABLE_TEST_CANCEL") == "1" {
			// What versions before issue 27 did to running work at
			// SIGTERM: a cancel, as if a user had asked for it.
			for b, _ := os.ReadFile(side); !strings.Contains(string(b), "step2 started"); b, _ = os.ReadFile(side) {
				time.Sleep(20 * time.Millisecond)
			}
			if err := e.Cancel(ctx, id); err != nil {
				return err
			}
		}
	}
	id := os.Getenv("DURABLE_TEST_WAIT")
	want := cmp.Or(os.Getenv("DURABLE_TEST_EXPECT"), "SUCCESS")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ctx.Err() != nil {
			return note("stopped " + exe)
		}
		st, err := e.Status(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case st == want:
			return note("done " + exe + " " + st)
		case st == "SUCCESS", st == "ERROR", st == "CANCELLED":
			return fmt.Errorf("workflow %s ended %s", id, st)
		}
	}
	return fmt.Errorf("workflow %s did not succeed in 60 s", id)
}

type server struct {
	cmd  *exec.Cmd
	done chan error
}

func startServer(t *testing.T, env ...string) *server {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"DURABLE_TEST_CHILD=1"}, env...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-s.done })
	return s
}

func (s *server) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Fatalf("server: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("server still running after %v", d)
	}
}

func waitFor(t *testing.T, side, line string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(side)
		if strings.Contains(string(b), line) {
			return
		}
	}
	b, _ := os.ReadFile(side)
	t.Fatalf("no %q in the side effects after 30 s:\n%s", line, b)
}

func count(t *testing.T, side, prefix string) int {
	t.Helper()
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// TestResumeAfterStop: a server stopped in the middle of a workflow's
// second step — killed (SIGKILL, a crash), or stopped by SIGTERM with its
// engine built on the context SIGTERM cancels, as serve's is — leaves the
// workflow PENDING, not CANCELLED; the next start finishes it without
// running the first step again.
func TestResumeAfterStop(t *testing.T) {
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		env  []string
	}{
		{"SIGKILL", syscall.SIGKILL, []string{"DURABLE_TEST_QUEUE=test"}},
		{"SIGTERM", syscall.SIGTERM, []string{"DURABLE_TEST_SIGTERM=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			side := filepath.Join(dir, "side")
			env := []string{"DURABLE_TEST_DB=" + filepath.Join(dir, "sovereign.db"), "DURABLE_TEST_SIDE=" + side, "DURABLE_TEST_WAIT=wf-1"}
			first := startServer(t, append(append(env, "DURABLE_TEST_BLOCK=1", "DURABLE_TEST_START=wf-1"), c.env...)...)
			waitFor(t, side, "step2 started")
			first.cmd.Process.Signal(c.sig)
			if c.sig == syscall.SIGTERM {
				first.wait(t, 20*time.Second) // an orderly exit
			} else {
				<-first.done
				first.done <- nil
			}

			startServer(t, env...).wait(t, 60*time.Second)
			if b, _ := os.ReadFile(side); testing.Verbose() {
				t.Logf("side effects:\n%s", b)
			}
			if n := count(t, side, "step1"); n != 1 {
				t.Errorf("step 1 ran %d times, want 1", n)
			}
			if n := count(t, side, "step2 started"); n != 2 {
				t.Errorf("step 2 started %d times, want 2 (once per server)", n)
			}
			if n := count(t, side, "step3  in-1-2"); n != 1 {
				b, _ := os.ReadFile(side)
				t.Errorf("step 3 ran %d times with the first steps' results, want 1:\n%s", n, b)
			}
		})
	}
}

// TestTakeoverOnPostgres: two servers share a PostgreSQL database; the one
// running a workflow is killed mid-step; the other resumes it after the
// dead one's heartbeat goes stale, without running the first step twice.
func TestTakeoverOnPostgres(t *testing.T) {
	url := storetest.PostgresURL(t)
	dir := t.TempDir()
	side := filepath.Join(dir, "side")
	env := []string{"DURABLE_TEST_DB=" + url, "DURABLE_TEST_SIDE=" + side, "DURABLE_TEST_WAIT=wf-2"}
	b := startServer(t, append(env, "DURABLE_TEST_EXECUTOR=b")...)
	a := startServer(t, append(env, "DURABLE_TEST_EXECUTOR=a", "DURABLE_TEST_BLOCK=1", "DURABLE_TEST_START=wf-2")...)
	waitFor(t, side, "step2 started a")
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	a.done <- nil
	b.wait(t, 60*time.Second)
	if n := count(t, side, "step1"); n != 1 {
		t.Errorf("step 1 ran %d times, want 1", n)
	}
	if n := count(t, side, "step3 b in-1-2"); n != 1 {
		s, _ := os.ReadFile(side)
		t.Errorf("step 3 did not run once on b with the first steps' results:\n%s", s)
	}
}

// TestSIGTERMHandsOverOnPostgres: of two servers on one PostgreSQL, the
// one running a workflow is stopped by SIGTERM; the other finishes it.
func TestSIGTERMHandsOverOnPostgres(t *testing.T) {
	url := storetest.PostgresURL(t)
	dir := t.TempDir()
	side := filepath.Join(dir, "side")
	env := []string{"DURABLE_TEST_DB=" + url, "DURABLE_TEST_SIDE=" + side, "DURABLE_TEST_WAIT=wf-h"}
	b := startServer(t, append(env, "DURABLE_TEST_EXECUTOR=b")...)
	a := startServer(t, append(env, "DURABLE_TEST_EXECUTOR=a", "DURABLE_TEST_SIGTERM=1", "DURABLE_TEST_BLOCK=1", "DURABLE_TEST_START=wf-h")...)
	waitFor(t, side, "step2 started a")
	a.cmd.Process.Signal(syscall.SIGTERM)
	a.wait(t, 20*time.Second)
	b.wait(t, 60*time.Second)
	if n := count(t, side, "step3 b in-1-2"); n != 1 {
		s, _ := os.ReadFile(side)
		t.Errorf("step 3 did not run once on b with the first steps' results:\n%s", s)
	}
}

// TestRepairResumesWorkAShutdownCancelled: work an earlier version's
// shutdown left CANCELLED resumes at the next start when its object is
// still active, and stays cancelled when it is not (a user's cancel).
func TestRepairResumesWorkAShutdownCancelled(t *testing.T) {
	for _, c := range []struct {
		active, want string
	}{{"1", "SUCCESS"}, {"0", "CANCELLED"}} {
		t.Run("active="+c.active, func(t *testing.T) {
			dir := t.TempDir()
			side := filepath.Join(dir, "side")
			env := []string{"DURABLE_TEST_DB=" + filepath.Join(dir, "sovereign.db"), "DURABLE_TEST_SIDE=" + side, "DURABLE_TEST_WAIT=wf-r"}
			startServer(t, append(env, "DURABLE_TEST_BLOCK=1", "DURABLE_TEST_START=wf-r", "DURABLE_TEST_CANCEL=1", "DURABLE_TEST_EXPECT=CANCELLED")...).wait(t, 30*time.Second)

			startServer(t, append(env, "DURABLE_TEST_ACTIVE="+c.active, "DURABLE_TEST_EXPECT="+c.want)...).wait(t, 60*time.Second)
			// The first server saw its workflow cancelled; the second
			// sees it succeed, or still cancelled.
			if n := count(t, side, "done  "+c.want); n != map[string]int{"SUCCESS": 1, "CANCELLED": 2}[c.want] {
				b, _ := os.ReadFile(side)
				t.Errorf("the restarted server did not see the workflow %s:\n%s", c.want, b)
			}
			wantStep3 := map[string]int{"SUCCESS": 1, "CANCELLED": 0}[c.want]
			if n := count(t, side, "step3"); n != wantStep3 {
				t.Errorf("step 3 ran %d times, want %d", n, wantStep3)
			}
		})
	}
}
