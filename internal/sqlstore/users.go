package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// The users and memberships tables: the store side of auth.UserStore.

var _ auth.UserStore = (*Store)(nil)

const userColumns = `id, email, name, active, instance_admin, password_hash, failed_logins, locked_until, created_at, last_login_at,
	totp_secret, totp_pending, totp_last_step`

// CreateUser stores u. Errors: auth.ErrConflict when the id or e-mail
// address is taken.
func (s *Store) CreateUser(ctx context.Context, u auth.User) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		u.ID, u.Email, u.Name, u.Active, u.InstanceAdmin, u.PasswordHash, u.FailedLogins, s.timePtrValue(u.LockedUntil),
		s.timeValue(u.CreatedAt), s.timePtrValue(u.LastLoginAt), u.TOTPSecret, u.TOTPPending, u.TOTPLastStep)
	if err != nil {
		return s.errorf("create user: %w", s.classify(err))
	}
	return nil
}

// GetUser returns user id. Errors: auth.ErrNotFound.
func (s *Store) GetUser(ctx context.Context, id string) (auth.User, error) {
	return s.getUser(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id)
}

// GetUserByEmail returns the user with e-mail address email (as stored:
// lower-cased). Errors: auth.ErrNotFound.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (auth.User, error) {
	return s.getUser(ctx, `SELECT `+userColumns+` FROM users WHERE email = ?`, email)
}

func (s *Store) getUser(ctx context.Context, q, arg string) (auth.User, error) {
	u, err := s.scanUser(s.db.QueryRowContext(ctx, s.rebind(q), arg))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.User{}, s.errorf("user %q: %w", arg, auth.ErrNotFound)
	}
	if err != nil {
		return auth.User{}, s.errorf("get user: %w", err)
	}
	return u, nil
}

// ListUsers returns every user, or team teamID's members, oldest first.
func (s *Store) ListUsers(ctx context.Context, teamID string) ([]auth.User, error) {
	var rows *sql.Rows
	var err error
	if teamID == "" {
		rows, err = s.db.QueryContext(ctx, `SELECT `+userColumns+` FROM users ORDER BY created_at, id`)
	} else {
		rows, err = s.db.QueryContext(ctx, s.rebind(`SELECT `+prefixed("u.", userColumns)+` FROM users u
			JOIN memberships m ON m.user_id = u.id WHERE m.team_id = ? ORDER BY u.created_at, u.id`), teamID)
	}
	if err != nil {
		return nil, s.errorf("list users: %w", err)
	}
	defer rows.Close()
	out := []auth.User{}
	for rows.Next() {
		u, err := s.scanUser(rows)
		if err != nil {
			return nil, s.errorf("list users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list users: %w", err)
	}
	return out, nil
}

// prefixed qualifies each column of a comma-separated list.
func prefixed(p, cols string) string {
	f := strings.Split(cols, ",")
	for i := range f {
		f[i] = p + strings.TrimSpace(f[i])
	}
	return strings.Join(f, ", ")
}

// UpdateUser sets the non-nil fields of u on user id. Errors:
// auth.ErrNotFound, auth.ErrConflict (an e-mail address in use).
func (s *Store) UpdateUser(ctx context.Context, id string, u auth.UserUpdate) error {
	var set []string
	var args []any
	add := func(col string, v any) { set, args = append(set, col+" = ?"), append(args, v) }
	if u.Email != nil {
		add("email", *u.Email)
	}
	if u.Name != nil {
		add("name", *u.Name)
	}
	if u.Active != nil {
		add("active", *u.Active)
	}
	if u.InstanceAdmin != nil {
		add("instance_admin", *u.InstanceAdmin)
	}
	if u.PasswordHash != nil {
		add("password_hash", *u.PasswordHash)
	}
	if u.FailedLogins != nil {
		add("failed_logins", *u.FailedLogins)
	}
	if u.LockedUntil != nil {
		add("locked_until", s.timeValue(*u.LockedUntil))
	} else if u.ClearLock {
		set = append(set, "locked_until = NULL")
	}
	if u.LastLoginAt != nil {
		add("last_login_at", s.timeValue(*u.LastLoginAt))
	}
	if u.TOTPSecret != nil {
		add("totp_secret", *u.TOTPSecret)
	}
	if u.TOTPPending != nil {
		add("totp_pending", *u.TOTPPending)
	}
	if u.TOTPLastStep != nil {
		add("totp_last_step", *u.TOTPLastStep)
	}
	if len(set) == 0 {
		set = append(set, "id = id")
	}
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE users SET `+strings.Join(set, ", ")+` WHERE id = ?`), append(args, id)...)
	if err != nil {
		return s.errorf("update user: %w", s.classify(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("update user: %w", err)
	} else if n == 0 {
		return s.errorf("user %q: %w", id, auth.ErrNotFound)
	}
	return nil
}

// AddLoginFailure counts a failed password sign-in and returns the count.
// Errors: auth.ErrNotFound.
func (s *Store) AddLoginFailure(ctx context.Context, id string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.rebind(`UPDATE users SET failed_logins = failed_logins + 1 WHERE id = ? RETURNING failed_logins`), id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, s.errorf("user %q: %w", id, auth.ErrNotFound)
	}
	if err != nil {
		return 0, s.errorf("add login failure: %w", err)
	}
	return n, nil
}

// PutMembership creates or changes a membership. Errors: auth.ErrNotFound
// when the user or team does not exist.
func (s *Store) PutMembership(ctx context.Context, m auth.Membership) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO memberships (user_id, team_id, role, source, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (user_id, team_id) DO UPDATE SET role = excluded.role, source = excluded.source`),
		m.UserID, m.TeamID, string(m.Role), m.Source, s.timeValue(m.CreatedAt))
	if s.isForeignKey(err) {
		return s.errorf("membership of %q in %q: %w", m.UserID, m.TeamID, auth.ErrNotFound)
	}
	if err != nil {
		return s.errorf("put membership: %w", err)
	}
	return nil
}

