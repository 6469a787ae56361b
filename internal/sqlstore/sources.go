package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// The collections, documents and chunks tables: the store side of
// sources.Store. A missing collection or document, or a taken name, is
// sources.ErrNotFound or sources.ErrConflict wrapped with a message a
// client may read (apierr.Wrapf), without the s.errorf prefix: it is an
// answer about the data, not a storage failure, and the backend's name
// must not reach clients.

var _ sources.Store = (*Store)(nil)

func jsonText(m map[string]any) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}

func parseJSONMap(s string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

// CreateCollection stores c. Errors: sources.ErrConflict when the team has
// a collection of that name; sources.ErrNotFound when the team does not
// exist.
func (s *Store) CreateCollection(ctx context.Context, c sources.Collection) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO collections (id, team_id, name, description, embedding_model, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.TeamID, c.Name, c.Description, c.EmbeddingModel, jsonText(c.Metadata), s.timeValue(c.CreatedAt))
	switch {
	case err == nil:
		return nil
	case s.d.IsUniqueViolation != nil && s.d.IsUniqueViolation(err):
		return apierr.Wrapf(sources.ErrConflict, "your team already has a collection named %q", c.Name)
	case s.isForeignKey(err):
		return apierr.Wrapf(sources.ErrNotFound, "no team %q", c.TeamID)
	}
	return s.errorf("create collection: %w", err)
}

const collectionColumns = `c.id, c.team_id, c.name, c.description, c.embedding_model, c.metadata, c.created_at,
	(SELECT COUNT(*) FROM documents d WHERE d.collection_id = c.id),
	(SELECT COUNT(*) FROM chunks k WHERE k.collection_id = c.id)`

func (s *Store) scanCollection(r scanner) (sources.Collection, error) {
	var c sources.Collection
	var meta string
	var created TimeScanner
	if err := r.Scan(&c.ID, &c.TeamID, &c.Name, &c.Description, &c.EmbeddingModel, &meta, &created, &c.DocumentCount, &c.ChunkCount); err != nil {
		return c, err
	}
	c.Metadata = parseJSONMap(meta)
	t, err := s.requiredTime(created)
	c.CreatedAt = t
	return c, err
}

