package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/scim"
)

// The scim_users, scim_groups and scim_group_members tables: the store
// side of scim.Store (SQLite migration 00023, PostgreSQL 00022).
// userName and displayName are unique case-insensitively: their
// lower-cased keys (user_name_key, display_name_key) carry the unique
// indexes, lower-cased here rather than by the database (SQLite's lower()
// knows ASCII only).

var _ scim.Store = (*Store)(nil)

const scimUserSelect = `SELECT s.user_id, s.user_name, s.external_id, s.given_name, s.family_name, s.formatted, s.display_name,
	s.created_at, s.updated_at, u.email, u.name, u.active FROM scim_users s JOIN users u ON u.id = s.user_id`

// CreateSCIMUser links user u.ID to SCIM. Errors: auth.ErrConflict (the
// user is linked, or the userName is taken), auth.ErrNotFound (no such
// user).
func (s *Store) CreateSCIMUser(ctx context.Context, u scim.User) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO scim_users (user_id, user_name, user_name_key, external_id,
		given_name, family_name, formatted, display_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		u.ID, u.UserName, strings.ToLower(u.UserName), u.ExternalID, u.GivenName, u.FamilyName, u.Formatted, u.DisplayName,
		s.timeValue(u.CreatedAt), s.timeValue(u.UpdatedAt))
	if s.isForeignKey(err) {
		return s.errorf("scim user %q: %w", u.ID, auth.ErrNotFound)
	}
	if err != nil {
		return s.errorf("create scim user: %w", s.classify(err))
	}
	return nil
}

// GetSCIMUser returns a linked user. Errors: auth.ErrNotFound.
func (s *Store) GetSCIMUser(ctx context.Context, userID string) (scim.User, error) {
	u, err := s.scanSCIMUser(s.db.QueryRowContext(ctx, s.rebind(scimUserSelect+` WHERE s.user_id = ?`), userID))
	if errors.Is(err, sql.ErrNoRows) {
		return scim.User{}, s.errorf("scim user %q: %w", userID, auth.ErrNotFound)
	}
	if err != nil {
		return scim.User{}, s.errorf("get scim user: %w", err)
	}
	return u, nil
}

// UpdateSCIMUser writes a linked user's SCIM fields. Errors:
// auth.ErrNotFound, auth.ErrConflict (the userName is taken).
func (s *Store) UpdateSCIMUser(ctx context.Context, u scim.User) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE scim_users SET user_name = ?, user_name_key = ?, external_id = ?,
		given_name = ?, family_name = ?, formatted = ?, display_name = ?, updated_at = ? WHERE user_id = ?`),
		u.UserName, strings.ToLower(u.UserName), u.ExternalID, u.GivenName, u.FamilyName, u.Formatted, u.DisplayName,
		s.timeValue(u.UpdatedAt), u.ID)
	return s.affected(res, err, "update scim user", "scim user", u.ID)
}

// DeleteSCIMUser unlinks a user; their group memberships go with the
// link. Errors: auth.ErrNotFound.
func (s *Store) DeleteSCIMUser(ctx context.Context, userID string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM scim_users WHERE user_id = ?`), userID)
	return s.affected(res, err, "delete scim user", "scim user", userID)
}

// affected turns an UPDATE's or DELETE's result into an error:
// auth.ErrNotFound when no row changed.
func (s *Store) affected(res sql.Result, err error, op, what, id string) error {
	if err != nil {
		return s.errorf("%s: %w", op, s.classify(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.errorf("%s: %w", op, err)
	} else if n == 0 {
		return s.errorf("%s %q: %w", what, id, auth.ErrNotFound)
	}
	return nil
}

// ListSCIMUsers returns a page of the linked users f selects, oldest
// first, and their number.
func (s *Store) ListSCIMUsers(ctx context.Context, f scim.UserFilter, offset, limit int) ([]scim.User, int, error) {
	var c conds
	if f.UserName != "" {
		c.add("s.user_name_key = ?", strings.ToLower(f.UserName))
	}
	c.equal([2]string{"s.external_id", f.ExternalID}, [2]string{"u.email", strings.ToLower(f.Email)}, [2]string{"s.user_id", f.ID})
	var total int
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM scim_users s JOIN users u ON u.id = s.user_id`+c.sql()),
		c.args...).Scan(&total); err != nil {
		return nil, 0, s.errorf("count scim users: %w", err)
	}
	out := []scim.User{}
	if limit <= 0 || offset >= total {
		return out, total, nil
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(scimUserSelect+c.sql()+` ORDER BY s.created_at, s.user_id LIMIT ? OFFSET ?`),
		append(c.args, limit, max(offset, 0))...)
	if err != nil {
		return nil, 0, s.errorf("list scim users: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		u, err := s.scanSCIMUser(rows)
		if err != nil {
			return nil, 0, s.errorf("list scim users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.errorf("list scim users: %w", err)
	}
	return out, total, nil
}

// LinkedSCIMUsers returns those of ids that are linked users.
func (s *Store) LinkedSCIMUsers(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT user_id FROM scim_users WHERE user_id IN (`+placeholders(n)+`)`), args...)
		if err != nil {
			return nil, s.errorf("linked scim users: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, s.errorf("linked scim users: %w", err)
			}
			out[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, s.errorf("linked scim users: %w", err)
		}
		ids = ids[n:]
	}
	return out, nil
}

