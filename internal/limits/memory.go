package limits

import (
	"context"
	"sync"
	"time"
)

// Memory is the Backend of a single node: the limits' state in this
// process. Its rate buckets are GCRA's, the arithmetic the Redis backend's
// script does, so a deployment behaves the same on one node and on many.
type Memory struct {
	now func() time.Time

	mu     sync.Mutex
	tat    map[string]time.Time // a bucket's theoretical arrival time
	quotas map[string]quotaCount
	leases map[string]map[string]time.Time // key → lease id → expiry
	swept  time.Time
}

type quotaCount struct {
	n   int64
	end time.Time
}

// NewMemory returns an empty in-memory backend; now is the clock (nil:
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, tat: map[string]time.Time{}, quotas: map[string]quotaCount{}, leases: map[string]map[string]time.Time{}}
}

// Rate implements Backend with GCRA (the function): a bucket of limit per
// period holds a theoretical arrival time (TAT); taking n moves it n
// emission intervals later, and is allowed while the TAT stays within one
// burst of now.
func (m *Memory) Rate(_ context.Context, key string, limit int64, period time.Duration, n int64, force bool) (RateResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.sweep(now)
	tat, res := GCRA(m.tat[key], now, limit, period, n, force)
	if tat.After(now) {
		m.tat[key] = tat
	} else {
		delete(m.tat, key) // full: nothing to remember
	}
	return res, nil
}

// Quota implements Backend.
func (m *Memory) Quota(_ context.Context, key string, max, n int64, force bool, end time.Time) (bool, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.sweep(now)
	q := m.quotas[key]
	if !q.end.After(now) {
		q = quotaCount{end: end}
	}
	if n > 0 && !force && q.n+n > max {
		return false, q.n, nil
	}
	q.n += n
	if q.n < 0 {
		q.n = 0
	}
	if n != 0 {
		m.quotas[key] = q
	}
	return true, q.n, nil
}

// Acquire implements Backend.
func (m *Memory) Acquire(_ context.Context, key, id string, max int64, lease time.Duration) (bool, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	set := m.live(key, now)
	if int64(len(set)) >= max {
		return false, int64(len(set)), nil
	}
	if set == nil {
		set = map[string]time.Time{}
		m.leases[key] = set
	}
	set[id] = now.Add(lease)
	return true, int64(len(set)), nil
}

// live drops key's expired leases and returns the rest.
func (m *Memory) live(key string, now time.Time) map[string]time.Time {
	set := m.leases[key]
	for id, exp := range set {
		if !exp.After(now) {
			delete(set, id)
		}
	}
	return set
}

// Release implements Backend.
func (m *Memory) Release(_ context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if set := m.leases[key]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(m.leases, key)
		}
	}
	return nil
}

// Held implements Backend.
func (m *Memory) Held(_ context.Context, key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.live(key, m.now()))), nil
}

// sweep forgets full buckets and ended windows once a minute, so that
// subjects that stop calling cost no memory.
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.swept) < time.Minute {
		return
	}
	m.swept = now
	for k, t := range m.tat {
		if !t.After(now) {
			delete(m.tat, k)
		}
	}
	for k, q := range m.quotas {
		if !q.end.After(now) {
			delete(m.quotas, k)
		}
	}
}
