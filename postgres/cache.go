package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
)

var (
	qGetCache = `SELECT shape, ` + strings.Join(respColumnList(""), ", ") + `, created_at, expires_at
		FROM cache
		WHERE tenant = $1 AND request_hash = $2 AND (expires_at IS NULL OR expires_at > $3)`
	qPutCache = func() string {
		cols := append(append([]string{"tenant", "request_hash", "shape"}, respColumnList("")...), "created_at", "expires_at")
		set := make([]string, 0, len(cols))
		for _, c := range cols[2:] {
			set = append(set, c+" = EXCLUDED."+c)
		}
		return "INSERT INTO cache (" + strings.Join(cols, ", ") + ") VALUES (" + params(1, len(cols)) + ")" +
			" ON CONFLICT (tenant, request_hash) DO UPDATE SET " + strings.Join(set, ", ")
	}()
)

// GetCache returns the entry for (tenant, hash) unless it is missing or
// expired at now (ExpiresAt <= now), in which case the error has code
// ENOTFOUND. Expired rows stay until PurgeCache.
func (db *DB) GetCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	return db.getCache(ctx, tenant, hash, now) // batched with concurrent look-ups (readbatch.go)
}

// getCacheAlone is GetCache's statement for one key.
func (db *DB) getCacheAlone(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	var (
		shape            string
		rc               respCols
		created, expires *int64
	)
	dest := append(append([]any{&shape}, rc.dest()...), &created, &expires)
	err := db.pool.QueryRow(ctx, qGetCache, tenant, hash, now.UnixNano()).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found")
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: get cache: %w", err))
	}
	resp, err := rc.response()
	if err != nil {
		return nil, err
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

// PutCache inserts or replaces the entry for (e.Tenant, e.RequestHash).
func (db *DB) PutCache(ctx context.Context, e *groundhog.CacheEntry) error {
	if err := db.check(); err != nil {
		return err
	}
	args := append([]any{e.Tenant, e.RequestHash, string(e.Shape)}, respArgs(&e.Response)...)
	args = append(args, ns(e.CreatedAt), ns(e.ExpiresAt))
	if _, err := db.groupExec(ctx, "c\x00"+e.Tenant+"\x00"+e.RequestHash, qPutCache, args...); err != nil {
		return mapErr(fmt.Errorf("postgres: put cache: %w", err))
	}
	return nil
}

// DeleteCache removes the entry for (tenant, hash); no error when absent.
func (db *DB) DeleteCache(ctx context.Context, tenant, hash string) error {
	if err := db.check(); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, "DELETE FROM cache WHERE tenant = $1 AND request_hash = $2", tenant, hash); err != nil {
		return mapErr(fmt.Errorf("postgres: delete cache: %w", err))
	}
	return nil
}

// PurgeCache deletes every entry expired at now (ExpiresAt <= now) and
// returns how many.
func (db *DB) PurgeCache(ctx context.Context, now time.Time) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, "DELETE FROM cache WHERE expires_at IS NOT NULL AND expires_at <= $1", now.UnixNano())
	if err != nil {
		return 0, mapErr(fmt.Errorf("postgres: purge cache: %w", err))
	}
	return int(tag.RowsAffected()), nil
}
