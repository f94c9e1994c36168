package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// CreateKey stores k. A key whose Hash is already stored is refused with
// ECONFLICT.
func (db *DB) CreateKey(ctx context.Context, k groundhog.APIKey) error {
	if err := db.check(); err != nil {
		return err
	}
	_, err := db.w.ExecContext(ctx, "INSERT INTO api_keys (hash, id, tenant, created_at) VALUES (?, ?, ?, ?)",
		k.Hash, k.ID, k.Tenant, ns(k.CreatedAt))
	if isConstraint(err) {
		return groundhog.WrapError(groundhog.ECONFLICT, "key already exists", err)
	}
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: create key: %w", err))
	}
	return nil
}

// DeleteKey removes the keys whose public ID is id; none is ENOTFOUND.
func (db *DB) DeleteKey(ctx context.Context, id string) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	res, err := db.w.ExecContext(ctx, "DELETE FROM api_keys WHERE id = ?", id)
	if err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: delete key: %w", err))
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return 0, groundhog.Errorf(groundhog.ENOTFOUND, "no key with id %q", id)
	}
	return int(n), nil
}

// TenantForKey returns the tenant of the key whose hash is hash, or an
// error with code ENOTFOUND.
func (db *DB) TenantForKey(ctx context.Context, hash string) (string, error) {
	if err := db.check(); err != nil {
		return "", err
	}
	var tenant string
	err := db.readRow(ctx, "SELECT tenant FROM api_keys WHERE hash = ?", hash).Scan(&tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return "", groundhog.Errorf(groundhog.ENOTFOUND, "unknown key")
	}
	if err != nil {
		return "", mapErr(fmt.Errorf("sqlite: tenant for key: %w", err))
	}
	return tenant, nil
}

// ListKeys returns every key, oldest first (ties by ID).
func (db *DB) ListKeys(ctx context.Context) ([]groundhog.APIKey, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	rows, err := db.r.QueryContext(ctx, "SELECT hash, id, tenant, created_at FROM api_keys ORDER BY created_at, id, hash")
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: list keys: %w", err))
	}
	defer rows.Close()
	var keys []groundhog.APIKey
	for rows.Next() {
		var (
			k       groundhog.APIKey
			created sql.NullInt64
		)
		if err := rows.Scan(&k.Hash, &k.ID, &k.Tenant, &created); err != nil {
			return nil, mapErr(fmt.Errorf("sqlite: list keys: %w", err))
		}
		k.CreatedAt = fromNS(created)
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: list keys: %w", err))
	}
	return keys, nil
}

// CountKeys returns how many keys exist.
func (db *DB) CountKeys(ctx context.Context) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	var n int
	if err := db.readRow(ctx, "SELECT count(*) FROM api_keys").Scan(&n); err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: count keys: %w", err))
	}
	return n, nil
}
