package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// claimLookScript takes the flight claim KEYS[1] for ARGV[1], for ARGV[2]
// ms, if no one holds it, and then reads the cache entry KEYS[2]: {1,
// entry} (entry false when absent) when it took the claim, {0} when not.
var claimLookScript = goredis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('GET', KEYS[2])}
end
return {0}`)

// prefetchKey carries, in a context, the cache entry ClaimLook read.
type prefetchKey struct{}

// prefetched is an entry read ahead: its key, and its bytes (nil: absent).
type prefetched struct {
	key string
	b   []byte
}

// ClaimLook takes the flight claim claimKey for token, for lease, if no one
// holds it (SET NX), and in the same round trip reads the cache entry of
// (tenant, hash), as a look-up just after the claim would. It reports
// whether it took the claim and, when it did, returns ctx carrying what it
// read: GetCache of that entry under it answers from it (decoded and
// checked as ever) without a round trip of its own.
func (db *DB) ClaimLook(ctx context.Context, claimKey, token string, lease time.Duration, tenant, hash string) (claimed bool, lookCtx context.Context, err error) {
	k := db.cacheKey(tenant, hash)
	res, err := claimLookScript.Run(ctx, db.rdb, []string{claimKey, k}, token, lease.Milliseconds()).Slice()
	if err != nil {
		return false, ctx, fmt.Errorf("redis: claim flight: %w", err)
	}
	if len(res) == 0 || res[0] != int64(1) {
		return false, ctx, nil
	}
	p := &prefetched{key: k}
	if len(res) > 1 {
		if s, ok := res[1].(string); ok {
			p.b = []byte(s)
		}
	}
	return true, context.WithValue(ctx, prefetchKey{}, p), nil
}
