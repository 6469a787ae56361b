package sqlstore

import (
	"context"

	"github.com/sovereign-ai/sovereign/internal/catalog"
)

// The model_specs table: the store side of catalog.SpecStore.

var _ catalog.SpecStore = (*Store)(nil)

// ListModelSpecs returns every stored model configuration, by id.
func (s *Store) ListModelSpecs(ctx context.Context) ([]catalog.StoredSpec, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, spec, created_at, updated_at FROM model_specs ORDER BY id`)
	if err != nil {
		return nil, s.errorf("list model specs: %w", err)
	}
	defer rows.Close()
	out := []catalog.StoredSpec{}
	for rows.Next() {
		var sp catalog.StoredSpec
		var spec string
		var created, updated TimeScanner
		if err := rows.Scan(&sp.ID, &spec, &created, &updated); err != nil {
			return nil, s.errorf("list model specs: %w", err)
		}
		sp.Spec = []byte(spec)
		if sp.CreatedAt, err = s.requiredTime(created); err != nil {
			return nil, err
		}
		if sp.UpdatedAt, err = s.requiredTime(updated); err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list model specs: %w", err)
	}
	return out, nil
}

// PutModelSpec creates or replaces the configuration sp.ID (keeping the
// first CreatedAt).
func (s *Store) PutModelSpec(ctx context.Context, sp catalog.StoredSpec) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO model_specs (id, spec, created_at, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at`),
		sp.ID, string(sp.Spec), s.timeValue(sp.CreatedAt), s.timeValue(sp.UpdatedAt))
	if err != nil {
		return s.errorf("put model spec: %w", err)
	}
	return nil
}

// DeleteModelSpec removes the configuration id. Errors: catalog.ErrNotFound
// (the catalog words it for clients).
func (s *Store) DeleteModelSpec(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM model_specs WHERE id = ?`), id)
	if err != nil {
		return s.errorf("delete model spec: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.errorf("model spec %q: %w", id, catalog.ErrNotFound)
	}
	return nil
}
