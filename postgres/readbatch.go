package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/groupcommit"
)

// Cache look-ups are batched as the writes are (group.go): the first
// reader to find no look-up in flight runs its query alone; readers that
// come while one is in flight queue, and the first of them, once it
// returns, looks up every queued key in one statement (qGetCacheMany).
// Under load a statement and its round trip then serve many hits: the
// database parses, plans and answers one statement instead of one a hit,
// and the system calls on both sides are shared. A lone look-up costs
// what it did, and a look-up waits for at most the one in flight before
// its own.

// qGetCacheMany is qGetCache for many keys, each with its own now: every
// live entry found, with the ordinal of its key.
var qGetCacheMany = `SELECT k.i, c.shape, ` + strings.Join(respColumnList("c."), ", ") + `, c.created_at, c.expires_at
	FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS k(tenant, request_hash, now, i)
	CROSS JOIN LATERAL (SELECT * FROM cache
		WHERE cache.tenant = k.tenant AND cache.request_hash = k.request_hash
			AND (cache.expires_at IS NULL OR cache.expires_at > k.now)
		OFFSET 0) c -- not flattened: one probe of the key's index a key, never a scan of the cache`

// cacheRead is one look-up in a read batch.
type cacheRead struct {
	ctx          context.Context
	tenant, hash string
	now          time.Time
	e            *groundhog.CacheEntry
	err          error
	groupcommit.Waiter
}

var cacheReadPool = sync.Pool{New: func() any { return &cacheRead{Waiter: groupcommit.NewWaiter()} }}

// readBatches batches the cache look-ups (getCache) and counts them and
// the statements they took.
type readBatches struct {
	q            groupcommit.Queue[*cacheRead]
	reads, trips atomic.Uint64
}

// getCache looks (tenant, hash) up at now, batched with concurrent
// look-ups.
func (db *DB) getCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	r := cacheReadPool.Get().(*cacheRead)
	r.ctx, r.tenant, r.hash, r.now = ctx, tenant, hash, now
	db.reads.q.Run(r, db.runCacheReads)
	e, err := r.e, r.err
	*r = cacheRead{Waiter: r.Waiter}
	cacheReadPool.Put(r)
	return e, err
}

func (db *DB) runCacheReads(batch []*cacheRead) {
	db.reads.trips.Add(1)
	db.reads.reads.Add(uint64(len(batch)))
	if len(batch) == 1 {
		r := batch[0]
		r.e, r.err = db.getCacheAlone(r.ctx, r.tenant, r.hash, r.now)
		return
	}
	tenants, hashes, nows := make([]string, len(batch)), make([]string, len(batch)), make([]int64, len(batch))
	for i, r := range batch {
		tenants[i], hashes[i], nows[i] = r.tenant, r.hash, r.now.UnixNano()
		r.err = groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found")
	}
	// Not any one caller's context: a caller that gives up must not fail
	// its neighbours' look-ups.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := db.scanCacheMany(ctx, batch, tenants, hashes, nows)
	if err != nil {
		for _, r := range batch {
			r.e, r.err = nil, mapErr(fmt.Errorf("postgres: get cache: %w", err))
		}
	}
}

// scanCacheMany runs qGetCacheMany and gives each entry found to its read.
func (db *DB) scanCacheMany(ctx context.Context, batch []*cacheRead, tenants, hashes []string, nows []int64) error {
	rows, err := db.pool.Query(ctx, qGetCacheMany, tenants, hashes, nows)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i                int64
			shape            string
			rc               respCols
			created, expires *int64
		)
		if err := rows.Scan(append(append([]any{&i, &shape}, rc.dest()...), &created, &expires)...); err != nil {
			return err
		}
		if i < 1 || i > int64(len(batch)) {
			return errors.New("a row of no key of the batch")
		}
		r := batch[i-1]
		resp, err := rc.response()
		if err != nil {
			r.e, r.err = nil, err
			continue
		}
		r.e = &groundhog.CacheEntry{Tenant: r.tenant, RequestHash: r.hash, Shape: groundhog.Shape(shape), Response: *resp,
			CreatedAt: fromNS(created), ExpiresAt: fromNS(expires)}
		r.err = nil
	}
	return rows.Err()
}

// ReadStats returns the cache look-ups made since Open and the statements
// they took: reads ÷ statements is the mean batch.
func (db *DB) ReadStats() (reads, statements uint64) {
	return db.reads.reads.Load(), db.reads.trips.Load()
}
