package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// The teams and api_keys tables: the store side of auth.KeyStore.

var _ auth.KeyStore = (*Store)(nil)

// CreateTeam stores t. Errors: auth.ErrConflict when the id or name is
// taken.
func (s *Store) CreateTeam(ctx context.Context, t auth.Team) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)`),
		t.ID, t.Name, s.timeValue(t.CreatedAt))
	if err != nil {
		return s.errorf("create team: %w", s.classify(err))
	}
	return nil
}

// GetTeam returns the team with id. Errors: auth.ErrNotFound.
func (s *Store) GetTeam(ctx context.Context, id string) (auth.Team, error) {
	return s.getTeam(ctx, `SELECT id, name, created_at, capture FROM teams WHERE id = ?`, id)
}

// GetTeamByName returns the team called name. Errors: auth.ErrNotFound.
func (s *Store) GetTeamByName(ctx context.Context, name string) (auth.Team, error) {
	return s.getTeam(ctx, `SELECT id, name, created_at, capture FROM teams WHERE name = ?`, name)
}

func (s *Store) getTeam(ctx context.Context, query, arg string) (auth.Team, error) {
	t, err := s.scanTeam(s.db.QueryRowContext(ctx, s.rebind(query), arg))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Team{}, s.errorf("team %q: %w", arg, auth.ErrNotFound)
	}
	if err != nil {
		return auth.Team{}, s.errorf("get team: %w", err)
	}
	return t, nil
}

// ListTeams returns every team, oldest first.
func (s *Store) ListTeams(ctx context.Context) ([]auth.Team, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, created_at, capture FROM teams ORDER BY created_at, id`)
	if err != nil {
		return nil, s.errorf("list teams: %w", err)
	}
	defer rows.Close()
	teams := []auth.Team{}
	for rows.Next() {
		t, err := s.scanTeam(rows)
		if err != nil {
			return nil, s.errorf("list teams: %w", err)
		}
		teams = append(teams, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list teams: %w", err)
	}
	return teams, nil
}

// SetTeamCapture switches the capture of team id's prompts and outputs.
// Errors: auth.ErrNotFound.
func (s *Store) SetTeamCapture(ctx context.Context, id string, on bool) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE teams SET capture = ? WHERE id = ?`), on, id)
	if err != nil {
		return s.errorf("set team capture: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.errorf("team %q: %w", id, auth.ErrNotFound)
	}
	return nil
}

// DeleteTeam removes team id. Errors: auth.ErrNotFound; auth.ErrConflict
// when keys still belong to it.
func (s *Store) DeleteTeam(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM teams WHERE id = ?`), id)
	if s.isForeignKey(err) {
		return s.errorf("delete team %q: keys still belong to it: %w", id, auth.ErrConflict)
	}
	if err != nil {
		return s.errorf("delete team: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("delete team: %w", err)
	} else if n == 0 {
		return s.errorf("team %q: %w", id, auth.ErrNotFound)
	}
	return nil
}

func (s *Store) scanTeam(r scanner) (auth.Team, error) {
	var t auth.Team
	var created TimeScanner
	if err := r.Scan(&t.ID, &t.Name, &created, &t.Capture); err != nil {
		return auth.Team{}, err
	}
	var err error
	if t.CreatedAt, err = s.requiredTime(created); err != nil {
		return auth.Team{}, err
	}
	return t, nil
}

// CreateKey stores k. Errors: auth.ErrConflict when the id or hash is
// taken; auth.ErrNotFound when its team does not exist.
func (s *Store) CreateKey(ctx context.Context, k auth.Key) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO api_keys
		(id, name, prefix, hash, team_id, scopes, created_at, expires_at, last_used_at, revoked_at, rotated_to, kind, owner_user_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.Name, k.Prefix, k.Hash, k.TeamID, auth.JoinScopes(k.Scopes), s.timeValue(k.CreatedAt),
		s.timePtrValue(k.ExpiresAt), s.timePtrValue(k.LastUsedAt), s.timePtrValue(k.RevokedAt), k.RotatedTo, keyKind(k.Kind), k.OwnerUserID)
	if s.isForeignKey(err) {
		return s.errorf("create key: team %q: %w", k.TeamID, auth.ErrNotFound)
	}
	if err != nil {
		return s.errorf("create key: %w", s.classify(err))
	}
	return nil
}

// keySelect reads keys with their owners' standing (auth.Owner): whether
// the owner is active and an instance administrator, and their role in
// the key's team, read with the key so that a change to the user applies
// at the key's next read.
const keySelect = `SELECT k.id, k.name, k.prefix, k.hash, k.team_id, k.scopes, k.created_at, k.expires_at, k.last_used_at,
	k.revoked_at, k.rotated_to, k.kind, k.owner_user_id, u.active, u.instance_admin, m.role
	FROM api_keys k LEFT JOIN users u ON u.id = k.owner_user_id
	LEFT JOIN memberships m ON m.user_id = k.owner_user_id AND m.team_id = k.team_id `

