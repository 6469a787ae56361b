package auth

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
)

// fakeStore is a KeyStore made of function fields; a nil field fails the
// test when called. newMemStore fills every field with an in-memory
// implementation that tests then override one field at a time.
type fakeStore struct {
	t               *testing.T
	CreateTeamFn    func(ctx context.Context, t Team) error
	GetTeamFn       func(ctx context.Context, id string) (Team, error)
	GetTeamByNameFn func(ctx context.Context, name string) (Team, error)
	ListTeamsFn     func(ctx context.Context) ([]Team, error)
	DeleteTeamFn    func(ctx context.Context, id string) error
	SetCaptureFn    func(ctx context.Context, id string, on bool) error
	CreateKeyFn     func(ctx context.Context, k Key) error
	GetKeyFn        func(ctx context.Context, id string) (Key, error)
	GetKeyByHashFn  func(ctx context.Context, hash []byte) (Key, error)
	ListKeysFn      func(ctx context.Context, teamID string) ([]Key, error)
	UpdateKeyFn     func(ctx context.Context, id string, u KeyUpdate) error
	CountKeysFn     func(ctx context.Context) (int, error)
}

func (f *fakeStore) missing(name string) {
	f.t.Helper()
	f.t.Fatalf("unexpected call to KeyStore.%s", name)
}

func (f *fakeStore) CreateTeam(ctx context.Context, t Team) error {
	if f.CreateTeamFn == nil {
		f.missing("CreateTeam")
	}
	return f.CreateTeamFn(ctx, t)
}

func (f *fakeStore) GetTeam(ctx context.Context, id string) (Team, error) {
	if f.GetTeamFn == nil {
		f.missing("GetTeam")
	}
	return f.GetTeamFn(ctx, id)
}

func (f *fakeStore) GetTeamByName(ctx context.Context, name string) (Team, error) {
	if f.GetTeamByNameFn == nil {
		f.missing("GetTeamByName")
	}
	return f.GetTeamByNameFn(ctx, name)
}

func (f *fakeStore) ListTeams(ctx context.Context) ([]Team, error) {
	if f.ListTeamsFn == nil {
		f.missing("ListTeams")
	}
	return f.ListTeamsFn(ctx)
}

func (f *fakeStore) SetTeamCapture(ctx context.Context, id string, on bool) error {
	if f.SetCaptureFn == nil {
		f.missing("SetTeamCapture")
	}
	return f.SetCaptureFn(ctx, id, on)
}

func (f *fakeStore) DeleteTeam(ctx context.Context, id string) error {
	if f.DeleteTeamFn == nil {
		f.missing("DeleteTeam")
	}
	return f.DeleteTeamFn(ctx, id)
}

func (f *fakeStore) CreateKey(ctx context.Context, k Key) error {
	if f.CreateKeyFn == nil {
		f.missing("CreateKey")
	}
	return f.CreateKeyFn(ctx, k)
}

func (f *fakeStore) GetKey(ctx context.Context, id string) (Key, error) {
	if f.GetKeyFn == nil {
		f.missing("GetKey")
	}
	return f.GetKeyFn(ctx, id)
}

func (f *fakeStore) GetKeyByHash(ctx context.Context, hash []byte) (Key, error) {
	if f.GetKeyByHashFn == nil {
		f.missing("GetKeyByHash")
	}
	return f.GetKeyByHashFn(ctx, hash)
}

func (f *fakeStore) ListKeys(ctx context.Context, teamID string) ([]Key, error) {
	if f.ListKeysFn == nil {
		f.missing("ListKeys")
	}
	return f.ListKeysFn(ctx, teamID)
}

func (f *fakeStore) UpdateKey(ctx context.Context, id string, u KeyUpdate) error {
	if f.UpdateKeyFn == nil {
		f.missing("UpdateKey")
	}
	return f.UpdateKeyFn(ctx, id, u)
}

