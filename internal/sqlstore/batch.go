package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/batch"
)

// The tables of OpenAI's Batch API (internal/batch): files, file_parts,
// batches and batch_items. A missing file or batch, or a taken id, is
// batch.ErrNotFound or batch.ErrConflict wrapped with a message a client
// may read (apierr.Wrapf), without the s.errorf prefix: it is an answer
// about the data, not a storage failure, and the backend's name must not
// reach clients.

var _ batch.Store = (*Store)(nil)

const fileColumns = `id, team_id, filename, purpose, status, bytes, lines, batch_id, kind, created_at`

// CreateFile implements batch.Store. Errors: batch.ErrConflict when the id
// is taken.
func (s *Store) CreateFile(ctx context.Context, f batch.File) error {
	var batchID any
	if f.BatchID != "" {
		batchID = f.BatchID
	}
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO files (`+fileColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		f.ID, f.TeamID, f.Filename, f.Purpose, f.Status, f.Bytes, f.Lines, batchID, f.Kind, s.timeValue(f.CreatedAt))
	if s.d.IsUniqueViolation != nil && s.d.IsUniqueViolation(err) {
		return apierr.Wrapf(batch.ErrConflict, "the file id %s is taken", f.ID)
	}
	if err != nil {
		return s.errorf("create file: %w", err)
	}
	return nil
}

// AddFilePart implements batch.Store.
func (s *Store) AddFilePart(ctx context.Context, fileID string, n int, data []byte) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO file_parts (file_id, part, data) VALUES (?, ?, ?)`), fileID, n, data); err != nil {
		return s.errorf("store file %s part %d: %w", fileID, n, err)
	}
	return nil
}

// FinishFile implements batch.Store. Errors: batch.ErrNotFound.
func (s *Store) FinishFile(ctx context.Context, fileID string, bytes int64, lines int) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE files SET status = ?, bytes = ?, lines = ? WHERE id = ?`), batch.FileProcessed, bytes, lines, fileID)
	if err != nil {
		return s.errorf("finish file %s: %w", fileID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(batch.ErrNotFound, "no file %q", fileID)
	}
	return nil
}

func (s *Store) scanFile(sc scanner) (batch.File, error) {
	var f batch.File
	var batchID sql.NullString
	var created TimeScanner
	if err := sc.Scan(&f.ID, &f.TeamID, &f.Filename, &f.Purpose, &f.Status, &f.Bytes, &f.Lines, &batchID, &f.Kind, &created); err != nil {
		return f, err
	}
	t, err := s.requiredTime(created)
	f.BatchID, f.CreatedAt = batchID.String, t
	return f, err
}

// GetFile implements batch.Store. Errors: batch.ErrNotFound.
func (s *Store) GetFile(ctx context.Context, id string) (batch.File, error) {
	f, err := s.scanFile(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+fileColumns+` FROM files WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return f, apierr.Wrapf(batch.ErrNotFound, "no file %q", id)
	}
	if err != nil {
		return f, s.errorf("get file %s: %w", id, err)
	}
	return f, nil
}

