package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

var _ groundhog.ResourceStore = (*DB)(nil)

// PutResource records that r.Tenant owns the provider-side resource
// r.Name of kind r.Kind; storing it again is not an error.
func (db *DB) PutResource(ctx context.Context, r groundhog.Resource) error {
	if err := db.check(); err != nil {
		return err
	}
	_, err := db.w.ExecContext(ctx, "INSERT INTO provider_resources (tenant, kind, name, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
		r.Tenant, r.Kind, r.Name, r.CreatedAt.UnixNano())
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: put resource: %w", err))
	}
	return nil
}

// OwnedResources returns the names among names that tenant owns for kind.
func (db *DB) OwnedResources(ctx context.Context, tenant, kind string, names []string) ([]string, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	var out []string
	for len(names) > 0 {
		batch := names[:min(len(names), 500)] // under SQLite's bound on parameters
		names = names[len(batch):]
		args := make([]any, 0, len(batch)+2)
		args = append(args, tenant, kind)
		for _, n := range batch {
			args = append(args, n)
		}
		rows, err := db.r.QueryContext(ctx, "SELECT name FROM provider_resources WHERE tenant = ? AND kind = ? AND name IN (?"+strings.Repeat(", ?", len(batch)-1)+")", args...)
		if err != nil {
			return nil, mapErr(fmt.Errorf("sqlite: owned resources: %w", err))
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return nil, mapErr(fmt.Errorf("sqlite: owned resources: %w", err))
			}
			out = append(out, n)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, mapErr(fmt.Errorf("sqlite: owned resources: %w", err))
		}
	}
	return out, nil
}

// DeleteResource forgets tenant's record of a resource, if any.
func (db *DB) DeleteResource(ctx context.Context, tenant, kind, name string) error {
	if err := db.check(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, "DELETE FROM provider_resources WHERE tenant = ? AND kind = ? AND name = ?", tenant, kind, name); err != nil {
		return mapErr(fmt.Errorf("sqlite: delete resource: %w", err))
	}
	return nil
}
