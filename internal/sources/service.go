package sources

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/chunk"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/vector"
)

// Span is a byte range [Start, End) of a text, as a splitter returns it.
type Span struct{ Start, End int }

// Embedder computes embeddings (the inference backend).
type Embedder interface {
	Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error)
}

// VectorHit is a chunk found by vector search; higher Score is closer.
type VectorHit struct {
	ID    int64
	Score float32
}

// Vectors is the approximate-nearest-neighbour index, one per collection.
type Vectors interface {
	Add(collection string, id int64, v []float32) error
	Delete(collection string, ids ...int64)
	DropCollection(collection string)
	Search(collection string, q []float32, k int) []VectorHit
}

// Service ingests documents and searches collections.
type Service struct {
	Store   Store
	Embed   Embedder
	Vectors Vectors
	// Rerank serves SearchOptions.RerankModel (nil: reranking is refused).
	Rerank Reranker
	// Split cuts a text into chunk spans (byte offsets).
	Split func(text string) []Span
	// DefaultEmbeddingModel is used for collections that name none.
	DefaultEmbeddingModel string
	// EmbedBatch is how many chunks go to the embedder at once (default 32).
	EmbedBatch int
	// IngestWorkers is how many documents are processed at once (default
	// 2); the others wait their turn in status processing, so a burst of
	// uploads does not overrun the embedding model's queue.
	IngestWorkers int
	// SyncInterval is how long a search may use a collection's vector
	// index before bringing it up to date with the store first (default
	// DefaultSyncInterval): documents ingested or deleted through another
	// server sharing the database reach this server's searches within
	// about that long. See index.go.
	SyncInterval time.Duration
	// StartIngest, when set, hands a stored document's processing to
	// the durable engine (which calls ProcessDocument, and again after a
	// crash); nil processes it in a goroutine of this server.
	StartIngest func(ctx context.Context, documentID string) error
	// Events, when set, stores document.ready or document.failed when a
	// document's ingestion ends (events.Bus).
	Events Publisher
	Log    *slog.Logger
	Now    func() time.Time

	wg       sync.WaitGroup
	workers  chan struct{}
	initOnce sync.Once
	indexes  sync.Map // collection id → *collectionIndex
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// NewID returns a random id with the prefix ("col_", "doc_").
func NewID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [22]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b[:])
}

// Wait blocks until background ingestion has finished (for shutdown and
// tests).
func (s *Service) Wait() { s.wg.Wait() }

// Ingest stores d (status processing) and chunks, embeds and indexes its
// text in the background; the document turns ready or failed, with
// progress in between. d.Text must be valid UTF-8 and not empty.
func (s *Service) Ingest(ctx context.Context, c Collection, d Document) (Document, error) {
	if d.Text == "" || !utf8.ValidString(d.Text) {
		return Document{}, errors.New("sources: a document needs non-empty UTF-8 text")
	}
	now := s.now()
	d.ID, d.CollectionID, d.Status, d.Progress = NewID("doc_"), c.ID, StatusProcessing, 0
	d.Chars = utf8.RuneCountInString(d.Text)
	d.CreatedAt, d.UpdatedAt = now, now
	if err := s.Store.CreateDocument(ctx, d); err != nil {
		return Document{}, err
	}
	if s.StartIngest != nil {
		// The durable engine takes it from here. Should it fail to
		// (or this server die first), ResumeIngestion starts it at the
		// next start: the document is stored, and is processing.
		if err := s.StartIngest(ctx, d.ID); err != nil {
			s.log().Warn("document ingestion not started; it will be at the next start", "document", d.ID, "err", err)
		}
		return d, nil
	}
	s.initOnce.Do(func() {
		n := s.IngestWorkers
		if n <= 0 {
			n = 2
		}
		s.workers = make(chan struct{}, n)
	})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.workers <- struct{}{}
		defer func() { <-s.workers }()
		// Ingestion belongs to the document, not to the request.
		if err := s.ProcessDocument(context.WithoutCancel(ctx), d.ID); err != nil {
			s.log().Warn("document ingestion failed", "document", d.ID, "collection", c.ID, "err", err)
		}
	}()
	return d, nil
}