// ListFiles implements batch.Store.
func (s *Store) ListFiles(ctx context.Context, f batch.FileFilter) ([]batch.File, bool, error) {
	var c conds
	c.add("team_id = ?", f.TeamID)
	c.add("status = ?", batch.FileProcessed)
	c.equal([2]string{"purpose", f.Purpose})
	order, cmp := "DESC", "<"
	if f.Ascending {
		order, cmp = "ASC", ">"
	}
	if f.After != "" {
		c.add("seq "+cmp+" (SELECT seq FROM files WHERE id = ?)", f.After)
	}
	limit := pageSize(f.Limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+fileColumns+` FROM files`+c.sql()+` ORDER BY seq `+order+` LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list files: %w", err)
	}
	defer rows.Close()
	var out []batch.File
	for rows.Next() {
		fl, err := s.scanFile(rows)
		if err != nil {
			return nil, false, s.errorf("list files: %w", err)
		}
		out = append(out, fl)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list files: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// DeleteFile implements batch.Store: the file's row and content go in one
// transaction. Errors: batch.ErrNotFound.
func (s *Store) DeleteFile(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("delete file %s: %w", id, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM file_parts WHERE file_id = ?`), id); err != nil {
		return s.errorf("delete file %s: %w", id, err)
	}
	res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM files WHERE id = ?`), id)
	if err != nil {
		return s.errorf("delete file %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(batch.ErrNotFound, "no file %q", id)
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("delete file %s: %w", id, err)
	}
	return nil
}

// FileParts implements batch.Store.
func (s *Store) FileParts(ctx context.Context, fileID string, after, limit int) ([][]byte, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT data FROM file_parts WHERE file_id = ? AND part > ? ORDER BY part LIMIT ?`), fileID, after, limit)
	if err != nil {
		return nil, s.errorf("read file %s: %w", fileID, err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, s.errorf("read file %s: %w", fileID, err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("read file %s: %w", fileID, err)
	}
	return out, nil
}

// PurgeUploads implements batch.Store.
func (s *Store) PurgeUploads(ctx context.Context, before time.Time) (int, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id FROM files WHERE status = ? AND created_at < ?`), batch.FileUploading, s.timeValue(before))
	if err != nil {
		return 0, s.errorf("purge uploads: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, s.errorf("purge uploads: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, s.errorf("purge uploads: %w", err)
	}
	n := 0
	for _, id := range ids {
		if err := s.DeleteFile(ctx, id); err != nil && !errors.Is(err, batch.ErrNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}

const batchColumns = `id, team_id, key_id, endpoint, input_file_id, completion_window, status, model, errors, output_file_id, error_file_id,
	metadata, total, completed, failed, output_bytes, error_bytes, output_lines, error_lines, input_tokens, output_tokens,
	created_at, expires_at, in_progress_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at`

// CreateBatch implements batch.Store. Errors: batch.ErrConflict when the
// id is taken.
func (s *Store) CreateBatch(ctx context.Context, b batch.Batch) error {
	meta := b.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return s.errorf("create batch: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.rebind(`INSERT INTO batches (id, team_id, key_id, endpoint, input_file_id, completion_window, status, model,
		metadata, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		b.ID, b.TeamID, b.KeyID, b.Endpoint, b.InputFileID, b.CompletionWindow, b.Status, b.Model, string(mb), s.timeValue(b.CreatedAt), s.timeValue(b.ExpiresAt))
	if s.d.IsUniqueViolation != nil && s.d.IsUniqueViolation(err) {
		return apierr.Wrapf(batch.ErrConflict, "the batch id %s is taken", b.ID)
	}
	if err != nil {
		return s.errorf("create batch: %w", err)
	}
	return nil
}

func (s *Store) scanBatch(sc scanner) (batch.Batch, error) {
	var b batch.Batch
	var errs, outID, errID sql.NullString
	var meta string
	var ts [9]TimeScanner
	if err := sc.Scan(&b.ID, &b.TeamID, &b.KeyID, &b.Endpoint, &b.InputFileID, &b.CompletionWindow, &b.Status, &b.Model, &errs, &outID, &errID,
		&meta, &b.Total, &b.Completed, &b.Failed, &b.OutputBytes, &b.ErrorBytes, &b.OutputLines, &b.ErrorLines, &b.InputTokens, &b.OutputTokens,
		&ts[0], &ts[1], &ts[2], &ts[3], &ts[4], &ts[5], &ts[6], &ts[7], &ts[8]); err != nil {
		return b, err
	}
	b.OutputFileID, b.ErrorFileID = outID.String, errID.String
	if errs.Valid && errs.String != "" {
		if err := json.Unmarshal([]byte(errs.String), &b.Errors); err != nil {
			return b, s.errorf("batch %s: bad stored errors: %w", b.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(meta), &b.Metadata); err != nil {
		return b, s.errorf("batch %s: bad stored metadata: %w", b.ID, err)
	}
	var err error
	if b.CreatedAt, err = s.requiredTime(ts[0]); err != nil {
		return b, err
	}
	if b.ExpiresAt, err = s.requiredTime(ts[1]); err != nil {
		return b, err
	}
	for i, dst := range []**time.Time{&b.InProgressAt, &b.FinalizingAt, &b.CompletedAt, &b.FailedAt, &b.ExpiredAt, &b.CancellingAt, &b.CancelledAt} {
		if *dst, err = s.timeOf(ts[i+2]); err != nil {
			return b, err
		}
	}
	return b, nil
}

// GetBatch implements batch.Store. Errors: batch.ErrNotFound.
func (s *Store) GetBatch(ctx context.Context, id string) (batch.Batch, error) {
	b, err := s.scanBatch(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+batchColumns+` FROM batches WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return b, apierr.Wrapf(batch.ErrNotFound, "no batch %q", id)
	}
	if err != nil {
		return b, s.errorf("get batch %s: %w", id, err)
	}
	return b, nil
}

// ListBatches implements batch.Store.
func (s *Store) ListBatches(ctx context.Context, teamID, after string, limit int) ([]batch.Batch, bool, error) {
	var c conds
	c.add("team_id = ?", teamID)
	if after != "" {
		c.add("seq < (SELECT seq FROM batches WHERE id = ?)", after)
	}
	limit = pageSize(limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+batchColumns+` FROM batches`+c.sql()+` ORDER BY seq DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list batches: %w", err)
	}
	defer rows.Close()
	var out []batch.Batch
	for rows.Next() {
		b, err := s.scanBatch(rows)
		if err != nil {
			return nil, false, s.errorf("list batches: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list batches: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// OpenBatches implements batch.Store.
func (s *Store) OpenBatches(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id FROM batches WHERE status IN (?, ?, ?, ?) ORDER BY seq`),
		batch.StatusValidating, batch.StatusInProgress, batch.StatusFinalizing, batch.StatusCancelling)
	if err != nil {
		return nil, s.errorf("open batches: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.errorf("open batches: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("open batches: %w", err)
	}
	return ids, nil
}

// transitionColumn is the time column each status stamps.
var transitionColumn = map[string]string{
	batch.StatusInProgress: "in_progress_at", batch.StatusFinalizing: "finalizing_at", batch.StatusCompleted: "completed_at",
	batch.StatusFailed: "failed_at", batch.StatusExpired: "expired_at", batch.StatusCancelling: "cancelling_at", batch.StatusCancelled: "cancelled_at",
}

// TransitionBatch implements batch.Store: one conditional UPDATE. Errors:
// batch.ErrNotFound.
func (s *Store) TransitionBatch(ctx context.Context, id string, t batch.Transition) (bool, error) {
	if len(t.From) == 0 {
		return false, s.errorf("transition batch %s: no status to move from", id)
	}
	set := []string{"status = ?"}
	args := []any{t.To}
	if col, ok := transitionColumn[t.To]; ok && !t.At.IsZero() {
		set, args = append(set, col+" = ?"), append(args, s.timeValue(t.At))
	}
	if t.Total != nil {
		set, args = append(set, "total = ?"), append(args, *t.Total)
	}
	if t.Model != "" {
		set, args = append(set, "model = ?"), append(args, t.Model)
	}
	if t.Errors != nil {
		b, err := json.Marshal(t.Errors)
		if err != nil {
			return false, s.errorf("transition batch %s: %w", id, err)
		}
		set, args = append(set, "errors = ?"), append(args, string(b))
	}
	if t.OutputFileID != "" {
		set, args = append(set, "output_file_id = ?"), append(args, t.OutputFileID)
	}
	if t.ErrorFileID != "" {
		set, args = append(set, "error_file_id = ?"), append(args, t.ErrorFileID)
	}
	args = append(args, id)
	for _, f := range t.From {
		args = append(args, f)
	}
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE batches SET `+strings.Join(set, ", ")+` WHERE id = ? AND status IN (?`+strings.Repeat(", ?", len(t.From)-1)+`)`), args...)
	if err != nil {
		return false, s.errorf("transition batch %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	var one int
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT 1 FROM batches WHERE id = ?`), id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return false, apierr.Wrapf(batch.ErrNotFound, "no batch %q", id)
	} else if err != nil {
		return false, s.errorf("transition batch %s: %w", id, err)
	}
	return false, nil
}

// itemsPerInsert bounds the rows of one INSERT of lines.
const itemsPerInsert = 100

// AddItems implements batch.Store: lines go in multi-row INSERTs, one
// transaction per call; an index stored already is skipped.
func (s *Store) AddItems(ctx context.Context, batchID string, items []batch.Item) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("add batch lines: %w", err)
	}
	defer tx.Rollback()
	for len(items) > 0 {
		chunk := items[:min(itemsPerInsert, len(items))]
		items = items[len(chunk):]
		var q strings.Builder
		q.WriteString(`INSERT INTO batch_items (batch_id, idx, line, custom_id, body) VALUES `)
		args := make([]any, 0, 5*len(chunk))
		for i, it := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?)")
			args = append(args, batchID, it.Index, it.Line, it.CustomID, string(it.Body))
		}
		q.WriteString(` ON CONFLICT (batch_id, idx) DO NOTHING`)
		if _, err := tx.ExecContext(ctx, s.rebind(q.String()), args...); err != nil {
			return s.errorf("add batch lines: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("add batch lines: %w", err)
	}
	return nil
}

// PendingItems implements batch.Store.
func (s *Store) PendingItems(ctx context.Context, batchID string, after, limit int) ([]batch.Item, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT idx, line, custom_id, body FROM batch_items
		WHERE batch_id = ? AND idx > ? AND status = ? ORDER BY idx LIMIT ?`), batchID, after, batch.LinePending, limit)
	if err != nil {
		return nil, s.errorf("pending batch lines: %w", err)
	}
	defer rows.Close()
	var out []batch.Item
	for rows.Next() {
		var it batch.Item
		var body string
		if err := rows.Scan(&it.Index, &it.Line, &it.CustomID, &body); err != nil {
			return nil, s.errorf("pending batch lines: %w", err)
		}
		it.Body = json.RawMessage(body)
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("pending batch lines: %w", err)
	}
	return out, nil
}

// FinishItems implements batch.Store: each line is updated only while
// pending, and the batch's counts grow by the lines updated, in one
// transaction.
func (s *Store) FinishItems(ctx context.Context, batchID string, rs []batch.Result) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.errorf("finish batch lines: %w", err)
	}
	defer tx.Rollback()
	upd, err := tx.PrepareContext(ctx, s.rebind(`UPDATE batch_items SET status = ?, kind = ?, result = ? WHERE batch_id = ? AND idx = ? AND status = ?`))
	if err != nil {
		return 0, s.errorf("finish batch lines: %w", err)
	}
	defer upd.Close()
	var n, completed, failed, outLines, errLines int
	var outBytes, errBytes, in, out int64
	for _, r := range rs {
		res, err := upd.ExecContext(ctx, r.Status, r.Kind, r.Line, batchID, r.Index, batch.LinePending)
		if err != nil {
			return 0, s.errorf("finish batch line %d: %w", r.Index, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			continue
		}
		n++
		if r.Status == batch.LineCompleted {
			completed++
		} else {
			failed++
		}
		if r.Kind == batch.KindOutput {
			outLines, outBytes = outLines+1, outBytes+int64(len(r.Line))+1
		} else {
			errLines, errBytes = errLines+1, errBytes+int64(len(r.Line))+1
		}
		in, out = in+int64(r.InputTokens), out+int64(r.OutputTokens)
	}
	if n > 0 {
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE batches SET completed = completed + ?, failed = failed + ?,
			output_lines = output_lines + ?, output_bytes = output_bytes + ?, error_lines = error_lines + ?, error_bytes = error_bytes + ?,
			input_tokens = input_tokens + ?, output_tokens = output_tokens + ? WHERE id = ?`),
			completed, failed, outLines, outBytes, errLines, errBytes, in, out, batchID); err != nil {
			return 0, s.errorf("finish batch lines: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, s.errorf("finish batch lines: %w", err)
	}
	return n, nil
}

// ResultLines implements batch.Store.
func (s *Store) ResultLines(ctx context.Context, batchID, kind string, after, limit int) ([]string, int, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT idx, result FROM batch_items WHERE batch_id = ? AND idx > ? AND kind = ? ORDER BY idx LIMIT ?`),
		batchID, after, kind, limit)
	if err != nil {
		return nil, after, s.errorf("batch results: %w", err)
	}
	defer rows.Close()
	var out []string
	last := after
	for rows.Next() {
		var line string
		if err := rows.Scan(&last, &line); err != nil {
			return nil, after, s.errorf("batch results: %w", err)
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		return nil, after, s.errorf("batch results: %w", err)
	}
	return out, last, nil
}