// GetCollection returns the collection id with its counts. Errors:
// sources.ErrNotFound.
func (s *Store) GetCollection(ctx context.Context, id string) (sources.Collection, error) {
	c, err := s.scanCollection(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+collectionColumns+` FROM collections c WHERE c.id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, apierr.Wrapf(sources.ErrNotFound, "no collection %q", id)
	}
	if err != nil {
		return c, s.errorf("get collection: %w", err)
	}
	return c, nil
}

// ListCollections returns the team's collections, oldest first.
func (s *Store) ListCollections(ctx context.Context, teamID string) ([]sources.Collection, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+collectionColumns+` FROM collections c WHERE c.team_id = ? ORDER BY c.created_at, c.id`), teamID)
	if err != nil {
		return nil, s.errorf("list collections: %w", err)
	}
	defer rows.Close()
	out := []sources.Collection{}
	for rows.Next() {
		c, err := s.scanCollection(rows)
		if err != nil {
			return nil, s.errorf("list collections: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeleteCollection removes the collection with its documents and chunks.
// Errors: sources.ErrNotFound.
func (s *Store) DeleteCollection(ctx context.Context, id string) error {
	return s.deleteOne(ctx, `DELETE FROM collections WHERE id = ?`, "collection", id)
}

func (s *Store) deleteOne(ctx context.Context, query, what, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(query), id)
	if err != nil {
		return s.errorf("delete %s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(sources.ErrNotFound, "no %s %q", what, id)
	}
	return nil
}

// CreateDocument stores d. Errors: sources.ErrNotFound when its collection
// does not exist.
func (s *Store) CreateDocument(ctx context.Context, d sources.Document) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO documents (id, collection_id, title, url, metadata, format, status, error, progress, text, chars, chunk_count, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		d.ID, d.CollectionID, d.Title, d.URL, jsonText(d.Metadata), d.Format, d.Status, d.Error, d.Progress, d.Text, d.Chars, d.ChunkCount,
		s.timeValue(d.CreatedAt), s.timeValue(d.UpdatedAt))
	if s.isForeignKey(err) {
		return apierr.Wrapf(sources.ErrNotFound, "no collection %q", d.CollectionID)
	}
	if err != nil {
		return s.errorf("create document: %w", s.classify(err))
	}
	return nil
}

func (s *Store) scanDocument(r scanner, withText bool) (sources.Document, error) {
	var d sources.Document
	var meta string
	var created, updated TimeScanner
	dest := []any{&d.ID, &d.CollectionID, &d.Title, &d.URL, &meta, &d.Format, &d.Status, &d.Error, &d.Progress, &d.Chars, &d.ChunkCount, &created, &updated}
	if withText {
		dest = append(dest, &d.Text)
	}
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.Metadata = parseJSONMap(meta)
	var err error
	if d.CreatedAt, err = s.requiredTime(created); err != nil {
		return d, err
	}
	d.UpdatedAt, err = s.requiredTime(updated)
	return d, err
}

const documentColumns = `id, collection_id, title, url, metadata, format, status, error, progress, chars, chunk_count, created_at, updated_at`

// GetDocument returns the document id with its text. Errors:
// sources.ErrNotFound.
func (s *Store) GetDocument(ctx context.Context, id string) (sources.Document, error) {
	d, err := s.scanDocument(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+documentColumns+`, text FROM documents WHERE id = ?`), id), true)
	if errors.Is(err, sql.ErrNoRows) {
		return d, apierr.Wrapf(sources.ErrNotFound, "no document %q", id)
	}
	if err != nil {
		return d, s.errorf("get document: %w", err)
	}
	return d, nil
}

// ListDocuments returns the collection's documents without their text,
// oldest first.
func (s *Store) ListDocuments(ctx context.Context, collectionID string) ([]sources.Document, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+documentColumns+` FROM documents WHERE collection_id = ? ORDER BY created_at, id`), collectionID)
	if err != nil {
		return nil, s.errorf("list documents: %w", err)
	}
	defer rows.Close()
	out := []sources.Document{}
	for rows.Next() {
		d, err := s.scanDocument(rows, false)
		if err != nil {
			return nil, s.errorf("list documents: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// ProcessingDocuments returns the ids of the documents still processing,
// oldest first.
func (s *Store) ProcessingDocuments(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id FROM documents WHERE status = ? ORDER BY created_at, id`), sources.StatusProcessing)
	if err != nil {
		return nil, s.errorf("processing documents: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.errorf("processing documents: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// UpdateDocument changes the document's processing state. Errors:
// sources.ErrNotFound.
func (s *Store) UpdateDocument(ctx context.Context, id string, u sources.DocumentUpdate, at time.Time) error {
	sets := []string{"updated_at = ?"}
	args := []any{s.timeValue(at)}
	if u.Status != nil {
		sets, args = append(sets, "status = ?"), append(args, *u.Status)
	}
	if u.Error != nil {
		sets, args = append(sets, "error = ?"), append(args, *u.Error)
	}
	if u.Progress != nil {
		sets, args = append(sets, "progress = ?"), append(args, *u.Progress)
	}
	if u.ChunkCount != nil {
		sets, args = append(sets, "chunk_count = ?"), append(args, *u.ChunkCount)
	}
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE documents SET `+strings.Join(sets, ", ")+` WHERE id = ?`), append(args, id)...)
	if err != nil {
		return s.errorf("update document: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(sources.ErrNotFound, "no document %q", id)
	}
	return nil
}

// DeleteDocument removes the document; its chunks go with it, from the
// keyword index too. In the same transaction it counts a deletion in the
// document's collection (document_deletions), so that other servers learn
// that their vector index of the collection may hold deleted chunks.
// Errors: sources.ErrNotFound.
func (s *Store) DeleteDocument(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("delete document: %w", err)
	}
	defer tx.Rollback()
	// The collection's row first: DeleteCollection locks it before the
	// documents, and taking the locks in the same order cannot deadlock.
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE collections SET document_deletions = document_deletions + 1
		WHERE id = (SELECT collection_id FROM documents WHERE id = ?)`), id); err != nil {
		return s.errorf("delete document: %w", err)
	}
	res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM documents WHERE id = ?`), id)
	if err != nil {
		return s.errorf("delete document: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(sources.ErrNotFound, "no document %q", id)
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("delete document: %w", err)
	}
	return nil
}

// EncodeVector is the stored form of an embedding: little-endian float32s
// (nil for none).
func EncodeVector(v []float32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("stored embedding has %d bytes, not a multiple of 4", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// AddChunks stores chunks (and the embeddings of those that have one) in
// one transaction and returns their ids in order. Errors:
// sources.ErrNotFound when a chunk's document does not exist.
func (s *Store) AddChunks(ctx context.Context, chunks []sources.Chunk) ([]int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.errorf("add chunks: %w", err)
	}
	defer tx.Rollback()
	if s.d.CollectionLock != "" {
		// Every collection of the batch, in one order, so that two batches
		// cannot wait on each other.
		var cols []string
		for _, c := range chunks {
			cols = append(cols, c.CollectionID)
		}
		slices.Sort(cols)
		for _, c := range slices.Compact(cols) {
			if _, err := tx.ExecContext(ctx, s.rebind(s.d.CollectionLock), c); err != nil {
				return nil, s.errorf("add chunks: %w", err)
			}
		}
	}
	insert := `INSERT INTO chunks (document_id, collection_id, seq, start_char, end_char, text) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`
	if s.d.Placeholder == Dollar {
		insert = `INSERT INTO chunks (document_id, collection_id, seq, start_char, end_char, text, search_text) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`
	}
	stmt, err := tx.PrepareContext(ctx, s.rebind(insert))
	if err != nil {
		return nil, s.errorf("add chunks: %w", err)
	}
	defer stmt.Close()
	embed, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO chunk_embeddings (chunk_id, collection_id, embedding) VALUES (?, ?, ?)`))
	if err != nil {
		return nil, s.errorf("add chunks: %w", err)
	}
	defer embed.Close()
	ids := make([]int64, len(chunks))
	for i, c := range chunks {
		args := []any{c.DocumentID, c.CollectionID, c.Seq, c.Start, c.End, c.Text}
		if s.d.Placeholder == Dollar {
			args = append(args, fold(c.Text))
		}
		err := stmt.QueryRowContext(ctx, args...).Scan(&ids[i])
		if s.isForeignKey(err) {
			return nil, apierr.Wrapf(sources.ErrNotFound, "no document %q", c.DocumentID)
		}
		if err != nil {
			return nil, s.errorf("add chunks: %w", err)
		}
		if c.Embedding != nil {
			if _, err := embed.ExecContext(ctx, ids[i], c.CollectionID, EncodeVector(c.Embedding)); err != nil {
				return nil, s.errorf("add chunks: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, s.errorf("add chunks: %w", err)
	}
	return ids, nil
}

// ChunkIDs returns the ids of the document's chunks, in order.
func (s *Store) ChunkIDs(ctx context.Context, documentID string) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id FROM chunks WHERE document_id = ? ORDER BY seq`), documentID)
	if err != nil {
		return nil, s.errorf("chunk ids: %w", err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, s.errorf("chunk ids: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// GetChunks returns the chunks with these ids (missing ones left out), in
// id order, without their embeddings.
func (s *Store) GetChunks(ctx context.Context, ids []int64) ([]sources.Chunk, error) {
	if len(ids) == 0 {
		return []sources.Chunk{}, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id, document_id, collection_id, seq, start_char, end_char, text FROM chunks WHERE id IN (`+placeholders(len(ids))+`) ORDER BY id`), args...)
	if err != nil {
		return nil, s.errorf("get chunks: %w", err)
	}
	defer rows.Close()
	out := []sources.Chunk{}
	for rows.Next() {
		var c sources.Chunk
		if err := rows.Scan(&c.ID, &c.DocumentID, &c.CollectionID, &c.Seq, &c.Start, &c.End, &c.Text); err != nil {
			return nil, s.errorf("get chunks: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CollectionEmbeddings calls fn for each embedded chunk of the collection,
// in id order; an error from fn stops the scan and is returned.
func (s *Store) CollectionEmbeddings(ctx context.Context, collectionID string, fn func(id int64, v []float32) error) error {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT chunk_id, embedding FROM chunk_embeddings WHERE collection_id = ? ORDER BY chunk_id`), collectionID)
	if err != nil {
		return s.errorf("collection embeddings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var emb []byte
		if err := rows.Scan(&id, &emb); err != nil {
			return s.errorf("collection embeddings: %w", err)
		}
		v, err := decodeVector(emb)
		if err != nil {
			return s.errorf("chunk %d: %w", id, err)
		}
		if err := fn(id, v); err != nil {
			return err
		}
	}
	return rows.Err()
}

// EmbeddingsAfter calls fn, in id order, for each embedded chunk of the
// collection whose id is above after, and returns the collection's count of
// document deletions, read in the same statement. A collection's chunk ids
// become visible in increasing order (SQLite serializes write transactions;
// on PostgreSQL AddChunks takes Dialect.CollectionLock), so with after the
// largest id a caller has seen, it gets exactly the chunks added since. An
// error from fn stops the scan and is returned. Errors:
// sources.ErrNotFound when the collection does not exist.
func (s *Store) EmbeddingsAfter(ctx context.Context, collectionID string, after int64, fn func(id int64, v []float32) error) (int64, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT c.document_deletions, e.chunk_id, e.embedding FROM collections c
		LEFT JOIN chunk_embeddings e ON e.collection_id = c.id AND e.chunk_id > ?
		WHERE c.id = ? ORDER BY e.chunk_id`), after, collectionID)
	if err != nil {
		return 0, s.errorf("embeddings after: %w", err)
	}
	defer rows.Close()
	found := false
	var deletions int64
	for rows.Next() {
		var id sql.NullInt64
		var emb []byte
		if err := rows.Scan(&deletions, &id, &emb); err != nil {
			return 0, s.errorf("embeddings after: %w", err)
		}
		found = true
		if !id.Valid {
			continue // the collection has no chunk past after
		}
		v, err := decodeVector(emb)
		if err != nil {
			return 0, s.errorf("chunk %d: %w", id.Int64, err)
		}
		if err := fn(id.Int64, v); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, s.errorf("embeddings after: %w", err)
	}
	if !found {
		return 0, apierr.Wrapf(sources.ErrNotFound, "no collection %q", collectionID)
	}
	return deletions, nil
}

// EmbeddedChunkIDs returns the ids of the collection's embedded chunks, in
// increasing order (none for an unknown collection).
func (s *Store) EmbeddedChunkIDs(ctx context.Context, collectionID string) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT chunk_id FROM chunk_embeddings WHERE collection_id = ? ORDER BY chunk_id`), collectionID)
	if err != nil {
		return nil, s.errorf("embedded chunk ids: %w", err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, s.errorf("embedded chunk ids: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// maxQueryWords bounds the words a keyword query searches for.
const maxQueryWords = 32

// fold lower-cases s and removes diacritics (NFKD, combining marks
// dropped), the way SQLite's unicode61 tokenizer with remove_diacritics
// matches words; PostgreSQL indexes and queries folded text.
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFKD.String(strings.ToLower(s)) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// queryWords splits a query into distinct folded words of letters and
// digits, so that no full-text query syntax reaches the database.
func queryWords(q string) []string {
	seen := map[string]bool{}
	var out, stop []string
	for _, w := range strings.FieldsFunc(fold(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if seen[w] {
			continue
		}
		seen[w] = true
		if stopwords[w] {
			stop = append(stop, w)
			continue
		}
		out = append(out, w)
		if len(out) == maxQueryWords {
			break
		}
	}
	if len(out) == 0 {
		// A query of function words alone ("who is it") still searches.
		out = stop[:min(len(stop), maxQueryWords)]
	}
	return out
}

// stopwords are English function words left out of keyword queries: every
// query word is ORed into the full-text query, and a word like "the" makes
// the ranking score nearly every chunk (measured by bench/retrieval: 10× the
// keyword search time at 100k chunks) while saying nothing about relevance.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by did do does for from had has have how i in is it
		its of on or that the their there these this to was were what when where which who why will with you`) {
		m[w] = true
	}
	return m
}()