// DeleteMembership removes a membership. Errors: auth.ErrNotFound.
func (s *Store) DeleteMembership(ctx context.Context, userID, teamID string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM memberships WHERE user_id = ? AND team_id = ?`), userID, teamID)
	if err != nil {
		return s.errorf("delete membership: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("delete membership: %w", err)
	} else if n == 0 {
		return s.errorf("membership of %q in %q: %w", userID, teamID, auth.ErrNotFound)
	}
	return nil
}

// ListMemberships returns user userID's memberships, or team teamID's
// when userID is "", oldest first.
func (s *Store) ListMemberships(ctx context.Context, userID, teamID string) ([]auth.Membership, error) {
	q, arg := `SELECT user_id, team_id, role, source, created_at FROM memberships WHERE user_id = ? ORDER BY created_at, team_id`, userID
	if userID == "" {
		q, arg = `SELECT user_id, team_id, role, source, created_at FROM memberships WHERE team_id = ? ORDER BY created_at, user_id`, teamID
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(q), arg)
	if err != nil {
		return nil, s.errorf("list memberships: %w", err)
	}
	defer rows.Close()
	out := []auth.Membership{}
	for rows.Next() {
		var m auth.Membership
		var role string
		var created TimeScanner
		if err := rows.Scan(&m.UserID, &m.TeamID, &role, &m.Source, &created); err != nil {
			return nil, s.errorf("list memberships: %w", err)
		}
		m.Role = auth.Role(role)
		if m.CreatedAt, err = s.requiredTime(created); err != nil {
			return nil, s.errorf("list memberships: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list memberships: %w", err)
	}
	return out, nil
}

// ListKeysOfUser returns the keys user userID owns, console sessions'
// included, oldest first.
func (s *Store) ListKeysOfUser(ctx context.Context, userID string) ([]auth.Key, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(keySelect+`WHERE k.owner_user_id = ? ORDER BY k.created_at, k.id`), userID)
	if err != nil {
		return nil, s.errorf("list keys of user: %w", err)
	}
	defer rows.Close()
	keys := []auth.Key{}
	for rows.Next() {
		k, err := s.scanKey(rows)
		if err != nil {
			return nil, s.errorf("list keys of user: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list keys of user: %w", err)
	}
	return keys, nil
}

func (s *Store) scanUser(r scanner) (auth.User, error) {
	var u auth.User
	var locked, created, last TimeScanner
	if err := r.Scan(&u.ID, &u.Email, &u.Name, &u.Active, &u.InstanceAdmin, &u.PasswordHash, &u.FailedLogins,
		&locked, &created, &last, &u.TOTPSecret, &u.TOTPPending, &u.TOTPLastStep); err != nil {
		return auth.User{}, err
	}
	var err error
	if u.LockedUntil, err = s.timeOf(locked); err != nil {
		return auth.User{}, err
	}
	if u.CreatedAt, err = s.requiredTime(created); err != nil {
		return auth.User{}, err
	}
	if u.LastLoginAt, err = s.timeOf(last); err != nil {
		return auth.User{}, err
	}
	return u, nil
}

// GetUserByIdentity returns the user linked to a provider's subject.
// Errors: auth.ErrNotFound.
func (s *Store) GetUserByIdentity(ctx context.Context, provider, subject string) (auth.User, error) {
	u, err := s.scanUser(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+prefixed("u.", userColumns)+` FROM users u
		JOIN user_identities i ON i.user_id = u.id WHERE i.provider = ? AND i.subject = ?`), provider, subject))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.User{}, s.errorf("identity %s/%s: %w", provider, subject, auth.ErrNotFound)
	}
	if err != nil {
		return auth.User{}, s.errorf("get user by identity: %w", err)
	}
	return u, nil
}

// LinkIdentity links a provider's subject to user userID. Errors:
// auth.ErrConflict (linked already), auth.ErrNotFound (no such user).
func (s *Store) LinkIdentity(ctx context.Context, provider, subject, userID string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO user_identities (provider, subject, user_id, created_at) VALUES (?, ?, ?, ?)`),
		provider, subject, userID, s.timeValue(at))
	if s.isForeignKey(err) {
		return s.errorf("link identity: user %q: %w", userID, auth.ErrNotFound)
	}
	if err != nil {
		return s.errorf("link identity: %w", s.classify(err))
	}
	return nil
}