func (s *Store) scanSCIMUser(r scanner) (scim.User, error) {
	var u scim.User
	var created, updated TimeScanner
	if err := r.Scan(&u.ID, &u.UserName, &u.ExternalID, &u.GivenName, &u.FamilyName, &u.Formatted, &u.DisplayName,
		&created, &updated, &u.Email, &u.Name, &u.Active); err != nil {
		return scim.User{}, err
	}
	var err error
	if u.CreatedAt, err = s.requiredTime(created); err != nil {
		return scim.User{}, err
	}
	if u.UpdatedAt, err = s.requiredTime(updated); err != nil {
		return scim.User{}, err
	}
	return u, nil
}

const scimGroupColumns = `id, display_name, external_id, created_at, updated_at`

// CreateSCIMGroup stores a group and its members, in one transaction.
// Errors: auth.ErrConflict (the id or displayName is taken),
// auth.ErrNotFound (a member is not a linked user).
func (s *Store) CreateSCIMGroup(ctx context.Context, g scim.Group, members []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("create scim group: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO scim_groups (id, display_name, display_name_key, external_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`), g.ID, g.DisplayName, strings.ToLower(g.DisplayName), g.ExternalID,
		s.timeValue(g.CreatedAt), s.timeValue(g.UpdatedAt)); err != nil {
		return s.errorf("create scim group: %w", s.classify(err))
	}
	if err := s.insertMembers(ctx, tx, g.ID, members, g.CreatedAt); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("create scim group: %w", err)
	}
	return nil
}

// insertMembers adds members to a group in tx, skipping present ones.
func (s *Store) insertMembers(ctx context.Context, tx *sql.Tx, groupID string, userIDs []string, at time.Time) error {
	if len(userIDs) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO scim_group_members (group_id, user_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT (group_id, user_id) DO NOTHING`))
	if err != nil {
		return s.errorf("add scim members: %w", err)
	}
	defer stmt.Close()
	t := s.timeValue(at)
	for _, id := range userIDs {
		if _, err := stmt.ExecContext(ctx, groupID, id, t); err != nil {
			if s.isForeignKey(err) {
				return s.errorf("member %q of scim group %q: %w", id, groupID, auth.ErrNotFound)
			}
			return s.errorf("add scim members: %w", err)
		}
	}
	return nil
}

// GetSCIMGroup returns a group. Errors: auth.ErrNotFound.
func (s *Store) GetSCIMGroup(ctx context.Context, id string) (scim.Group, error) {
	g, err := s.scanSCIMGroup(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+scimGroupColumns+` FROM scim_groups WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return scim.Group{}, s.errorf("scim group %q: %w", id, auth.ErrNotFound)
	}
	if err != nil {
		return scim.Group{}, s.errorf("get scim group: %w", err)
	}
	return g, nil
}

// UpdateSCIMGroup writes a group's displayName, externalId and
// lastModified. Errors: auth.ErrNotFound, auth.ErrConflict.
func (s *Store) UpdateSCIMGroup(ctx context.Context, g scim.Group) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE scim_groups SET display_name = ?, display_name_key = ?, external_id = ?, updated_at = ?
		WHERE id = ?`), g.DisplayName, strings.ToLower(g.DisplayName), g.ExternalID, s.timeValue(g.UpdatedAt), g.ID)
	return s.affected(res, err, "update scim group", "scim group", g.ID)
}

// DeleteSCIMGroup removes a group and its memberships. Errors:
// auth.ErrNotFound.
func (s *Store) DeleteSCIMGroup(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM scim_groups WHERE id = ?`), id)
	return s.affected(res, err, "delete scim group", "scim group", id)
}