// KeywordSearch returns up to k chunks of the collections matching the
// words of query, best first: BM25 over SQLite FTS5, or ts_rank_cd over
// PostgreSQL full-text search.
//
// On SQLite the work is bounded by the words' frequencies. Scoring a chunk
// is what costs (FTS5 computes BM25 for every chunk the query matches), and
// an OR of a few common words matches a large share of a big collection:
// thousands of chunks scored to return 40. So when the words occur in more
// than keywordBudget chunks in all, the rarest words whose chunks fit in the
// budget are the query and the rest only add to the score of chunks that
// already match (Elasticsearch's "common terms" query), plus the chunks that
// hold every frequent word. Every chunk returned has its exact BM25 score
// over all the words; what is left out is chunks holding some but not all
// of the frequent words and none of the rare ones. When even the rarest word
// is over the budget, a chunk must hold every word. Below the budget (any
// collection of a few thousand chunks) the query is a plain OR, as on
// PostgreSQL.
func (s *Store) KeywordSearch(ctx context.Context, collectionIDs []string, query string, k int) ([]sources.KeywordHit, error) {
	words := queryWords(query)
	if len(words) == 0 || len(collectionIDs) == 0 || k <= 0 {
		return []sources.KeywordHit{}, nil
	}
	if s.d.Placeholder == Dollar {
		tsq := strings.Join(words, " | ")
		args := []any{tsq, tsq}
		for _, id := range collectionIDs {
			args = append(args, id)
		}
		return s.keywordQuery(ctx, `SELECT id, ts_rank_cd(tsv, to_tsquery('simple', ?)) AS score FROM chunks
			WHERE tsv @@ to_tsquery('simple', ?) AND collection_id IN (`+placeholders(len(collectionIDs))+`)
			ORDER BY score DESC, id LIMIT ?`, append(args, k)...)
	}
	rare, common, err := s.splitByFrequency(ctx, words)
	if err != nil {
		return nil, err
	}
	var parts []ftsPart
	switch {
	case len(common) == 0:
		parts = []ftsPart{{match: orQuery(rare)}}
	case len(rare) == 0:
		parts = []ftsPart{{match: andQuery(common), newest: true}}
	default:
		// Chunks with a rare word, scored by the rare words; those that also
		// hold frequent words, scored by every word; and, when there are two
		// or more frequent words, chunks with all of them. One frequent word
		// alone selects too much. A chunk matched by several parts keeps its
		// highest score, which is the one over all the words it holds (BM25
		// adds a positive amount per word).
		r := "(" + orQuery(rare) + ")"
		parts = []ftsPart{{match: r}, {match: r + " AND (" + orQuery(common) + ")"}}
		if len(common) > 1 {
			parts = append(parts, ftsPart{match: andQuery(common), newest: true})
		}
	}
	return s.fts(ctx, parts, collectionIDs, k)
}

