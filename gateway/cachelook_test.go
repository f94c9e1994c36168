package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/distcoalesce"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
)

// readCountingStore counts the cache store's reads.
type readCountingStore struct {
	groundhog.CacheStore
	reads atomic.Int64
}

func (s *readCountingStore) GetCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	s.reads.Add(1)
	return s.CacheStore.GetCache(ctx, tenant, hash, now)
}

// On a store the gateway alone writes (SQLite), a cached miss reads the
// store once: the flight's second look before paying is skipped when the
// gateway wrote nothing there since the first (the race that look exists
// for is held by TestReviewRecheckHitCountedAsUpstream). The answer is
// stored all the same: the same call is then a hit, from memory.
//
// On a store other replicas write too (PostgreSQL without Redis, where
// replicas do not coordinate their flights) the second look is skipped
// the same way: it looks for this replica's own writes only.
func TestCachedMissReadsTheStoreOnce(t *testing.T) {
	for _, shared := range []bool{false, true} {
		st := &readCountingStore{}
		h := newHarness(t, withCacheStore(func(s groundhog.CacheStore) groundhog.CacheStore { st.CacheStore = s; return st }),
			func(s *setup) { s.shared = shared })
		hdr := map[string]string{"Groundhog-Cache": "use"}
		for i, want := range []string{"miss", "hit"} {
			res, body := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"look once"}]}`, hdr)
			if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != want {
				t.Fatalf("shared %v, call %d: status %d, Groundhog-Cache %q, want %q: %s", shared, i+1, res.StatusCode, res.Header.Get("Groundhog-Cache"), want, body)
			}
		}
		if n := st.reads.Load(); n != 1 {
			t.Errorf("shared %v: the store was read %d times for a miss and its hit, want 1", shared, n)
		}
	}
}

// A cached miss coordinated across replicas looks in the shared store
// twice: once before it joins a flight, and once in Flights.Lead after the
// flight's claim is held. The gateway's own second look before paying
// would come between the two and find nothing the later one cannot, so it
// is not made. A look-up Lead finds is served as a hit (Lead's second look
// is held by TestFlightsLookupAfterTheClaimServesAHit).
func TestCachedMissAcrossReplicasLooksTwice(t *testing.T) {
	st := &readCountingStore{}
	o := &otherReplicas{}
	h := newHarness(t, withFlights(o), withCacheStore(func(s groundhog.CacheStore) groundhog.CacheStore { st.CacheStore = s; return st }))
	o.store = func(context.Context, string, string) bool { return true }
	hdr := map[string]string{"Groundhog-Cache": "use"}
	for i, want := range []string{"miss", "hit"} {
		res, body := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"look twice"}]}`, hdr)
		if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != want {
			t.Fatalf("call %d: status %d, Groundhog-Cache %q, want %q: %s", i+1, res.StatusCode, res.Header.Get("Groundhog-Cache"), want, body)
		}
	}
	if n := st.reads.Load(); n != 2 {
		t.Errorf("the shared store was read %d times for a miss across replicas and its hit from memory, want 2", n)
	}
}

// A cached miss coordinated across replicas on Redis takes three round
// trips to Redis: the first look, the flight's claim with the look after it
// (redis.DB.ClaimLook), and the write of the result with the flight's end
// riding in it (redis.DB.RideWithPut). Its hit is then served from memory,
// with none.
func TestCachedMissOnRedisTakesThreeRoundTrips(t *testing.T) {
	ctx := context.Background()
	prefix := "ghtest:" + groundhog.NewID()[:12] + ":"
	db, err := redis.Open(ctx, storetest.RedisURL(t), redis.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if keys, _ := db.Client().Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			db.Client().Del(ctx, keys...)
		}
		db.Close()
	})
	count := &storetest.RedisCommands{}
	db.Client().AddHook(count)
	flights := distcoalesce.New(distcoalesce.Options{Client: db.Client(), Prefix: prefix, Waker: db, Lease: time.Minute,
		ClaimLook: db.ClaimLook, RideWithPut: db.RideWithPut}) // as serve sets them
	h := newHarness(t, withFlights(flights), withCacheStore(func(groundhog.CacheStore) groundhog.CacheStore { return db }))
	hdr := map[string]string{"Groundhog-Cache": "use"}
	call := func(content, want string) {
		t.Helper()
		res, body := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"`+content+`"}]}`, hdr)
		if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != want {
			t.Fatalf("%s: status %d, Groundhog-Cache %q, want %q: %s", content, res.StatusCode, res.Header.Get("Groundhog-Cache"), want, body)
		}
	}
	call("warm", "miss") // loads the scripts
	call("warm again", "miss")
	for _, want := range []struct {
		cache string
		trips int64
	}{{"miss", 3}, {"hit", 0}} {
		before := count.RoundTrips()
		call("three round trips", want.cache)
		if n := count.RoundTrips() - before; n != want.trips {
			t.Errorf("a cached %s took %d round trips to Redis, want %d", want.cache, n, want.trips)
		}
	}
	if claims, err := db.Client().Keys(ctx, prefix+"f:*").Result(); err != nil || len(claims) > 0 {
		t.Errorf("flight claims left after the calls: %q, %v", claims, err)
	}
}