// GetKey returns the key with id. Errors: auth.ErrNotFound.
func (s *Store) GetKey(ctx context.Context, id string) (auth.Key, error) {
	k, err := s.scanKey(s.db.QueryRowContext(ctx, s.rebind(keySelect+`WHERE k.id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Key{}, s.errorf("key %q: %w", id, auth.ErrNotFound)
	}
	if err != nil {
		return auth.Key{}, s.errorf("get key: %w", err)
	}
	return k, nil
}

// GetKeyByHash returns the key whose hash is hash. Errors:
// auth.ErrNotFound.
func (s *Store) GetKeyByHash(ctx context.Context, hash []byte) (auth.Key, error) {
	k, err := s.scanKey(s.db.QueryRowContext(ctx, s.rebind(keySelect+`WHERE k.hash = ?`), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Key{}, s.errorf("key by hash: %w", auth.ErrNotFound)
	}
	if err != nil {
		return auth.Key{}, s.errorf("get key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns the keys of team teamID, or of all teams when teamID is
// "", oldest first.
func (s *Store) ListKeys(ctx context.Context, teamID string) ([]auth.Key, error) {
	var rows *sql.Rows
	var err error
	if teamID == "" {
		rows, err = s.db.QueryContext(ctx, keySelect+`WHERE k.kind <> 'session' ORDER BY k.created_at, k.id`)
	} else {
		rows, err = s.db.QueryContext(ctx, s.rebind(keySelect+`WHERE k.team_id = ? AND k.kind <> 'session' ORDER BY k.created_at, k.id`), teamID)
	}
	if err != nil {
		return nil, s.errorf("list keys: %w", err)
	}
	defer rows.Close()
	keys := []auth.Key{}
	for rows.Next() {
		k, err := s.scanKey(rows)
		if err != nil {
			return nil, s.errorf("list keys: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list keys: %w", err)
	}
	return keys, nil
}

// UpdateKey sets the non-nil fields of u on key id. Errors:
// auth.ErrNotFound.
func (s *Store) UpdateKey(ctx context.Context, id string, u auth.KeyUpdate) error {
	var set []string
	var args []any
	if u.RevokedAt != nil {
		set, args = append(set, "revoked_at = ?"), append(args, s.timeValue(*u.RevokedAt))
	}
	if u.ExpiresAt != nil {
		set, args = append(set, "expires_at = ?"), append(args, s.timeValue(*u.ExpiresAt))
	}
	if u.LastUsedAt != nil {
		set, args = append(set, "last_used_at = ?"), append(args, s.timeValue(*u.LastUsedAt))
	}
	if u.RotatedTo != nil {
		set, args = append(set, "rotated_to = ?"), append(args, *u.RotatedTo)
	}
	var res sql.Result
	var err error
	if len(set) == 0 {
		// Nothing to change; still report a missing key.
		res, err = s.db.ExecContext(ctx, s.rebind(`UPDATE api_keys SET id = id WHERE id = ?`), id)
	} else {
		res, err = s.db.ExecContext(ctx, s.rebind(`UPDATE api_keys SET `+strings.Join(set, ", ")+` WHERE id = ?`), append(args, id)...)
	}
	if err != nil {
		return s.errorf("update key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("update key: %w", err)
	} else if n == 0 {
		return s.errorf("key %q: %w", id, auth.ErrNotFound)
	}
	return nil
}

// CountKeys returns how many keys exist.
func (s *Store) CountKeys(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM api_keys`).Scan(&n); err != nil {
		return 0, s.errorf("count keys: %w", err)
	}
	return n, nil
}

func (s *Store) scanKey(r scanner) (auth.Key, error) {
	var k auth.Key
	var scopes string
	var created, expires, lastUsed, revoked TimeScanner
	var active, admin sql.NullBool
	var role sql.NullString
	if err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &k.TeamID, &scopes, &created,
		&expires, &lastUsed, &revoked, &k.RotatedTo, &k.Kind, &k.OwnerUserID, &active, &admin, &role); err != nil {
		return auth.Key{}, err
	}
	if k.OwnerUserID != "" {
		// A missing user reads as inactive: the key stops.
		k.Owner = &auth.Owner{UserID: k.OwnerUserID, Active: active.Valid && active.Bool, InstanceAdmin: admin.Bool, Role: auth.Role(role.String)}
	}
	k.Scopes = auth.SplitScopes(scopes)
	var err error
	if k.CreatedAt, err = s.requiredTime(created); err != nil {
		return auth.Key{}, err
	}
	if k.ExpiresAt, err = s.timeOf(expires); err != nil {
		return auth.Key{}, err
	}
	if k.LastUsedAt, err = s.timeOf(lastUsed); err != nil {
		return auth.Key{}, err
	}
	if k.RevokedAt, err = s.timeOf(revoked); err != nil {
		return auth.Key{}, err
	}
	return k, nil
}

func keyKind(k string) string {
	if k == "" {
		return auth.KindService
	}
	return k
}