// keywordBudget is how many chunks (over every collection) a SQLite keyword
// search's words may occur in before its frequent words stop widening the
// match; see KeywordSearch. bench: BenchmarkKeywordSearch in internal/sqlite.
const keywordBudget = 1000

// splitByFrequency orders words by how many chunks hold them and splits
// them into the rarest ones whose chunks add up to at most keywordBudget
// (all of them when they fit) and the rest.
func (s *Store) splitByFrequency(ctx context.Context, words []string) (rare, common []string, err error) {
	docs, err := s.termDocs(ctx, words)
	if err != nil {
		return nil, nil, err
	}
	sorted := slices.Clone(words)
	slices.SortStableFunc(sorted, func(a, b string) int { return cmp.Compare(docs[a], docs[b]) })
	total := 0
	for i, w := range sorted {
		if total+docs[w] > keywordBudget {
			return sorted[:i], sorted[i:], nil
		}
		total += docs[w]
	}
	return sorted, nil, nil
}

// termCounts caches chunks_fts_terms counts for termCountTTL: FTS5 counts
// a word's chunks by walking its whole posting list (milliseconds for a word
// in half of 100k chunks), and the frequent words are the ones queries keep
// repeating. A stale count only shifts where a word falls against the
// budget; scores are always computed on the current index.
type termCounts struct {
	mu sync.Mutex
	m  map[string]termCount
}

