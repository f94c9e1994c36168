package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// respColumns are the columns of a stored Response, in the order of
// respCols.dest and respArgs; prefix names the operation result columns.
func respColumns(prefix string) string {
	p := prefix
	return p + "status, " + p + "content_type, " + p + "streamed, " + p + "model, " +
		p + "input_tokens, " + p + "cached_input_tokens, " + p + "cache_write_tokens, " + p + "output_tokens, " +
		p + "cost, " + p + "body, " + p + "events"
}

var (
	qGetCache = `SELECT shape, ` + respColumns("") + `, created_at, expires_at
		FROM cache
		WHERE tenant = ? AND request_hash = ? AND (expires_at IS NULL OR expires_at > ?)`
	qPutCache = `INSERT OR REPLACE INTO cache (tenant, request_hash, shape, ` + respColumns("") + `, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// GetCache returns the entry for (tenant, hash) unless it is missing or
// expired at now (ExpiresAt <= now), in which case the error has code
// ENOTFOUND. Expired rows stay until PurgeCache.
func (db *DB) GetCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	var (
		shape            string
		rc               respCols
		created, expires sql.NullInt64
	)
	dest := append(append([]any{&shape}, rc.dest()...), &created, &expires)
	err := db.readRow(ctx, qGetCache, tenant, hash, now.UnixNano()).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found")
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: get cache: %w", err))
	}
	resp, err := rc.response()
	if err != nil {
		return nil, fmt.Errorf("sqlite: get cache %s: %w", hash, err)
	}
	return &groundhog.CacheEntry{
		Tenant:      tenant,
		RequestHash: hash,
		Shape:       groundhog.Shape(shape),
		Response:    *resp,
		CreatedAt:   fromNS(created),
		ExpiresAt:   fromNS(expires),
	}, nil
}

// CacheKeys calls fn with the key of every entry stored, live or expired,
// and stops at fn's first error, returning it (cache.KeyLister). It reads
// the primary key's index alone, from one read transaction on the scan pool.
func (db *DB) CacheKeys(ctx context.Context, fn func(tenant, hash string) error) error {
	if err := db.check(); err != nil {
		return err
	}
	rows, err := db.scan.QueryContext(ctx, "SELECT tenant, request_hash FROM cache")
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: cache keys: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, hash string
		if err := rows.Scan(&tenant, &hash); err != nil {
			return mapErr(fmt.Errorf("sqlite: cache keys: %w", err))
		}
		if err := fn(tenant, hash); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return mapErr(fmt.Errorf("sqlite: cache keys: %w", err))
	}
	return nil
}

// PutCache inserts or replaces the entry for (e.Tenant, e.RequestHash).
func (db *DB) PutCache(ctx context.Context, e *groundhog.CacheEntry) error {
	if err := db.check(); err != nil {
		return err
	}
	args := append([]any{e.Tenant, e.RequestHash, string(e.Shape)}, respArgs(&e.Response)...)
	args = append(args, ns(e.CreatedAt), ns(e.ExpiresAt))
	// In a group commit with the concurrent cache and operation writes
	// (operation_batch.go): it returns once the COMMIT holding it is done.
	if _, err := db.opExec(ctx, qPutCache, args...); err != nil {
		return mapErr(fmt.Errorf("sqlite: put cache: %w", err))
	}
	return nil
}

// DeleteCache removes the entry for (tenant, hash); no error when absent.
func (db *DB) DeleteCache(ctx context.Context, tenant, hash string) error {
	if err := db.check(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, "DELETE FROM cache WHERE tenant = ? AND request_hash = ?", tenant, hash); err != nil {
		return mapErr(fmt.Errorf("sqlite: delete cache: %w", err))
	}
	return nil
}

// PurgeCache deletes every entry expired at now (ExpiresAt <= now) and
// returns how many.
func (db *DB) PurgeCache(ctx context.Context, now time.Time) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	res, err := db.w.ExecContext(ctx, "DELETE FROM cache WHERE expires_at IS NOT NULL AND expires_at <= ?", now.UnixNano())
	if err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: purge cache: %w", err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: purge cache: %w", err))
	}
	return int(n), nil
}
