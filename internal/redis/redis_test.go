package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/redis"
)

// TestLimitsBackend runs the limits backend suite on a real redis-server
// (make test starts one: scripts/redis-test.sh).
func TestLimitsBackend(t *testing.T) {
	l, err := redis.Open(context.Background(), limitstest.RequireRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	limitstest.Run(t, l)
}

// openLimits connects to the test Redis (closed when the test ends) and
// returns a random suffix for the test's keys.
func openLimits(t *testing.T) (*redis.Limits, string) {
	t.Helper()
	l, err := redis.Open(context.Background(), limitstest.RequireRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var b [6]byte
	rand.Read(b[:])
	return l, hex.EncodeToString(b[:])
}

// TestServiceOnRedis runs admissions through Redis, where every check of
// a request goes in one batch: a refusal by one rule gives back what the
// others took.
func TestServiceOnRedis(t *testing.T) {
	ctx := context.Background()
	l, id := openLimits(t)
	team, key := "team_"+id, "key_"+id
	s, err := limits.New(ctx, limits.Config{Backend: l, Rules: []limits.Rule{
		{Scope: limits.ScopeKey, Subject: key, RequestsPerMinute: 10, ConcurrentRequests: 5, TokensPerDay: 1000},
		{Scope: limits.ScopeTeam, Subject: team, RequestsPerMinute: 2, TokensPerMinute: 500},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 2; i++ {
		tk, st, err := s.Admit(ctx, limits.Request{ID: fmt.Sprint("r", i), KeyID: key, TeamID: team, Tokens: 100})
		if err != nil {
			t.Fatal(err)
		}
		if st.Requests.Scope != limits.ScopeTeam || st.Requests.Remaining != int64(1-i) || st.Tokens.Dimension != limits.TokensPerMinute {
			t.Fatalf("status %+v %+v", st.Requests, st.Tokens)
		}
		tk.Settle(ctx, 40)
	}
	_, _, err = s.Admit(ctx, limits.Request{ID: "r3", KeyID: key, TeamID: team, Tokens: 100})
	var ex *limits.ExceededError
	if !errors.As(err, &ex) || ex.Scope != limits.ScopeTeam || ex.Dimension != limits.RequestsPerMinute {
		t.Fatalf("third: %v", err)
	}
	got := map[string]int64{}
	ws, err := s.Limits(ctx, key, team)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		got[w.Scope+"/"+w.Dimension] = w.Remaining
	}
	// Two admitted (the refused one gave its key request, lease and
	// budget back), each settled to 40 tokens.
	if got["key/requests_per_minute"] != 8 || got["key/concurrent_requests"] != 5 || got["key/tokens_per_day"] != 920 || got["team/tokens_per_minute"] < 419 {
		t.Fatalf("after a refusal: %v", got)
	}
}

// TestRedisDown stops a real redis-server under a running limits service:
// fail-closed refuses governed requests, fail-open admits them, and both
// count the failure.
func TestRedisDown(t *testing.T) {
	limitstest.RequireRedis(t) // make test installs redis-server with it
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	ctx := context.Background()
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	var l *redis.Limits
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if l, err = redis.Open(ctx, url); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	defer l.Close()
	rule := limits.Rule{Scope: limits.ScopeKey, Subject: "key_down", RequestsPerMinute: 100}
	m := &countedErrors{}
	closed, _ := limits.New(ctx, limits.Config{Backend: l, Rules: []limits.Rule{rule}, Metrics: m})
	open, _ := limits.New(ctx, limits.Config{Backend: l, Rules: []limits.Rule{rule}, FailOpen: true, Metrics: m})
	defer closed.Close()
	defer open.Close()
	if _, _, err := closed.Admit(ctx, limits.Request{ID: "1", KeyID: "key_down"}); err != nil {
		t.Fatalf("with Redis up: %v", err)
	}
	srv.Process.Kill()
	srv.Wait()
	var un *limits.UnavailableError
	if _, _, err := closed.Admit(ctx, limits.Request{ID: "2", KeyID: "key_down"}); !errors.As(err, &un) {
		t.Fatalf("fail-closed with Redis down: %v", err)
	}
	if tk, _, err := open.Admit(ctx, limits.Request{ID: "3", KeyID: "key_down"}); err != nil || tk != nil {
		t.Fatalf("fail-open with Redis down: %v %v", tk, err)
	}
	// An ungoverned request never touches Redis.
	if _, _, err := closed.Admit(ctx, limits.Request{ID: "4", KeyID: "key_other"}); err != nil {
		t.Fatalf("ungoverned: %v", err)
	}
	if m.modes["closed"] != 1 || m.modes["open"] != 1 {
		t.Fatalf("counted %v", m.modes)
	}
}

type countedErrors struct{ modes map[string]int }

func (c *countedErrors) LimitsBackendError(mode string) {
	if c.modes == nil {
		c.modes = map[string]int{}
	}
	c.modes[mode]++
}
func (c *countedErrors) LimitsUnsettled(int64) {}
func (c *countedErrors) LimitsRefused(string)  {}

// TestBatch runs budget and lease operations in one batch, also after
// the server forgot its scripts (as after a restart).
func TestBatch(t *testing.T) {
	ctx := context.Background()
	url := limitstest.RequireRedis(t)
	l, err := redis.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	limitstest.RunBatch(t, l)
	opt, _ := goredis.ParseURL(url)
	raw := goredis.NewClient(opt)
	defer raw.Close()
	if err := raw.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	limitstest.RunBatch(t, l)
}

// TestDeferredSettlement: a settlement held back runs before the next
// batch's operations (a released lease frees its place for the next
// admission), by itself soon after when no batch comes, before a read,
// and on Close.
func TestDeferredSettlement(t *testing.T) {
	ctx := context.Background()
	url := limitstest.RequireRedis(t)
	l, err := redis.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	lease := "lease:" + hex.EncodeToString(b[:])
	acquire := func(id string) *limits.Op {
		op := &limits.Op{Lease: true, Key: lease, ID: id, Max: 1, TTL: time.Minute}
		l.Batch(ctx, []*limits.Op{op})
		if op.Err != nil {
			t.Fatal(op.Err)
		}
		return op
	}
	release := func(id string) (done chan struct{}) {
		done = make(chan struct{})
		l.Defer([]*limits.Op{{Lease: true, Release: true, Key: lease, ID: id}}, func() { close(done) })
		return done
	}
	held := func() int64 {
		n, err := l.Held(ctx, lease)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Carried by the next batch, ahead of its own operations.
	if !acquire("a").OK {
		t.Fatal("first lease refused")
	}
	done := release("a")
	select {
	case <-done:
		t.Fatal("a held-back release ran at once")
	default:
	}
	if op := acquire("b"); !op.OK || op.Value != 1 {
		t.Fatalf("the admission after a held-back release: %+v", op)
	}
	<-done

	// By itself when no batch comes.
	done = release("b")
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("a held-back release never ran by itself")
	}
	if n := held(); n != 0 {
		t.Fatalf("held %d after the release ran by itself", n)
	}

	// Before a read.
	acquire("c")
	release("c")
	if n := held(); n != 0 {
		t.Fatalf("a read before the held-back release ran: held %d", n)
	}

	// On Close.
	acquire("d")
	done = release("d")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	l2, err := redis.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if n, err := l2.Held(ctx, lease); err != nil || n != 0 {
		t.Fatalf("after Close: held %d %v", n, err)
	}
}

// TestConcurrentAdmitSettle admits and settles from many goroutines at
// once, so that settlements ride on other requests' admissions: at the end
// every lease is released and every request and token is counted once.
func TestConcurrentAdmitSettle(t *testing.T) {
	ctx := context.Background()
	l, id := openLimits(t)
	const workers, each, reserve, used = 8, 40, 50, 20
	rule := limits.Rule{Scope: limits.ScopeTeam, Subject: "team_" + id, RequestsPerMinute: 1000,
		TokensPerMinute: 100000, ConcurrentRequests: workers, TokensPerDay: 10000000}
	s, err := limits.New(ctx, limits.Config{Backend: l, Rules: []limits.Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tk, _, err := s.Admit(ctx, limits.Request{ID: fmt.Sprint(w, "-", i), KeyID: "key_" + id, TeamID: rule.Subject, Tokens: reserve})
				if err != nil {
					errs <- err
					return
				}
				tk.Settle(ctx, used)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("admission refused with %d concurrent workers under a limit of %d: %v", workers, workers, err)
	}
	ws, err := s.Limits(ctx, "key_"+id, rule.Subject)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, w := range ws {
		got[w.Dimension] = w.Remaining
	}
	n := int64(workers * each)
	want := map[string]int64{limits.RequestsPerMinute: rule.RequestsPerMinute - n, limits.ConcurrentRequests: workers,
		limits.TokensPerDay: rule.TokensPerDay - n*used}
	for d, v := range want {
		// Per-minute buckets refill while the test runs (a request every
		// 60 ms, 1,667 tokens a second): a few more than counted.
		if got[d] < v || (d != limits.ConcurrentRequests && got[d] > v+50) || (d == limits.ConcurrentRequests && got[d] != v) {
			t.Errorf("%s remaining %d, want %d", d, got[d], v)
		}
	}
	if tpm := got[limits.TokensPerMinute]; tpm < rule.TokensPerMinute-n*used || tpm > rule.TokensPerMinute-n*used+50*reserve {
		t.Errorf("tokens_per_minute remaining %d, want about %d (every reservation settled to %d)", tpm, rule.TokensPerMinute-n*used, used)
	}
}
