package postgres

import (
	"context"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

var _ groundhog.ResourceStore = (*DB)(nil)

// PutResource records that r.Tenant owns the provider-side resource
// r.Name of kind r.Kind; storing it again is not an error.
func (db *DB) PutResource(ctx context.Context, r groundhog.Resource) error {
	if err := db.check(); err != nil {
		return err
	}
	_, err := db.pool.Exec(ctx, "INSERT INTO provider_resources (tenant, kind, name, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
		r.Tenant, r.Kind, r.Name, r.CreatedAt.UnixNano())
	if err != nil {
		return mapErr(fmt.Errorf("postgres: put resource: %w", err))
	}
	return nil
}

// OwnedResources returns the names among names that tenant owns for kind.
func (db *DB) OwnedResources(ctx context.Context, tenant, kind string, names []string) ([]string, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, "SELECT name FROM provider_resources WHERE tenant = $1 AND kind = $2 AND name = ANY($3)", tenant, kind, names)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: owned resources: %w", err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, mapErr(fmt.Errorf("postgres: owned resources: %w", err))
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(fmt.Errorf("postgres: owned resources: %w", err))
	}
	return out, nil
}

// DeleteResource forgets tenant's record of a resource, if any.
func (db *DB) DeleteResource(ctx context.Context, tenant, kind, name string) error {
	if err := db.check(); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, "DELETE FROM provider_resources WHERE tenant = $1 AND kind = $2 AND name = $3", tenant, kind, name); err != nil {
		return mapErr(fmt.Errorf("postgres: delete resource: %w", err))
	}
	return nil
}
