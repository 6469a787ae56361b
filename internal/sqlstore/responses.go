package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/responses"
)

// The responses table: the store side of responses.Store. A missing
// response is responses.ErrNotFound wrapped with a message a client may
// read (apierr.Wrapf), without the s.errorf prefix: the backend's name
// must not reach clients.

var _ responses.Store = (*Store)(nil)

// PutResponse stores a response.
func (s *Store) PutResponse(ctx context.Context, r responses.Stored) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO responses (id, team_id, model, response, input_items, conversation, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), r.ID, r.TeamID, r.Model, string(r.Response), string(r.InputItems), string(r.Conversation), s.timeValue(r.CreatedAt))
	if err != nil {
		return s.errorf("put response: %w", s.classify(err))
	}
	return nil
}

// GetResponse returns the team's response id. Errors: responses.ErrNotFound.
func (s *Store) GetResponse(ctx context.Context, teamID, id string) (responses.Stored, error) {
	r := responses.Stored{ID: id, TeamID: teamID}
	var resp, items, conv string
	var created TimeScanner
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT model, response, input_items, conversation, created_at FROM responses WHERE id = ? AND team_id = ?`),
		id, teamID).Scan(&r.Model, &resp, &items, &conv, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return r, apierr.Wrapf(responses.ErrNotFound, "no response %q", id)
	}
	if err != nil {
		return r, s.errorf("get response: %w", err)
	}
	r.Response, r.InputItems, r.Conversation = []byte(resp), []byte(items), []byte(conv)
	if r.CreatedAt, err = s.requiredTime(created); err != nil {
		return r, err
	}
	return r, nil
}

// DeleteResponse removes the team's response id. Errors: responses.ErrNotFound.
func (s *Store) DeleteResponse(ctx context.Context, teamID, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM responses WHERE id = ? AND team_id = ?`), id, teamID)
	if err != nil {
		return s.errorf("delete response: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(responses.ErrNotFound, "no response %q", id)
	}
	return nil
}