type termCount struct {
	docs int
	at   time.Time
}

const (
	termCountTTL  = 30 * time.Second
	maxTermCounts = 50_000
)

// termDocs returns how many chunks (in every collection) hold each word.
func (s *Store) termDocs(ctx context.Context, words []string) (map[string]int, error) {
	now := time.Now()
	docs := make(map[string]int, len(words))
	var missing []string
	s.terms.mu.Lock()
	for _, w := range words {
		if c, ok := s.terms.m[w]; ok && now.Sub(c.at) < termCountTTL {
			docs[w] = c.docs
		} else {
			missing = append(missing, w)
		}
	}
	s.terms.mu.Unlock()
	if len(missing) == 0 {
		return docs, nil
	}
	args := make([]any, len(missing))
	for i, w := range missing {
		args[i] = w
	}
	rows, err := s.db.QueryContext(ctx, `SELECT term, doc FROM chunks_fts_terms WHERE term IN (`+placeholders(len(missing))+`)`, args...)
	if err != nil {
		return nil, s.errorf("keyword search: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return nil, s.errorf("keyword search: %w", err)
		}
		docs[t] = n
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("keyword search: %w", err)
	}
	s.terms.mu.Lock()
	defer s.terms.mu.Unlock()
	if s.terms.m == nil || len(s.terms.m) > maxTermCounts {
		s.terms.m = map[string]termCount{}
	}
	for _, w := range missing {
		s.terms.m[w] = termCount{docs: docs[w], at: now}
	}
	return docs, nil
}

