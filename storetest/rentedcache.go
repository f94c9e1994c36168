package storetest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// RunRentedCaches runs the RentedCacheStore conformance suite. open is
// called once per subtest and must return an empty store of its own.
func RunRentedCaches(t *testing.T, open func(t *testing.T) groundhog.RentedCacheStore) {
	t.Run("RentedCaches/Lifecycle", func(t *testing.T) { testRentedLifecycle(t, open(t)) })
	t.Run("RentedCaches/AdvanceOnce", func(t *testing.T) { testRentedAdvanceOnce(t, open(t)) })
	t.Run("RentedCaches/Pages", func(t *testing.T) { testRentedPages(t, open(t)) })
}

func unbooked(t *testing.T, s groundhog.RentedCacheStore) map[string]groundhog.RentedCache {
	t.Helper()
	cs, err := s.UnbookedCaches(ctx, groundhog.RentedCache{}, 100)
	must(t, err, "UnbookedCaches")
	out := map[string]groundhog.RentedCache{}
	for _, c := range cs {
		out[c.Tenant+" "+c.Name] = c
	}
	return out
}

func testRentedLifecycle(t *testing.T, s groundhog.RentedCacheStore) {
	c := groundhog.RentedCache{Tenant: "acme", Operation: "chat", Model: "gemini-2.5-flash", Name: "cachedContents/a",
		Tokens: 2048, Created: t0, Expire: at(time.Hour), BookedUntil: t0}
	must(t, s.PutRentedCache(ctx, c), "PutRentedCache")
	again := c
	again.Tokens, again.Expire = 1, at(time.Minute)
	must(t, s.PutRentedCache(ctx, again), "PutRentedCache again")
	other := c
	other.Tenant, other.Created, other.BookedUntil = "globex", at(time.Second), at(time.Second)
	must(t, s.PutRentedCache(ctx, other), "PutRentedCache of another tenant")

	got := unbooked(t, s)
	if len(got) != 2 || !got["acme cachedContents/a"].Created.Equal(t0) || got["acme cachedContents/a"].Tokens != 2048 ||
		!got["acme cachedContents/a"].Expire.Equal(at(time.Hour)) || !got["acme cachedContents/a"].End.IsZero() ||
		got["acme cachedContents/a"].Operation != "chat" || got["acme cachedContents/a"].Model != "gemini-2.5-flash" {
		t.Fatalf("unbooked %+v", got)
	}
	cs, err := s.UnbookedCaches(ctx, groundhog.RentedCache{}, 1)
	must(t, err, "UnbookedCaches")
	if len(cs) != 1 || cs[0].Tenant != "acme" {
		t.Fatalf("limit 1, oldest first: %+v", cs)
	}
	cs, err = s.UnbookedCaches(ctx, cs[0], 1)
	must(t, err, "UnbookedCaches after the first")
	if len(cs) != 1 || cs[0].Tenant != "globex" {
		t.Fatalf("the page after the first: %+v", cs)
	}
	if cs, err = s.UnbookedCaches(ctx, cs[0], 1); err != nil || len(cs) != 0 {
		t.Fatalf("the page after the last: %+v %v", cs, err)
	}

	must(t, s.ExtendRentedCache(ctx, "acme", "cachedContents/a", at(2*time.Hour)), "ExtendRentedCache")
	must(t, s.ExtendRentedCache(ctx, "acme", "cachedContents/none", at(2*time.Hour)), "ExtendRentedCache of no record")
	ended, ok, err := s.EndRentedCache(ctx, "acme", "cachedContents/a", at(90*time.Minute))
	must(t, err, "EndRentedCache")
	if !ok || !ended.End.Equal(at(90*time.Minute)) || !ended.Expire.Equal(at(2*time.Hour)) || ended.Tokens != 2048 || ended.Done {
		t.Fatalf("EndRentedCache returned %+v %v", ended, ok)
	}
	ended, ok, err = s.EndRentedCache(ctx, "acme", "cachedContents/a", at(100*time.Minute))
	must(t, err, "EndRentedCache again")
	if !ok || !ended.End.Equal(at(90*time.Minute)) {
		t.Fatalf("a second end moved the first: %+v", ended)
	}
	if _, ok, err := s.EndRentedCache(ctx, "acme", "cachedContents/none", at(time.Minute)); err != nil || ok {
		t.Fatalf("EndRentedCache of no record: %v %v", ok, err)
	}
	must(t, s.ExtendRentedCache(ctx, "acme", "cachedContents/a", at(3*time.Hour)), "ExtendRentedCache after the end")
	got = unbooked(t, s)
	a := got["acme cachedContents/a"]
	if !a.Expire.Equal(at(2*time.Hour)) || !a.End.Equal(at(90*time.Minute)) || !a.LifeEnd().Equal(at(90*time.Minute)) {
		t.Fatalf("after extend and end: %+v", a)
	}
	if g := got["globex cachedContents/a"]; !g.End.IsZero() || !g.Expire.Equal(at(time.Hour)) {
		t.Fatalf("another tenant's record changed: %+v", g)
	}

	ok, err = s.AdvanceRent(ctx, "acme", "cachedContents/a", t0, at(time.Hour), false)
	must(t, err, "AdvanceRent")
	if !ok {
		t.Fatal("AdvanceRent from the booked-until refused")
	}
	if b := unbooked(t, s)["acme cachedContents/a"].BookedUntil; !b.Equal(at(time.Hour)) {
		t.Fatalf("booked until %v", b)
	}
	ok, err = s.AdvanceRent(ctx, "acme", "cachedContents/a", at(time.Hour), at(90*time.Minute), true)
	must(t, err, "AdvanceRent")
	if !ok {
		t.Fatal("AdvanceRent to done refused")
	}
	got = unbooked(t, s)
	if _, ok := got["acme cachedContents/a"]; ok || len(got) != 1 {
		t.Fatalf("a done record is still unbooked: %+v", got)
	}
	ok, err = s.AdvanceRent(ctx, "acme", "cachedContents/a", at(90*time.Minute), at(2*time.Hour), true)
	must(t, err, "AdvanceRent of a done record")
	if ok {
		t.Fatal("a done record advanced")
	}
}