// ResumeIngestion starts the ingestion of every document still
// processing (through StartIngest, whose ids make this harmless for the
// ones already under way): what was accepted before a crash, between a
// document's creation and the start of its processing, is not left
// behind. It returns how many documents it found.
func (s *Service) ResumeIngestion(ctx context.Context) (int, error) {
	if s.StartIngest == nil {
		return 0, nil
	}
	ids, err := s.Store.ProcessingDocuments(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := s.StartIngest(ctx, id); err != nil {
			return 0, fmt.Errorf("sources: resuming the ingestion of %s: %w", id, err)
		}
	}
	return len(ids), nil
}

// Processing reports whether the document id is still being processed
// (false once it is ready, failed or deleted).
func (s *Service) Processing(ctx context.Context, id string) (bool, error) {
	d, err := s.Store.GetDocument(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && d.Status == StatusProcessing, err
}

// ProcessDocument chunks, embeds and indexes a stored document still
// processing, and marks it ready, or failed with the reason. It is safe
// to run again after an interruption at any point (the durable engine
// does, after a crash): a document no longer processing is left alone,
// and chunks stored by an interrupted run — all of a document's chunks
// are stored in one transaction — are kept rather than embedded again.
// It returns an error only when the store fails, so the caller may retry.
func (s *Service) ProcessDocument(ctx context.Context, id string) error {
	d, err := s.Store.GetDocument(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	c, err := s.Store.GetCollection(ctx, d.CollectionID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if d.Status != StatusProcessing {
		// Ended already: by a run interrupted before its caller learnt
		// it, whose event may be unsaid (the event's id makes it once).
		return s.announce(ctx, c, d.ID)
	}
	if err := s.process(ctx, c, d); err != nil {
		// A store failure, or this server stopping, is not the
		// document's fault: the caller retries, or the durable engine
		// resumes it at the next start.
		if errors.Is(err, errStore) || ctx.Err() != nil {
			return err
		}
		s.log().Warn("document ingestion failed", "document", d.ID, "collection", c.ID, "err", err)
		failed, msg := StatusFailed, err.Error()
		if err := s.Store.UpdateDocument(ctx, d.ID, DocumentUpdate{Status: &failed, Error: &msg}, s.now()); err != nil {
			return err
		}
	}
	return s.announce(ctx, c, d.ID)
}

// Publisher stores events; an event whose id is stored already is not
// stored again (events.Bus.Append).
type Publisher interface {
	Append(ctx context.Context, ev events.Event) (events.Event, error)
}

// announce stores document.ready or document.failed for a document whose
// ingestion ended, with the collection's team and the document (without
// its text) as data. Its id derives from the document and the type, so a
// repeated call stores it once. Errors: the store's (the caller retries).
func (s *Service) announce(ctx context.Context, c Collection, id string) error {
	if s.Events == nil {
		return nil
	}
	d, err := s.Store.GetDocument(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	typ := events.DocumentReady
	switch d.Status {
	case StatusReady:
	case StatusFailed:
		typ = events.DocumentFailed
	default:
		return nil
	}
	h := sha256.Sum256([]byte(d.ID + "\x00" + typ))
	data := map[string]any{"id": d.ID, "object": "document", "collection_id": d.CollectionID, "title": d.Title, "url": d.URL,
		"metadata": d.Metadata, "format": d.Format, "status": d.Status, "progress": d.Progress, "error": nil, "chars": d.Chars,
		"chunk_count": d.ChunkCount, "created_at": d.CreatedAt.Unix(), "updated_at": d.UpdatedAt.Unix()}
	if d.Metadata == nil {
		data["metadata"] = map[string]any{}
	}
	if d.Error != "" {
		data["error"] = d.Error
	}
	ev := events.Event{ID: "evt_" + hex.EncodeToString(h[:12]), Type: typ, Team: c.TeamID, Data: data}
	if _, err := s.Events.Append(ctx, ev); err != nil && !errors.Is(err, events.ErrDuplicate) {
		return err
	}
	return nil
}

// errStore marks a failure of the store, not of the document: ingestion
// is retried rather than failed.
var errStore = errors.New("store")

// process chunks, embeds and stores one document.
func (s *Service) process(ctx context.Context, c Collection, d Document) error {
	ids, err := s.Store.ChunkIDs(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	n := len(ids)
	if n == 0 {
		if ids, err = s.embedAndStore(ctx, c, d); err != nil {
			return err
		}
		n = len(ids)
	}
	// The index takes the new vectors (and any other server's) from the
	// store, like every vector it holds.
	st, err := s.syncIndex(ctx, c.ID, clock(), true)
	if err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	if err := st.takeRejected(ids); err != nil {
		return err
	}
	ready, p := StatusReady, 1.0
	if err := s.Store.UpdateDocument(ctx, d.ID, DocumentUpdate{Status: &ready, ChunkCount: &n, Progress: &p}, s.now()); err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	return nil
}

// embedAndStore chunks and embeds d, stores its chunks and returns their
// ids.
func (s *Service) embedAndStore(ctx context.Context, c Collection, d Document) ([]int64, error) {
	spans := s.Split(d.Text)
	if len(spans) == 0 {
		return nil, errors.New("the document has no text to index")
	}
	// Byte offsets to character offsets, in one pass.
	toChar := runeOffsets(d.Text)
	chunks := make([]Chunk, len(spans))
	for i, sp := range spans {
		chunks[i] = Chunk{DocumentID: d.ID, CollectionID: c.ID, Seq: i, Start: toChar(sp.Start), End: toChar(sp.End), Text: d.Text[sp.Start:sp.End]}
	}
	batch := s.EmbedBatch
	if batch <= 0 {
		batch = 32
	}
	for i := 0; i < len(chunks); i += batch {
		end := min(i+batch, len(chunks))
		in := make([]string, end-i)
		for j := range in {
			in[j] = chunks[i+j].Text
		}
		res, err := s.Embed.Embed(ctx, inference.EmbeddingRequest{Model: c.EmbeddingModel, Input: in})
		if err != nil {
			return nil, fmt.Errorf("embedding with %s: %w", c.EmbeddingModel, err)
		}
		if len(res.Embeddings) != len(in) {
			return nil, fmt.Errorf("embedding with %s: %d vectors for %d chunks", c.EmbeddingModel, len(res.Embeddings), len(in))
		}
		for j, v := range res.Embeddings {
			chunks[i+j].Embedding = v
		}
		p := float64(end) / float64(len(chunks))
		s.Store.UpdateDocument(ctx, d.ID, DocumentUpdate{Progress: &p}, s.now())
	}
	ids, err := s.Store.AddChunks(ctx, chunks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStore, err)
	}
	return ids, nil
}

// runeOffsets returns a function from byte offsets of text (ascending or
// not) to character offsets.
func runeOffsets(text string) func(int) int {
	// Character index at each byte boundary; cheap for texts of a few MB.
	idx := make([]int32, len(text)+1)
	n := int32(0)
	for i := range text {
		idx[i] = n
		n++
	}
	idx[len(text)] = n
	// Bytes inside a multi-byte rune map to the rune's index (never used
	// by a splitter that cuts on boundaries).
	for i := 1; i < len(text); i++ {
		if !utf8.RuneStart(text[i]) {
			idx[i] = idx[i-1]
		}
	}
	return func(b int) int { return int(idx[b]) }
}

// DeleteDocument removes a document and its chunks from the store (and
// so from keyword search) and from this server's vector index; other
// servers' indexes drop them at their next read from the store.
func (s *Service) DeleteDocument(ctx context.Context, d Document) error {
	ids, err := s.Store.ChunkIDs(ctx, d.ID)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteDocument(ctx, d.ID); err != nil {
		return err
	}
	s.Vectors.Delete(d.CollectionID, ids...)
	return nil
}

// DeleteCollection removes a collection with its documents, chunks and
// vector index (other servers drop theirs at their next read from the
// store).
func (s *Service) DeleteCollection(ctx context.Context, id string) error {
	if err := s.Store.DeleteCollection(ctx, id); err != nil {
		return err
	}
	s.forget(id)
	return nil
}

// LoadIndex brings the vector index of a collection up to date with the
// store now, filling it the first time (a search does that on its own;
// LoadIndex does it ahead, e.g. at start-up).
func (s *Service) LoadIndex(ctx context.Context, collectionID string) error {
	_, err := s.syncIndex(ctx, collectionID, clock(), true)
	return err
}

// Search modes: which retrievers a search uses.
const (
	ModeHybrid  = "hybrid"  // vector and keyword search fused (the default)
	ModeVector  = "vector"  // vector search alone
	ModeKeyword = "keyword" // keyword search alone
)

// SearchOptions tune Search.
type SearchOptions struct {
	// TopK is how many hits to return.
	TopK int
	// Mode is ModeHybrid (default, also for ""), ModeVector or ModeKeyword.
	Mode string
	// RerankModel, when set, reorders the best candidates of the retrieval
	// with this model (which must have the rerank capability).
	RerankModel string
	// RerankCandidates is how many retrieved candidates the reranker sees
	// (default max(3·TopK, 20), at most 100).
	RerankCandidates int
}

// Reranker scores documents against a query (the inference backend).
type Reranker interface {
	Rerank(ctx context.Context, req inference.RerankRequest) (inference.RerankResponse, error)
}

// ErrNoReranker is returned by Search when a rerank model is asked for and
// the service has no Reranker: a server set up without one (a 500, as the
// request itself is fine).
var ErrNoReranker = apierr.New(apierr.Internal, "reranking is not available on this server")

// Search finds the chunks of the collections that best answer query.
// Hybrid search runs vector search (the query embedded with each
// collection's model) and keyword search, each asked for 4·k candidates
// (k = TopK, or the rerank candidates), and fuses them by reciprocal rank
// fusion. With a RerankModel the best candidates are then scored by the
// reranker and ordered by that score. The best TopK come back with their
// documents.
func (s *Service) Search(ctx context.Context, cols []Collection, query string, o SearchOptions) ([]Hit, error) {
	k := o.TopK
	if k <= 0 || len(cols) == 0 {
		return []Hit{}, nil
	}
	want := k
	if o.RerankModel != "" {
		if s.Rerank == nil {
			return nil, ErrNoReranker
		}
		want = o.RerankCandidates
		if want <= 0 {
			want = max(3*k, 20)
		}
		want = min(max(want, k), 100)
	}
	cand := 4 * want
	var vecList, kwList []int64
	vecScore := map[int64]float32{}
	kwScore := map[int64]float64{}
	// The keyword half runs alongside the vector half, whose time is
	// mostly the query embedding in the runner process (one thread for a
	// query-sized batch, see runner.batchThreads). bench/retrieval at 100k
	// chunks on 2 cores: p50 / p99 7.0 / 10.6 ms against 8.1-10.1 /
	// 11.3-14.6 ms one after the other. (When the runner decoded queries
	// on both cores, side by side was worse: 30 ms p99.)
	var kw []KeywordHit
	kwErr := make(chan error, 1)
	go func() {
		var err error
		if o.Mode != ModeVector {
			ids := make([]string, len(cols))
			for i, c := range cols {
				ids[i] = c.ID
			}
			kw, err = s.Store.KeywordSearch(ctx, ids, query, cand)
		}
		kwErr <- err
	}()
	if o.Mode != ModeKeyword {
		vec, err := s.vectorSearch(ctx, cols, query, cand)
		if err != nil {
			<-kwErr
			return nil, err
		}
		vecList = make([]int64, len(vec))
		for i, v := range vec {
			vecList[i] = v.ID
			vecScore[v.ID] = v.Score
		}
	}
	if err := <-kwErr; err != nil {
		return nil, err
	}
	kwList = make([]int64, len(kw))
	for i, h := range kw {
		kwList[i] = h.ChunkID
		kwScore[h.ChunkID] = h.Score
	}
	fused := Fuse(vecList, kwList)
	if len(fused) > want {
		fused = fused[:want]
	}
	out, err := s.hits(ctx, fused)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if v, ok := vecScore[out[i].Chunk.ID]; ok {
			out[i].Vector = &v
		}
		if v, ok := kwScore[out[i].Chunk.ID]; ok {
			out[i].Keyword = &v
		}
	}
	if o.RerankModel != "" && len(out) > 0 {
		if out, err = s.rerank(ctx, o.RerankModel, query, out); err != nil {
			return nil, err
		}
	}
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// vectorSearch returns up to n chunks of the collections closest to query,
// best first, embedding the query once per embedding model.
func (s *Service) vectorSearch(ctx context.Context, cols []Collection, query string, n int) ([]VectorHit, error) {
	var vec []VectorHit
	byModel := map[string][]Collection{}
	for _, c := range cols {
		byModel[c.EmbeddingModel] = append(byModel[c.EmbeddingModel], c)
	}
	for model, cs := range byModel {
		res, err := s.Embed.Embed(ctx, inference.EmbeddingRequest{Model: model, Input: []string{query}})
		if err != nil {
			return nil, fmt.Errorf("embedding the query with %s: %w", model, err)
		}
		if len(res.Embeddings) != 1 {
			return nil, fmt.Errorf("embedding the query with %s: no vector", model)
		}
		since := clock() - int64(s.syncInterval())
		for _, c := range cs {
			if st, err := s.syncIndex(ctx, c.ID, since, false); err != nil {
				if st.synced.Load() == 0 {
					return nil, err
				}
				// Searched as it is: a little stale beats no answer.
				s.log().Warn("vector index not brought up to date", "collection", c.ID, "err", err)
			}
			vec = append(vec, s.Vectors.Search(c.ID, res.Embeddings[0], n)...)
		}
	}
	sort.Slice(vec, func(i, j int) bool {
		return vec[i].Score > vec[j].Score || vec[i].Score == vec[j].Score && vec[i].ID < vec[j].ID
	})
	if len(vec) > n {
		vec = vec[:n]
	}
	return vec, nil
}

// hits loads the chunks of fused ids with their documents (without text),
// in order; chunks deleted meanwhile are left out.
func (s *Service) hits(ctx context.Context, fused []FusedID) ([]Hit, error) {
	want := make([]int64, len(fused))
	for i, f := range fused {
		want[i] = f.ID
	}
	chunks, err := s.Store.GetChunks(ctx, want)
	if err != nil {
		return nil, err
	}
	byID := map[int64]Chunk{}
	for _, c := range chunks {
		byID[c.ID] = c
	}
	docs := map[string]Document{}
	out := make([]Hit, 0, len(fused))
	for _, f := range fused {
		c, ok := byID[f.ID]
		if !ok {
			continue // deleted meanwhile
		}
		d, ok := docs[c.DocumentID]
		if !ok {
			if d, err = s.Store.GetDocument(ctx, c.DocumentID); err != nil {
				continue
			}
			d.Text = ""
			docs[c.DocumentID] = d
		}
		out = append(out, Hit{Chunk: c, Score: f.Score, Document: d})
	}
	return out, nil
}

// rerank scores hits with the reranker and orders them by that score
// (ties keep the retrieval order); Score becomes the reranker's score.
func (s *Service) rerank(ctx context.Context, model, query string, hits []Hit) ([]Hit, error) {
	docs := make([]string, len(hits))
	for i, h := range hits {
		docs[i] = h.Chunk.Text
	}
	res, err := s.Rerank.Rerank(ctx, inference.RerankRequest{Model: model, Query: query, Documents: docs})
	if err != nil {
		return nil, fmt.Errorf("reranking with %s: %w", model, err)
	}
	if len(res.Results) != len(hits) {
		return nil, fmt.Errorf("reranking with %s: %d scores for %d documents", model, len(res.Results), len(hits))
	}
	for _, r := range res.Results {
		if r.Index < 0 || r.Index >= len(hits) {
			return nil, fmt.Errorf("reranking with %s: result index %d out of range", model, r.Index)
		}
		sc := r.RelevanceScore
		hits[r.Index].Rerank = &sc
	}
	for i := range hits {
		if hits[i].Rerank == nil {
			return nil, fmt.Errorf("reranking with %s: no score for document %d", model, i)
		}
		hits[i].Score = *hits[i].Rerank
	}
	sort.SliceStable(hits, func(i, j int) bool { return *hits[i].Rerank > *hits[j].Rerank })
	return hits, nil
}

// Hit is one search result.
type Hit struct {
	Chunk    Chunk
	Score    float64 // the fused (or reranked) score, higher is better
	Vector   *float32
	Keyword  *float64
	Rerank   *float64 // the reranker's score, when reranked
	Document Document // without Text
}

// rrfK is reciprocal rank fusion's constant (Cormack et al. use 60).
const rrfK = 60

// Fuse merges ranked lists of chunk ids by reciprocal rank fusion:
// score(id) = Σ 1/(rrfK + rank), ranks from 1. Equal scores are ordered by
// the rank in the first list that ranks them differently (an id a list
// lacks ranks after the ones it has), so the first list breaks ties (Search
// passes the vector list first); then by id.
func Fuse(lists ...[]int64) []FusedID {
	score := map[int64]float64{}
	rank := make([]map[int64]int, len(lists))
	for i, l := range lists {
		rank[i] = make(map[int64]int, len(l))
		for r, id := range l {
			score[id] += 1 / float64(rrfK+r+1)
			rank[i][id] = r + 1
		}
	}
	out := make([]FusedID, 0, len(score))
	for id, sc := range score {
		out = append(out, FusedID{ID: id, Score: sc})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		for _, r := range rank {
			ra, oka := r[a.ID]
			rb, okb := r[b.ID]
			switch {
			case oka && (!okb || ra < rb):
				return true
			case okb && (!oka || rb < ra):
				return false
			}
		}
		return a.ID < b.ID
	})
	return out
}

// FusedID is a chunk id with its fused score.
type FusedID struct {
	ID    int64
	Score float64
}

// CreateCollection stores a new collection for c.TeamID, filling its id,
// creation time and (when empty) the default embedding model. Errors:
// ErrConflict for a name the team already uses.
func (s *Service) CreateCollection(ctx context.Context, c Collection) (Collection, error) {
	c.ID, c.CreatedAt = NewID("col_"), s.now()
	if c.EmbeddingModel == "" {
		c.EmbeddingModel = s.DefaultEmbeddingModel
	}
	if err := s.Store.CreateCollection(ctx, c); err != nil {
		return Collection{}, err
	}
	return c, nil
}

// Collection returns the team's collection id with its counts. Another
// team's collection is reported as missing, in the words used for one
// that does not exist: teams see nothing of each other's.
func (s *Service) Collection(ctx context.Context, teamID, id string) (Collection, error) {
	c, err := s.Store.GetCollection(ctx, id)
	if err == nil && c.TeamID != teamID {
		return Collection{}, apierr.Wrapf(ErrNotFound, "no collection %q", id)
	}
	return c, err
}

// ListCollections returns a team's collections.
func (s *Service) ListCollections(ctx context.Context, teamID string) ([]Collection, error) {
	return s.Store.ListCollections(ctx, teamID)
}

// GetDocument returns a document with its text (ErrNotFound), whatever
// its team: for background work (ingestion). Callers acting for a team
// use Document.
func (s *Service) GetDocument(ctx context.Context, id string) (Document, error) {
	return s.Store.GetDocument(ctx, id)
}

// Document returns the document id of the collection c (one the caller's
// team owns: see Collection) with its text; one of another collection is
// reported as missing, in the words used for one that does not exist.
func (s *Service) Document(ctx context.Context, c Collection, id string) (Document, error) {
	d, err := s.Store.GetDocument(ctx, id)
	if err == nil && d.CollectionID != c.ID {
		return Document{}, apierr.Wrapf(ErrNotFound, "no document %q", id)
	}
	return d, err
}

// ListDocuments returns a collection's documents without their text.
func (s *Service) ListDocuments(ctx context.Context, collectionID string) ([]Document, error) {
	return s.Store.ListDocuments(ctx, collectionID)
}

// New returns a Service over store that embeds with embed (and reranks
// with it too when it is a Reranker), indexes vectors in per-collection
// HNSW indexes (internal/vector) and chunks with internal/chunk's defaults.
func New(store Store, embed Embedder, defaultEmbeddingModel string, log *slog.Logger) *Service {
	s := &Service{Store: store, Embed: embed, Vectors: vectorSet{vector.NewSet(vector.Options{})}, Split: SplitText,
		DefaultEmbeddingModel: defaultEmbeddingModel, Log: log}
	if r, ok := embed.(Reranker); ok {
		s.Rerank = r
	}
	return s
}

// vectorSet adapts internal/vector's Set to Vectors.
type vectorSet struct{ s *vector.Set }

func (v vectorSet) Add(collection string, id int64, vec []float32) error {
	return v.s.Add(collection, id, vec)
}
func (v vectorSet) Delete(collection string, ids ...int64) { v.s.Delete(collection, ids...) }
func (v vectorSet) DropCollection(collection string)       { v.s.Drop(collection) }
func (v vectorSet) Search(collection string, q []float32, k int) []VectorHit {
	hits := v.s.Search(collection, q, k)
	out := make([]VectorHit, len(hits))
	for i, h := range hits {
		out[i] = VectorHit{ID: h.ID, Score: h.Score}
	}
	return out
}

// SplitText cuts a document into chunks with internal/chunk's default
// sizes.
func SplitText(text string) []Span {
	cs := chunk.Split(text, chunk.Options{})
	out := make([]Span, len(cs))
	for i, c := range cs {
		out[i] = Span{Start: c.Start, End: c.End}
	}
	return out
}