func (f *fakeStore) CountKeys(ctx context.Context) (int, error) {
	if f.CountKeysFn == nil {
		f.missing("CountKeys")
	}
	return f.CountKeysFn(ctx)
}

// memStore is the state behind newMemStore's functions, with counters the
// tests assert on.
type memStore struct {
	mu      sync.Mutex
	teams   map[string]Team
	keys    map[string]Key
	updates []KeyUpdate // every UpdateKey call, in order
}

func newMemStore(t *testing.T) (*fakeStore, *memStore) {
	m := &memStore{teams: map[string]Team{}, keys: map[string]Key{}}
	f := &fakeStore{t: t}
	f.CreateTeamFn = func(_ context.Context, tm Team) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, o := range m.teams {
			if o.ID == tm.ID || o.Name == tm.Name {
				return fmt.Errorf("team %s: %w", tm.Name, ErrConflict)
			}
		}
		m.teams[tm.ID] = tm
		return nil
	}
	f.GetTeamFn = func(_ context.Context, id string) (Team, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if tm, ok := m.teams[id]; ok {
			return tm, nil
		}
		return Team{}, fmt.Errorf("team %s: %w", id, ErrNotFound)
	}
	f.GetTeamByNameFn = func(_ context.Context, name string) (Team, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, tm := range m.teams {
			if tm.Name == name {
				return tm, nil
			}
		}
		return Team{}, fmt.Errorf("team %s: %w", name, ErrNotFound)
	}
	f.ListTeamsFn = func(context.Context) ([]Team, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		var out []Team
		for _, tm := range m.teams {
			out = append(out, tm)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out, nil
	}
	f.DeleteTeamFn = func(_ context.Context, id string) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if _, ok := m.teams[id]; !ok {
			return ErrNotFound
		}
		for _, k := range m.keys {
			if k.TeamID == id {
				return ErrConflict
			}
		}
		delete(m.teams, id)
		return nil
	}
	f.CreateKeyFn = func(_ context.Context, k Key) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if _, ok := m.teams[k.TeamID]; !ok {
			return fmt.Errorf("team %s: %w", k.TeamID, ErrNotFound)
		}
		for _, o := range m.keys {
			if o.ID == k.ID || bytes.Equal(o.Hash, k.Hash) {
				return fmt.Errorf("key: %w", ErrConflict)
			}
		}
		m.keys[k.ID] = k
		return nil
	}
	f.GetKeyFn = func(_ context.Context, id string) (Key, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if k, ok := m.keys[id]; ok {
			return k, nil
		}
		return Key{}, fmt.Errorf("key %s: %w", id, ErrNotFound)
	}
	f.GetKeyByHashFn = func(_ context.Context, hash []byte) (Key, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, k := range m.keys {
			if bytes.Equal(k.Hash, hash) {
				return k, nil
			}
		}
		return Key{}, fmt.Errorf("key by hash: %w", ErrNotFound)
	}
	f.ListKeysFn = func(_ context.Context, teamID string) ([]Key, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		var out []Key
		for _, k := range m.keys {
			if teamID == "" || k.TeamID == teamID {
				out = append(out, k)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out, nil
	}
	f.UpdateKeyFn = func(_ context.Context, id string, u KeyUpdate) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.updates = append(m.updates, u)
		k, ok := m.keys[id]
		if !ok {
			return fmt.Errorf("key %s: %w", id, ErrNotFound)
		}
		if u.RevokedAt != nil {
			k.RevokedAt = u.RevokedAt
		}
		if u.ExpiresAt != nil {
			k.ExpiresAt = u.ExpiresAt
		}
		if u.LastUsedAt != nil {
			k.LastUsedAt = u.LastUsedAt
		}
		if u.RotatedTo != nil {
			k.RotatedTo = *u.RotatedTo
		}
		m.keys[id] = k
		return nil
	}
	f.CountKeysFn = func(context.Context) (int, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.keys), nil
	}
	return f, m
}

func (m *memStore) key(id string) Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keys[id]
}

func (m *memStore) updateCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.updates)
}