// orQuery and andQuery are FTS5 queries of quoted words (no query syntax
// of the caller's reaches FTS5).
func orQuery(words []string) string  { return ftsJoin(words, " OR ") }
func andQuery(words []string) string { return ftsJoin(words, " AND ") }

func ftsJoin(words []string, op string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + w + `"`
	}
	return strings.Join(quoted, op)
}

// ftsPart is one FTS5 query of a keyword search; newest scores only its
// newest keywordBudget matches (FTS5 walks its index in rowid order and
// stops there), for a query of frequent words whose matches may be a large
// share of the collection.
type ftsPart struct {
	match  string
	newest bool
}

// fts runs the parts restricted to the collections, as one statement, and
// returns the best k chunks they match, each with its highest BM25 score
// among the parts.
func (s *Store) fts(ctx context.Context, parts []ftsPart, collectionIDs []string, k int) ([]sources.KeywordHit, error) {
	arm := `SELECT c.id AS id, -bm25(chunks_fts) AS score FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
		WHERE chunks_fts MATCH ? AND c.collection_id IN (` + placeholders(len(collectionIDs)) + `)`
	arms := make([]string, len(parts))
	var args []any
	for i, p := range parts {
		arms[i] = arm
		if p.newest {
			arms[i] = `SELECT * FROM (` + arm + ` ORDER BY chunks_fts.rowid DESC LIMIT ` + strconv.Itoa(keywordBudget) + `)`
		}
		args = append(args, p.match)
		for _, id := range collectionIDs {
			args = append(args, id)
		}
	}
	// MATERIALIZED: flattened into the aggregate, bm25() would be called
	// outside the full-text query, which FTS5 refuses.
	q := `WITH hits AS MATERIALIZED (` + strings.Join(arms, " UNION ALL ") + `)
		SELECT id, MAX(score) AS score FROM hits GROUP BY id ORDER BY score DESC, id LIMIT ?`
	return s.keywordQuery(ctx, q, append(args, k)...)
}

// keywordQuery runs a keyword query returning (chunk id, score) rows.
func (s *Store) keywordQuery(ctx context.Context, q string, args ...any) ([]sources.KeywordHit, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, s.errorf("keyword search: %w", err)
	}
	defer rows.Close()
	out := []sources.KeywordHit{}
	for rows.Next() {
		var h sources.KeywordHit
		if err := rows.Scan(&h.ChunkID, &h.Score); err != nil {
			return nil, s.errorf("keyword search: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
