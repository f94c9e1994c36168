package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
)

func (db *DB) cacheKey(tenant, hash string) string {
	return db.prefix + "c:" + strconv.Itoa(len(tenant)) + "." + tenant + ":" + hash
}

func (db *DB) expiryKey() string { return db.prefix + "cache-expiry" }

// delIfSame deletes KEYS[1] (and its expiry index member in KEYS[2]) only
// if it still holds ARGV[1]: a concurrent PutCache that replaced a corrupt
// or expired entry must not lose its entry.
var delIfSame = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], KEYS[1])
  return 1
end
return 0`)

// GetCache returns the entry for (tenant, hash) live at now. A corrupt or
// truncated entry is deleted and reported as ENOTFOUND.
func (db *DB) GetCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	if db.Degraded() {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found (redis unavailable)")
	}
	k := db.cacheKey(tenant, hash)
	var b []byte
	var err error
	if p, ok := ctx.Value(prefetchKey{}).(*prefetched); ok && p.key == k {
		// Read by ClaimLook, in the flight claim's round trip.
		if b = p.b; b == nil {
			err = goredis.Nil
		}
	} else {
		b, err = db.get(ctx, k)
	}
	if errors.Is(err, goredis.Nil) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found")
	}
	if err != nil {
		if db.failed(mapErr(err)) != nil && db.Degraded() {
			return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found (redis unavailable)")
		}
		return nil, mapErr(fmt.Errorf("redis: get cache: %w", err))
	}
	e, err := decode(b)
	if err == nil && (e.Tenant != tenant || e.RequestHash != hash) {
		err = errCorrupt
	}
	if err != nil {
		db.corrupt.Add(1)
		db.log.Warn("redis: corrupt cache entry deleted", "tenant", tenant, "hash", hash, "bytes", len(b))
		if derr := delIfSame.Run(ctx, db.rdb, []string{k, db.expiryKey()}, b).Err(); derr != nil {
			db.log.Warn("redis: delete corrupt cache entry", "err", derr)
		}
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found (a corrupt entry was deleted)")
	}
	if e.Expired(now) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "cache entry expired")
	}
	return e, nil
}

// PutCache stores e with a native TTL of e.ExpiresAt − e.CreatedAt (the
// wall clock's remaining time when CreatedAt is zero); exact expiry is still
// decided by GetCache against its now. An entry over MaxEntryBytes, or with
// no lifetime left, is not stored: any older entry of the key is deleted and
// PutCache succeeds.
func (db *DB) PutCache(ctx context.Context, e *groundhog.CacheEntry) error {
	if db.Degraded() {
		return nil
	}
	k := db.cacheKey(e.Tenant, e.RequestHash)
	b, err := encode(e)
	if err != nil {
		return err
	}
	var ttl time.Duration
	if !e.ExpiresAt.IsZero() {
		if e.CreatedAt.IsZero() {
			ttl = time.Until(e.ExpiresAt)
		} else {
			ttl = e.ExpiresAt.Sub(e.CreatedAt)
		}
	}
	if len(b) > db.maxEntry || (!e.ExpiresAt.IsZero() && ttl < time.Millisecond) {
		if len(b) > db.maxEntry {
			db.skipped.Add(1)
		}
		return db.DeleteCache(ctx, e.Tenant, e.RequestHash)
	}
	r := db.riderFor(ctx, k)
	var set, index goredis.Cmder
	var rode []goredis.Cmder
	_, err = db.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		if e.ExpiresAt.IsZero() {
			set, index = p.Set(ctx, k, b, 0), p.ZRem(ctx, db.expiryKey(), k)
		} else {
			set = p.Set(ctx, k, b, ttl)
			index = p.ZAdd(ctx, db.expiryKey(), goredis.Z{Score: float64(e.ExpiresAt.UnixNano()), Member: k})
		}
		if r != nil {
			rode = r.cmds(ctx, p)
		}
		return nil
	})
	if err != nil && r != nil {
		// The first failed command's error: the write's own, or a
		// rider's (the write then stands; the rider's caller resends).
		err = errors.Join(set.Err(), index.Err())
	}
	if err != nil {
		return db.tolerate(fmt.Errorf("redis: put cache: %w", err))
	}
	if r != nil {
		r.settled(rode)
	}
	return nil
}

// DeleteCache removes the entry for (tenant, hash).
func (db *DB) DeleteCache(ctx context.Context, tenant, hash string) error {
	if db.Degraded() {
		return nil
	}
	k := db.cacheKey(tenant, hash)
	_, err := db.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, k)
		p.ZRem(ctx, db.expiryKey(), k)
		return nil
	})
	if err != nil {
		return db.tolerate(fmt.Errorf("redis: delete cache: %w", err))
	}
	return nil
}

// purgeBatch bounds the index members read per round of PurgeCache.
const purgeBatch = 500

// PurgeCache deletes the entries expired at now and returns how many it
// deleted. Redis expires entries natively, so this mostly trims the expiry
// index of entries Redis already dropped (those are not counted). The index
// scores are float64 nanoseconds, exact only to a few hundred nanoseconds,
// so candidates are read with a millisecond of margin and each one's exact
// expiry is checked against now before it is deleted.
func (db *DB) PurgeCache(ctx context.Context, now time.Time) (int, error) {
	if db.Degraded() {
		return 0, nil
	}
	max := strconv.FormatFloat(float64(now.Add(time.Millisecond).UnixNano()), 'f', 0, 64)
	deleted := 0
	offset := int64(0)
	for {
		keys, err := db.rdb.ZRangeByScore(ctx, db.expiryKey(), &goredis.ZRangeBy{Min: "-inf", Max: max, Offset: offset, Count: purgeBatch}).Result()
		if err != nil {
			return deleted, mapErr(fmt.Errorf("redis: purge cache: %w", err))
		}
		if len(keys) == 0 {
			return deleted, nil
		}
		vals, err := db.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return deleted, mapErr(fmt.Errorf("redis: purge cache: %w", err))
		}
		kept := int64(0)
		for i, v := range vals {
			s, ok := v.(string)
			if !ok { // already expired by Redis: drop the index member
				if err := db.rdb.ZRem(ctx, db.expiryKey(), keys[i]).Err(); err != nil {
					return deleted, mapErr(fmt.Errorf("redis: purge cache: %w", err))
				}
				continue
			}
			e, derr := decode([]byte(s))
			if derr == nil && !e.Expired(now) {
				kept++ // within the score's margin but still live
				continue
			}
			n, err := delIfSame.Run(ctx, db.rdb, []string{keys[i], db.expiryKey()}, s).Int()
			if err != nil {
				return deleted, mapErr(fmt.Errorf("redis: purge cache: %w", err))
			}
			if n == 1 && derr == nil {
				deleted++
			} else if n == 0 {
				kept++ // replaced meanwhile: its new index score decides
			}
		}
		offset += kept
	}
}

// tolerate maps a failed write: when Redis is unreachable the DB turns
// degraded and the write is dropped without an error (the memory tier
// keeps the entry); any other error is returned.
func (db *DB) tolerate(err error) error {
	err = mapErr(err)
	if db.failed(err) != nil && db.Degraded() {
		return nil
	}
	return err
}
