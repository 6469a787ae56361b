package vector

import (
	"fmt"
	"slices"
	"sync"
)

// Set keeps one Index per collection, so that a search only ever sees the
// collection's own chunks. An index is created on the first Add to its
// collection, with that vector's dimension, so collections embedded by
// different models may differ in dimension. A Set is safe for concurrent
// use; its zero value is not, use NewSet.
type Set struct {
	opts Options
	mu   sync.RWMutex
	idx  map[string]*Index
}

// NewSet returns an empty set whose indexes are created with opts.
func NewSet(opts Options) *Set {
	return &Set{opts: opts, idx: make(map[string]*Index)}
}

// Add adds v under id to the collection's index, creating the index if the
// collection has none. It returns the errors of Index.Add: ErrDimension if
// v's length differs from that of the vectors already in the collection,
// ErrInvalidVector if v is zero or not finite.
func (s *Set) Add(collection string, id int64, v []float32) error {
	x := s.Get(collection)
	if x == nil {
		if len(v) == 0 {
			return fmt.Errorf("%w: empty vector", ErrDimension)
		}
		s.mu.Lock()
		if x = s.idx[collection]; x == nil {
			x = New(len(v), s.opts)
			s.idx[collection] = x
		}
		s.mu.Unlock()
	}
	return x.Add(id, v)
}

// Delete removes ids from the collection's index. Unknown collections and
// ids are ignored.
func (s *Set) Delete(collection string, ids ...int64) {
	if x := s.Get(collection); x != nil {
		x.Delete(ids...)
	}
}

// Search returns the k vectors of the collection most similar to q (see
// Index.Search); nil for a collection with no index.
func (s *Set) Search(collection string, q []float32, k int) []Hit {
	if x := s.Get(collection); x != nil {
		return x.Search(q, k)
	}
	return nil
}

// Drop forgets the collection's index.
func (s *Set) Drop(collection string) {
	s.mu.Lock()
	delete(s.idx, collection)
	s.mu.Unlock()
}

// Get returns the collection's index, or nil if it has none.
func (s *Set) Get(collection string) *Index {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.idx[collection]
}

// Put makes x the collection's index, replacing any it had; use it to
// install an index restored with Load.
func (s *Set) Put(collection string, x *Index) {
	s.mu.Lock()
	s.idx[collection] = x
	s.mu.Unlock()
}

// Collections returns the collections that have an index, sorted.
func (s *Set) Collections() []string {
	s.mu.RLock()
	keys := make([]string, 0, len(s.idx))
	for k := range s.idx {
		keys = append(keys, k)
	}
	s.mu.RUnlock()
	slices.Sort(keys)
	return keys
}
