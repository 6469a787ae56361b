package sources

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Keeping the vector indexes in step with the store.
//
// Each server holds its own vector index of a collection, in memory, while
// the store is shared by every server (replicas on one PostgreSQL database,
// or processes on one SQLite file). All vectors reach an index the same
// way: the server reads from the store the embeddings whose chunk id is
// above the largest it has read (a collection's chunk ids become visible in
// increasing order; see Store.EmbeddingsAfter). The first read, from 0,
// fills the index; ingestion reads right after storing its chunks; searches
// read when the last read began more than SyncInterval ago. A read that
// finds nothing new costs one indexed query.
//
// Deletions leave nothing to read, so every document deletion is counted in
// its collection and the count comes back with each read. When it has
// changed, the server lists the collection's embedded chunk ids and deletes
// from its index those it has added that are no longer there. (The server
// that deletes a document also drops its chunks from its own index at once.)
// Search results are checked against the chunks table anyway (hits), so a
// deleted chunk still in an index is never returned; it only takes a
// candidate's place until the index catches up.
//
// Ingestion does not add its vectors to the index itself: every vector
// enters through a read, under the collection's mutex. So a chunk deleted
// after a read fetched it, which that read then adds, is caught by the next
// read: its deletion count has moved, and its listing comes after every
// vector added before it.

// DefaultSyncInterval is the default Service.SyncInterval.
const DefaultSyncInterval = time.Second

// collectionIndex is what a Service knows of its vector index of one
// collection. mu serializes the reads from the store that change it.
type collectionIndex struct {
	// synced is when (monotonic, see clock) the last complete read began;
	// 0 until the first one completes.
	synced atomic.Int64

	mu        sync.Mutex
	gone      bool    // the collection was deleted; this state is forgotten
	after     int64   // the largest chunk id read
	deletions int64   // the collection's deletion count at the last complete read
	ids       []int64 // ids added to the index, ascending (deleted ones linger until a reconcile)
	// rejected holds the error of each vector the index refused, until
	// the ingestion that stored it collects it (takeRejected) or its chunk
	// is deleted.
	rejected map[int64]error
}

// clockBase anchors clock.
var clockBase = time.Now()

// clock is a monotonic time in nanoseconds, never 0.
func clock() int64 { return int64(time.Since(clockBase)) + 1 }

func (s *Service) syncInterval() time.Duration {
	if s.SyncInterval > 0 {
		return s.SyncInterval
	}
	return DefaultSyncInterval
}

// indexState returns the state of the collection's index, creating it.
func (s *Service) indexState(collectionID string) *collectionIndex {
	if v, ok := s.indexes.Load(collectionID); ok {
		return v.(*collectionIndex)
	}
	v, _ := s.indexes.LoadOrStore(collectionID, &collectionIndex{})
	return v.(*collectionIndex)
}

// syncIndex brings the collection's vector index up to date with the store,
// unless a read that began at or after since (a clock value) has completed.
// With wait false it does not wait for a read another goroutine is making,
// unless the index has never been filled.
func (s *Service) syncIndex(ctx context.Context, collectionID string, since int64, wait bool) (*collectionIndex, error) {
	st := s.indexState(collectionID)
	if t := st.synced.Load(); t != 0 && t >= since {
		return st, nil
	}
	if wait || st.synced.Load() == 0 {
		st.mu.Lock()
	} else if !st.mu.TryLock() {
		return st, nil // being brought up to date; this search uses it as it is
	}
	defer st.mu.Unlock()
	if t := st.synced.Load(); st.gone || t != 0 && t >= since {
		return st, nil
	}
	start := clock()
	// The read is shared by every search waiting for it: not cut short by
	// one of them going away.
	if err := s.pull(context.WithoutCancel(ctx), collectionID, st); err != nil {
		return st, err
	}
	st.synced.Store(start)
	return st, nil
}

// pull reads what the store has added and deleted since the last read into
// the index; st.mu is held.
func (s *Service) pull(ctx context.Context, collectionID string, st *collectionIndex) error {
	first := st.synced.Load() == 0
	deletions, err := s.Store.EmbeddingsAfter(ctx, collectionID, st.after, func(id int64, v []float32) error {
		if err := s.Vectors.Add(collectionID, id, v); err != nil {
			s.log().Warn("vector index refused an embedding", "collection", collectionID, "chunk", id, "err", err)
			if st.rejected == nil {
				st.rejected = map[int64]error{}
			}
			st.rejected[id] = err
		} else {
			st.ids = append(st.ids, id)
		}
		st.after = id
		return nil
	})
	switch {
	case errors.Is(err, ErrNotFound):
		// Deleted, by this server or another: forget the index.
		st.gone = true
		s.indexes.CompareAndDelete(collectionID, st)
		s.Vectors.DropCollection(collectionID)
		return nil
	case err != nil:
		if first {
			// A first read cut short: start again from nothing, so that
			// the deletion count it returns covers every vector added.
			s.Vectors.DropCollection(collectionID)
			st.after, st.ids, st.rejected = 0, nil, nil
		}
		return err
	case first:
		st.deletions = deletions
		return nil
	case deletions == st.deletions:
		return nil
	}
	// Documents were deleted since the last read. Every id in st.ids was
	// committed before this listing began, so those it lacks are gone.
	live, err := s.Store.EmbeddedChunkIDs(ctx, collectionID)
	if err != nil {
		return err
	}
	var dead []int64
	keep := st.ids[:0]
	for _, id := range st.ids {
		if _, ok := slices.BinarySearch(live, id); ok {
			keep = append(keep, id)
		} else {
			dead = append(dead, id)
		}
	}
	st.ids = keep
	s.Vectors.Delete(collectionID, dead...)
	for id := range st.rejected {
		if _, ok := slices.BinarySearch(live, id); !ok {
			delete(st.rejected, id)
		}
	}
	st.deletions = deletions
	return nil
}

// takeRejected returns the error of the first of ids whose vector the index
// refused, and forgets the errors of ids.
func (st *collectionIndex) takeRejected(ids []int64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	var first error
	for _, id := range ids {
		if err, ok := st.rejected[id]; ok {
			if first == nil {
				first = err
			}
			delete(st.rejected, id)
		}
	}
	return first
}

// forget drops the collection's index and its state (the collection was
// deleted through this server).
func (s *Service) forget(collectionID string) {
	if v, ok := s.indexes.LoadAndDelete(collectionID); ok {
		st := v.(*collectionIndex)
		st.mu.Lock() // let a read under way finish first
		st.gone = true
		s.Vectors.DropCollection(collectionID)
		st.mu.Unlock()
		return
	}
	s.Vectors.DropCollection(collectionID)
}
