package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/nanotime"
)

var _ groundhog.RentedCacheStore = (*DB)(nil)

// PutRentedCache stores c unless a record of (c.Tenant, c.Name) is stored.
func (db *DB) PutRentedCache(ctx context.Context, c groundhog.RentedCache) error {
	if err := db.check(); err != nil {
		return err
	}
	_, err := db.w.ExecContext(ctx, `INSERT INTO rented_caches (tenant, name, operation, model, tokens, created_at, expire_at, end_at, booked_until, done)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		c.Tenant, c.Name, c.Operation, c.Model, c.Tokens, nanotime.Of(c.Created), nanotime.Of(c.Expire), nanotime.Of(c.End), nanotime.Of(c.BookedUntil), c.Done)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: put rented cache: %w", err))
	}
	return nil
}

// ExtendRentedCache sets the expiry of a record not ended nor done.
func (db *DB) ExtendRentedCache(ctx context.Context, tenant, name string, expire time.Time) error {
	if err := db.check(); err != nil {
		return err
	}
	_, err := db.w.ExecContext(ctx, "UPDATE rented_caches SET expire_at = ? WHERE tenant = ? AND name = ? AND end_at = 0 AND done = 0",
		nanotime.Of(expire), tenant, name)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: extend rented cache: %w", err))
	}
	return nil
}

// EndRentedCache sets the end of a record that has none and returns the
// record.
func (db *DB) EndRentedCache(ctx context.Context, tenant, name string, end time.Time) (groundhog.RentedCache, bool, error) {
	if err := db.check(); err != nil {
		return groundhog.RentedCache{}, false, err
	}
	if _, err := db.w.ExecContext(ctx, "UPDATE rented_caches SET end_at = ? WHERE tenant = ? AND name = ? AND end_at = 0", nanotime.Of(end), tenant, name); err != nil {
		return groundhog.RentedCache{}, false, mapErr(fmt.Errorf("sqlite: end rented cache: %w", err))
	}
	var c groundhog.RentedCache
	var created, expire, endAt, booked int64
	err := db.readRow(ctx, `SELECT tenant, name, operation, model, tokens, created_at, expire_at, end_at, booked_until, done FROM rented_caches WHERE tenant = ? AND name = ?`, tenant, name).Scan(&c.Tenant, &c.Name, &c.Operation, &c.Model, &c.Tokens, &created, &expire, &endAt, &booked, &c.Done)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, mapErr(fmt.Errorf("sqlite: end rented cache: %w", err))
	}
	c.Created, c.Expire, c.End, c.BookedUntil = nanotime.Time(created), nanotime.Time(expire), nanotime.Time(endAt), nanotime.Time(booked)
	return c, true, nil
}

// UnbookedCaches returns up to limit records not done after after, in
// (created, tenant, name) order.
func (db *DB) UnbookedCaches(ctx context.Context, after groundhog.RentedCache, limit int) ([]groundhog.RentedCache, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	rows, err := db.r.QueryContext(ctx, `SELECT tenant, name, operation, model, tokens, created_at, expire_at, end_at, booked_until
		FROM rented_caches WHERE done = 0 AND (created_at, tenant, name) > (?, ?, ?) ORDER BY created_at, tenant, name LIMIT ?`,
		nanotime.Cursor(after.Created), after.Tenant, after.Name, limit)
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: unbooked caches: %w", err))
	}
	defer rows.Close()
	var out []groundhog.RentedCache
	for rows.Next() {
		var c groundhog.RentedCache
		var created, expire, end, booked int64
		if err := rows.Scan(&c.Tenant, &c.Name, &c.Operation, &c.Model, &c.Tokens, &created, &expire, &end, &booked); err != nil {
			return nil, mapErr(fmt.Errorf("sqlite: unbooked caches: %w", err))
		}
		c.Created, c.Expire, c.End, c.BookedUntil = nanotime.Time(created), nanotime.Time(expire), nanotime.Time(end), nanotime.Time(booked)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: unbooked caches: %w", err))
	}
	return out, nil
}

// AdvanceRent moves a record's booked-until from from to to, if it is
// still from.
func (db *DB) AdvanceRent(ctx context.Context, tenant, name string, from, to time.Time, done bool) (bool, error) {
	if err := db.check(); err != nil {
		return false, err
	}
	res, err := db.w.ExecContext(ctx, "UPDATE rented_caches SET booked_until = ?, done = ? WHERE tenant = ? AND name = ? AND booked_until = ? AND done = 0",
		nanotime.Of(to), done, tenant, name, nanotime.Of(from))
	if err != nil {
		return false, mapErr(fmt.Errorf("sqlite: advance rent: %w", err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, mapErr(fmt.Errorf("sqlite: advance rent: %w", err))
	}
	return n == 1, nil
}
