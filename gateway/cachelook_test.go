package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
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
