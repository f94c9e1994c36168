package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
)

// CreateKey stores k. A key whose Hash is already stored is refused with
// ECONFLICT.
func (db *DB) CreateKey(ctx context.Context, k groundhog.APIKey) error {
	if err := db.check(); err != nil {
		return err
	}
	_, err := db.pool.Exec(ctx, "INSERT INTO api_keys (hash, id, tenant, created_at) VALUES ($1, $2, $3, $4)",
		k.Hash, k.ID, k.Tenant, ns(k.CreatedAt))
	if isUniqueViolation(err) {
		return groundhog.WrapError(groundhog.ECONFLICT, "key already exists", err)
	}
	if err != nil {
		return mapErr(fmt.Errorf("postgres: create key: %w", err))
	}
	return nil
}

// DeleteKey removes the keys whose public ID is id; none is ENOTFOUND.
func (db *DB) DeleteKey(ctx context.Context, id string) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, "DELETE FROM api_keys WHERE id = $1", id)
	if err != nil {
		return 0, mapErr(fmt.Errorf("postgres: delete key: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return 0, groundhog.Errorf(groundhog.ENOTFOUND, "no key with id %q", id)
	}
	return int(tag.RowsAffected()), nil
}

// TenantForKey returns the tenant of the key whose hash is hash, or an
// error with code ENOTFOUND.
func (db *DB) TenantForKey(ctx context.Context, hash string) (string, error) {
	if err := db.check(); err != nil {
		return "", err
	}
	var tenant string
	err := db.pool.QueryRow(ctx, "SELECT tenant FROM api_keys WHERE hash = $1", hash).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", groundhog.Errorf(groundhog.ENOTFOUND, "unknown key")
	}
	if err != nil {
		return "", mapErr(fmt.Errorf("postgres: tenant for key: %w", err))
	}
	return tenant, nil
}

// ListKeys returns every key, oldest first (ties by ID).
func (db *DB) ListKeys(ctx context.Context) ([]groundhog.APIKey, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT hash, id, tenant, created_at FROM api_keys
		ORDER BY created_at, id COLLATE "C", hash COLLATE "C"`)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: list keys: %w", err))
	}
	defer rows.Close()
	var keys []groundhog.APIKey
	for rows.Next() {
		var (
			k       groundhog.APIKey
			created *int64
		)
		if err := rows.Scan(&k.Hash, &k.ID, &k.Tenant, &created); err != nil {
			return nil, mapErr(fmt.Errorf("postgres: list keys: %w", err))
		}
		k.CreatedAt = fromNS(created)
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(fmt.Errorf("postgres: list keys: %w", err))
	}
	return keys, nil
}

// CountKeys returns how many keys exist.
func (db *DB) CountKeys(ctx context.Context) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	var n int
	if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM api_keys").Scan(&n); err != nil {
		return 0, mapErr(fmt.Errorf("postgres: count keys: %w", err))
	}
	return n, nil
}