// ListSCIMGroups returns a page of the groups f selects, oldest first,
// and their number.
func (s *Store) ListSCIMGroups(ctx context.Context, f scim.GroupFilter, offset, limit int) ([]scim.Group, int, error) {
	var c conds
	if f.DisplayName != "" {
		c.add("display_name_key = ?", strings.ToLower(f.DisplayName))
	}
	c.equal([2]string{"external_id", f.ExternalID}, [2]string{"id", f.ID})
	var total int
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM scim_groups`+c.sql()), c.args...).Scan(&total); err != nil {
		return nil, 0, s.errorf("count scim groups: %w", err)
	}
	out := []scim.Group{}
	if limit <= 0 || offset >= total {
		return out, total, nil
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+scimGroupColumns+` FROM scim_groups`+c.sql()+` ORDER BY created_at, id LIMIT ? OFFSET ?`),
		append(c.args, limit, max(offset, 0))...)
	if err != nil {
		return nil, 0, s.errorf("list scim groups: %w", err)
	}
	return s.scanSCIMGroups(rows, out, total)
}

func (s *Store) scanSCIMGroups(rows *sql.Rows, out []scim.Group, total int) ([]scim.Group, int, error) {
	defer rows.Close()
	for rows.Next() {
		g, err := s.scanSCIMGroup(rows)
		if err != nil {
			return nil, 0, s.errorf("list scim groups: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.errorf("list scim groups: %w", err)
	}
	return out, total, nil
}

func (s *Store) scanSCIMGroup(r scanner) (scim.Group, error) {
	var g scim.Group
	var created, updated TimeScanner
	if err := r.Scan(&g.ID, &g.DisplayName, &g.ExternalID, &created, &updated); err != nil {
		return scim.Group{}, err
	}
	var err error
	if g.CreatedAt, err = s.requiredTime(created); err != nil {
		return scim.Group{}, err
	}
	if g.UpdatedAt, err = s.requiredTime(updated); err != nil {
		return scim.Group{}, err
	}
	return g, nil
}

// AddSCIMMembers adds members to a group (present ones are skipped) and
// stamps its lastModified. Errors: auth.ErrNotFound (no such group, or a
// member is not a linked user).
func (s *Store) AddSCIMMembers(ctx context.Context, groupID string, userIDs []string, at time.Time) error {
	return s.changeMembers(ctx, groupID, at, func(tx *sql.Tx) error { return s.insertMembers(ctx, tx, groupID, userIDs, at) })
}

// RemoveSCIMMembers removes members from a group (absent ones are
// skipped) and stamps its lastModified. Errors: auth.ErrNotFound (no such
// group).
func (s *Store) RemoveSCIMMembers(ctx context.Context, groupID string, userIDs []string, at time.Time) error {
	return s.changeMembers(ctx, groupID, at, func(tx *sql.Tx) error {
		for len(userIDs) > 0 {
			n := min(len(userIDs), 500)
			args := []any{groupID}
			for _, id := range userIDs[:n] {
				args = append(args, id)
			}
			if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM scim_group_members WHERE group_id = ? AND user_id IN (`+placeholders(n)+`)`),
				args...); err != nil {
				return s.errorf("remove scim members: %w", err)
			}
			userIDs = userIDs[n:]
		}
		return nil
	})
}

// changeMembers stamps the group's lastModified and runs change, in one
// transaction.
func (s *Store) changeMembers(ctx context.Context, groupID string, at time.Time, change func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("change scim members: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.rebind(`UPDATE scim_groups SET updated_at = ? WHERE id = ?`), s.timeValue(at), groupID)
	if err := s.affected(res, err, "change scim members", "scim group", groupID); err != nil {
		return err
	}
	if err := change(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("change scim members: %w", err)
	}
	return nil
}

// ListSCIMMembers returns a group's members with their e-mail addresses,
// oldest membership first.
func (s *Store) ListSCIMMembers(ctx context.Context, groupID string) ([]scim.Member, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT m.user_id, u.email FROM scim_group_members m JOIN users u ON u.id = m.user_id
		WHERE m.group_id = ? ORDER BY m.created_at, m.user_id`), groupID)
	if err != nil {
		return nil, s.errorf("list scim members: %w", err)
	}
	defer rows.Close()
	out := []scim.Member{}
	for rows.Next() {
		var m scim.Member
		if err := rows.Scan(&m.UserID, &m.Email); err != nil {
			return nil, s.errorf("list scim members: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list scim members: %w", err)
	}
	return out, nil
}

// SCIMGroupsOfUser returns the groups a user is a member of, by name.
func (s *Store) SCIMGroupsOfUser(ctx context.Context, userID string) ([]scim.Group, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+prefixed("g.", scimGroupColumns)+` FROM scim_groups g
		JOIN scim_group_members m ON m.group_id = g.id WHERE m.user_id = ? ORDER BY g.display_name_key, g.id`), userID)
	if err != nil {
		return nil, s.errorf("scim groups of user: %w", err)
	}
	out, _, err := s.scanSCIMGroups(rows, []scim.Group{}, 0)
	return out, err
}

// RemoveSCIMUserFromGroups takes a user out of every group (stamping
// each group's lastModified) and returns the groups' ids.
func (s *Store) RemoveSCIMUserFromGroups(ctx context.Context, userID string, at time.Time) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.errorf("remove scim user from groups: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT group_id FROM scim_group_members WHERE user_id = ? ORDER BY group_id`), userID)
	if err != nil {
		return nil, s.errorf("remove scim user from groups: %w", err)
	}
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, s.errorf("remove scim user from groups: %w", err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, s.errorf("remove scim user from groups: %w", err)
	}
	if len(ids) == 0 {
		return ids, nil
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM scim_group_members WHERE user_id = ?`), userID); err != nil {
		return nil, s.errorf("remove scim user from groups: %w", err)
	}
	args := []any{s.timeValue(at)}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE scim_groups SET updated_at = ? WHERE id IN (`+placeholders(len(ids))+`)`), args...); err != nil {
		return nil, s.errorf("remove scim user from groups: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, s.errorf("remove scim user from groups: %w", err)
	}
	return ids, nil
}
