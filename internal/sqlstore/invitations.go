package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// The invitations table: the store side of auth.InvitationStore.

var _ auth.InvitationStore = (*Store)(nil)

const invitationColumns = `id, token_hash, email, team_id, role, invited_by, created_at, expires_at, accepted_at, user_id`

// CreateInvitation stores inv. Errors: auth.ErrNotFound (no such team).
func (s *Store) CreateInvitation(ctx context.Context, inv auth.Invitation) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO invitations (`+invitationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		inv.ID, inv.TokenHash, inv.Email, inv.TeamID, string(inv.Role), inv.InvitedBy, s.timeValue(inv.CreatedAt), s.timeValue(inv.ExpiresAt),
		s.timePtrValue(inv.AcceptedAt), inv.UserID)
	if s.isForeignKey(err) {
		return s.errorf("create invitation: team %q: %w", inv.TeamID, auth.ErrNotFound)
	}
	if err != nil {
		return s.errorf("create invitation: %w", s.classify(err))
	}
	return nil
}

// GetInvitationByToken returns the invitation whose token hashes to hash.
// Errors: auth.ErrNotFound.
func (s *Store) GetInvitationByToken(ctx context.Context, hash []byte) (auth.Invitation, error) {
	inv, err := s.scanInvitation(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+invitationColumns+` FROM invitations WHERE token_hash = ?`), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return inv, s.errorf("invitation: %w", auth.ErrNotFound)
	}
	if err != nil {
		return inv, s.errorf("get invitation: %w", err)
	}
	return inv, nil
}

// ListInvitations returns team teamID's invitations (every team's for
// ""), newest first.
func (s *Store) ListInvitations(ctx context.Context, teamID string) ([]auth.Invitation, error) {
	q, args := `SELECT `+invitationColumns+` FROM invitations ORDER BY created_at DESC, id`, []any{}
	if teamID != "" {
		q, args = `SELECT `+invitationColumns+` FROM invitations WHERE team_id = ? ORDER BY created_at DESC, id`, []any{teamID}
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, s.errorf("list invitations: %w", err)
	}
	defer rows.Close()
	out := []auth.Invitation{}
	for rows.Next() {
		inv, err := s.scanInvitation(rows)
		if err != nil {
			return nil, s.errorf("list invitations: %w", err)
		}
		out = append(out, inv)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list invitations: %w", err)
	}
	return out, nil
}

// AcceptInvitation marks invitation id used by userID, once. Errors:
// auth.ErrConflict when it was used already (two tabs, a replay).
func (s *Store) AcceptInvitation(ctx context.Context, id, userID string, at time.Time) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE invitations SET accepted_at = ?, user_id = ? WHERE id = ? AND accepted_at IS NULL`),
		s.timeValue(at), userID, id)
	if err != nil {
		return s.errorf("accept invitation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("accept invitation: %w", err)
	} else if n == 0 {
		return s.errorf("invitation %q used already: %w", id, auth.ErrConflict)
	}
	return nil
}

// DeleteInvitation removes invitation id. Errors: auth.ErrNotFound.
func (s *Store) DeleteInvitation(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM invitations WHERE id = ?`), id)
	if err != nil {
		return s.errorf("delete invitation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("delete invitation: %w", err)
	} else if n == 0 {
		return s.errorf("invitation %q: %w", id, auth.ErrNotFound)
	}
	return nil
}

func (s *Store) scanInvitation(r scanner) (auth.Invitation, error) {
	var inv auth.Invitation
	var role string
	var created, expires, accepted TimeScanner
	if err := r.Scan(&inv.ID, &inv.TokenHash, &inv.Email, &inv.TeamID, &role, &inv.InvitedBy, &created, &expires, &accepted, &inv.UserID); err != nil {
		return inv, err
	}
	inv.Role = auth.Role(role)
	var err error
	if inv.CreatedAt, err = s.requiredTime(created); err != nil {
		return inv, err
	}
	if inv.ExpiresAt, err = s.requiredTime(expires); err != nil {
		return inv, err
	}
	if inv.AcceptedAt, err = s.timeOf(accepted); err != nil {
		return inv, err
	}
	return inv, nil
}