// testRentedAdvanceOnce: sweepers advancing the same piece at once: one
// wins.
func testRentedAdvanceOnce(t *testing.T, s groundhog.RentedCacheStore) {
	must(t, s.PutRentedCache(ctx, groundhog.RentedCache{Tenant: "acme", Name: "cachedContents/r", Model: "m", Tokens: 1,
		Created: t0, Expire: at(time.Hour), BookedUntil: t0}), "PutRentedCache")
	const n = 8
	var wg sync.WaitGroup
	wins := make(chan bool, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.AdvanceRent(ctx, "acme", "cachedContents/r", t0, at(time.Minute), false)
			if err != nil {
				t.Error(err)
			}
			wins <- ok
		}()
	}
	wg.Wait()
	close(wins)
	won := 0
	for ok := range wins {
		if ok {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d sweepers advanced the same piece, want 1", won)
	}
}

// testRentedPages: records created at the same instant are paged by
// tenant and name, each once.
func testRentedPages(t *testing.T, s groundhog.RentedCacheStore) {
	const n = 7
	for i := range n {
		must(t, s.PutRentedCache(ctx, groundhog.RentedCache{Tenant: "acme", Name: "cachedContents/" + strconv.Itoa(i), Model: "m", Tokens: 1,
			Created: at(time.Duration(i/3) * time.Second), Expire: at(time.Hour), BookedUntil: at(time.Duration(i/3) * time.Second)}), "PutRentedCache")
	}
	seen := map[string]bool{}
	var after groundhog.RentedCache
	for pages := 0; ; pages++ {
		cs, err := s.UnbookedCaches(ctx, after, 2)
		must(t, err, "UnbookedCaches")
		for _, c := range cs {
			if seen[c.Name] {
				t.Fatalf("%s on two pages", c.Name)
			}
			seen[c.Name] = true
		}
		if len(cs) < 2 {
			break
		}
		after = cs[len(cs)-1]
		if pages > n {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != n {
		t.Fatalf("pages held %d records, want %d", len(seen), n)
	}
}