// The signin_challenges table: the store side of auth.ChallengeStore.

var _ auth.ChallengeStore = (*Store)(nil)

// CreateSigninChallenge stores a password sign-in waiting for its code.
func (s *Store) CreateSigninChallenge(ctx context.Context, idHash []byte, userID string, expires time.Time) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO signin_challenges (id_hash, user_id, expires_us) VALUES (?, ?, ?)`),
		idHash, userID, expires.UnixMicro())
	if err != nil {
		return s.errorf("create sign-in challenge: %w", s.classify(err))
	}
	return nil
}

// TakeSigninChallenge counts an attempt and returns the challenge.
// Errors: auth.ErrNotFound.
func (s *Store) TakeSigninChallenge(ctx context.Context, idHash []byte) (string, time.Time, int, error) {
	var userID string
	var expires int64
	var attempts int
	err := s.db.QueryRowContext(ctx, s.rebind(`UPDATE signin_challenges SET attempts = attempts + 1 WHERE id_hash = ?
		RETURNING user_id, expires_us, attempts`), idHash).Scan(&userID, &expires, &attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, 0, s.errorf("sign-in challenge: %w", auth.ErrNotFound)
	}
	if err != nil {
		return "", time.Time{}, 0, s.errorf("take sign-in challenge: %w", err)
	}
	return userID, time.UnixMicro(expires).UTC(), attempts, nil
}

// DeleteSigninChallenge removes a challenge (and, while at it, every
// expired one).
func (s *Store) DeleteSigninChallenge(ctx context.Context, idHash []byte) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM signin_challenges WHERE id_hash = ? OR expires_us < ?`), idHash, time.Now().UnixMicro()); err != nil {
		return s.errorf("delete sign-in challenge: %w", err)
	}
	return nil
}

// UseTOTPStep records user id's use of a code's step, once.
func (s *Store) UseTOTPStep(ctx context.Context, id string, step int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE users SET totp_last_step = ? WHERE id = ? AND totp_last_step < ?`), step, id, step)
	if err != nil {
		return false, s.errorf("use TOTP step: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.errorf("use TOTP step: %w", err)
	}
	return n == 1, nil
}
