package redis

import (
	"context"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// riderKey carries, in a context, the commands that ride with a cache
// write (RideWithPut).
type riderKey struct{}

// rider is what RideWithPut attached: the cache key whose write carries
// cmds, and whether they were sent and all succeeded.
type rider struct {
	db   *DB // the Redis the commands are for: only its writes carry them
	key  string
	cmds func(ctx context.Context, p goredis.Pipeliner) []goredis.Cmder
	used atomic.Bool // a rider rides once
	ok   atomic.Bool
}

// RideWithPut returns ctx under which the next PutCache of (tenant, hash)
// that writes the entry also sends the commands cmds queues on p, in the
// same round trip and transaction, after the entry's write: a flight's
// release rides with the result it stored (distcoalesce.Options), so a
// waiter woken by it finds the entry. sent reports whether they were sent
// and all succeeded; it is false when no such write was made (Redis
// degraded, an entry too large to store, a write that failed) or one of
// the commands failed, and the caller then sends them itself.
func (db *DB) RideWithPut(ctx context.Context, tenant, hash string, cmds func(ctx context.Context, p goredis.Pipeliner) []goredis.Cmder) (rideCtx context.Context, sent func() bool) {
	r := &rider{db: db, key: db.cacheKey(tenant, hash), cmds: cmds}
	return context.WithValue(ctx, riderKey{}, r), r.ok.Load
}

// riderFor returns the rider ctx carries for db's write of key k, once.
func (db *DB) riderFor(ctx context.Context, k string) *rider {
	r, ok := ctx.Value(riderKey{}).(*rider)
	if !ok || r.db != db || r.key != k || r.used.Swap(true) {
		return nil
	}
	return r
}

// settled records whether every command of the rider succeeded.
func (r *rider) settled(cmds []goredis.Cmder) {
	for _, c := range cmds {
		if c.Err() != nil {
			return
		}
	}
	r.ok.Store(true)
}
