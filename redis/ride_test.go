package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
)

// Commands that ride with a cache write (RideWithPut) are sent in the
// write's round trip, after it, once; sent says whether they ran and all
// succeeded. A rider that cannot ride (another key, an entry too large to
// store) or whose command fails is reported not sent, and the entry's write
// stands either way.
func TestRideWithPutSendsItsCommandsInTheWritesRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, redis.Options{MaxEntryBytes: 4096})
	count := &storetest.RedisCommands{}
	db.Client().AddHook(count)
	now := time.Now()
	mark := db.Prefix() + "ride-mark"
	if err := db.PutCache(ctx, entry("acme", "sha256:warm", "warm", now, time.Hour)); err != nil {
		t.Fatal(err) // the pool's first connection
	}
	// set queues a SET of mark to v, read back after the write; fail queues
	// a command Redis refuses at run time (INCR of a value not a number).
	set := func(v string) func(context.Context, goredis.Pipeliner) []goredis.Cmder {
		return func(ctx context.Context, p goredis.Pipeliner) []goredis.Cmder {
			return []goredis.Cmder{p.Set(ctx, mark, v, time.Minute)}
		}
	}
	fail := func(ctx context.Context, p goredis.Pipeliner) []goredis.Cmder {
		return []goredis.Cmder{p.Set(ctx, mark, "not a number", time.Minute), p.Incr(ctx, mark)}
	}
	for _, tc := range []struct {
		name     string
		hash     string // the entry written under the rider's context
		body     string
		cmds     func(context.Context, goredis.Pipeliner) []goredis.Cmder
		sent     bool
		mark     string // the value of mark after the write
		trips    int64
		rideHash string // the rider's key, when not hash
	}{
		{name: "ridden", hash: "sha256:a", body: "a", cmds: set("a"), sent: true, mark: "a", trips: 1},
		{name: "another key's write", hash: "sha256:b", rideHash: "sha256:other", body: "b", cmds: set("b"), mark: "", trips: 1},
		{name: "entry too large", hash: "sha256:c", body: strings.Repeat("c", 8192), cmds: set("c"), mark: "", trips: 1},
		{name: "failing command", hash: "sha256:d", body: "d", cmds: fail, mark: "not a number", trips: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db.Client().Del(ctx, mark)
			rh := tc.hash
			if tc.rideHash != "" {
				rh = tc.rideHash
			}
			rctx, sent := db.RideWithPut(ctx, "acme", rh, tc.cmds)
			before := count.RoundTrips()
			if err := db.PutCache(rctx, entry("acme", tc.hash, tc.body, now, time.Hour)); err != nil {
				t.Fatalf("PutCache: %v", err)
			}
			if n := count.RoundTrips() - before; n != tc.trips {
				t.Errorf("the write took %d round trips, want %d", n, tc.trips)
			}
			if sent() != tc.sent {
				t.Errorf("sent() = %v, want %v", sent(), tc.sent)
			}
			if v, _ := db.Client().Get(ctx, mark).Result(); v != tc.mark {
				t.Errorf("the rider's mark is %q, want %q", v, tc.mark)
			}
			e, err := db.GetCache(ctx, "acme", tc.hash, now)
			if tc.name == "entry too large" {
				if err == nil {
					t.Errorf("an entry over MaxEntryBytes was stored")
				}
				return
			}
			if err != nil || string(e.Response.Body) != tc.body {
				t.Errorf("the entry reads %v, %v; want it written whatever its rider did", e, err)
			}
		})
	}

	// Another store's write does not carry the rider, even of the same keys:
	// its commands are for the Redis of the store that made it.
	other := openTest(t, redis.Options{Prefix: db.Prefix()}) // the same keys, another client
	db.Client().Del(ctx, mark)
	rctx, sent := db.RideWithPut(ctx, "acme", "sha256:f", set("f"))
	if err := other.PutCache(rctx, entry("acme", "sha256:f", "f", now, time.Hour)); err != nil || sent() {
		t.Errorf("another store's write: %v, sent %v; want written, not sent", err, sent())
	}
	if v, _ := db.Client().Get(ctx, mark).Result(); v != "" {
		t.Errorf("another store's write carried the rider (mark %q)", v)
	}

	// A rider rides once: a second write under the same context is plain.
	db.Client().Del(ctx, mark)
	rctx, sent = db.RideWithPut(ctx, "acme", "sha256:e", set("e"))
	if err := db.PutCache(rctx, entry("acme", "sha256:e", "e", now, time.Hour)); err != nil || !sent() {
		t.Fatalf("first write: %v, sent %v", err, sent())
	}
	db.Client().Del(ctx, mark)
	if err := db.PutCache(rctx, entry("acme", "sha256:e", "e2", now, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Client().Get(ctx, mark).Result(); v != "" {
		t.Errorf("the rider rode a second write (mark %q)", v)
	}
}
