package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// fakeClock is a groundhog.Clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// spyStore wraps the durable store under test to count reads, inject
// failures and pause a read at a chosen point.
type spyStore struct {
	groundhog.CacheStore
	gets     atomic.Int64
	fail     atomic.Pointer[groundhog.Error]
	afterGet func() // called after the underlying read, if set
	afterPut func() // called after the underlying write succeeded, if set
}

func (s *spyStore) GetCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	s.gets.Add(1)
	if err := s.fail.Load(); err != nil {
		return nil, err
	}
	e, err := s.CacheStore.GetCache(ctx, tenant, hash, now)
	if s.afterGet != nil {
		s.afterGet()
	}
	return e, err
}

func (s *spyStore) PutCache(ctx context.Context, e *groundhog.CacheEntry) error {
	if err := s.fail.Load(); err != nil {
		return err
	}
	if err := s.CacheStore.PutCache(ctx, e); err != nil {
		return err
	}
	if s.afterPut != nil {
		s.afterPut()
	}
	return nil
}

// newTestStore returns the durable store the tests run against: a real
// SQLite file, wrapped in a spyStore.
func newTestStore(t testing.TB) *spyStore {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "groundhog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &spyStore{CacheStore: db}
}

func newTestCache(t testing.TB, maxBytes int64, clock groundhog.Clock) (*Cache, *spyStore) {
	t.Helper()
	st := newTestStore(t)
	c, err := New(Options{Store: st, MaxBytes: maxBytes, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

// CacheKeys makes the spy a KeyLister when the store under it is one.
func (s *spyStore) CacheKeys(ctx context.Context, fn func(tenant, hash string) error) error {
	return s.CacheStore.(KeyLister).CacheKeys(ctx, fn)
}

var _ KeyLister = (*sqlite.DB)(nil)

// newOwnCache is a Cache over st with Options.OwnStore, returned once its
// key filter is filled from st.
func newOwnCache(t testing.TB, st *spyStore, maxBytes int64) *Cache {
	t.Helper()
	c, err := New(Options{Store: st, MaxBytes: maxBytes, Clock: newFakeClock(), OwnStore: true})
	if err != nil {
		t.Fatal(err)
	}
	for !c.keys.ready.Load() {
		time.Sleep(time.Millisecond)
	}
	return c
}

func entry(tenant, hash string, body string, expires time.Time) *groundhog.CacheEntry {
	return &groundhog.CacheEntry{
		Tenant:      tenant,
		RequestHash: hash,
		Shape:       groundhog.ShapeChat,
		Response: groundhog.Response{
			Status:      200,
			ContentType: "application/json",
			Body:        []byte(body),
			Model:       "gpt-test",
			Usage:       groundhog.Usage{InputTokens: 10, OutputTokens: 5},
			Cost:        4 * groundhog.Microdollar,
		},
		CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		ExpiresAt: expires,
	}
}

func mustGet(t *testing.T, c *Cache, tenant, hash, wantBody string) *groundhog.CacheEntry {
	t.Helper()
	e, err := c.Get(context.Background(), tenant, hash)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", tenant, hash, err)
	}
	if e.Tenant != tenant || e.RequestHash != hash || string(e.Response.Body) != wantBody {
		t.Fatalf("Get(%q, %q) = %s/%s %q, want body %q", tenant, hash, e.Tenant, e.RequestHash, e.Response.Body, wantBody)
	}
	return e
}

func mustMiss(t *testing.T, c *Cache, tenant, hash string) {
	t.Helper()
	e, err := c.Get(context.Background(), tenant, hash)
	if !groundhog.IsNotFound(err) {
		t.Fatalf("Get(%q, %q) = %v, %v; want ENOTFOUND", tenant, hash, e, err)
	}
}

func TestNewRequiresStore(t *testing.T) {
	_, err := New(Options{})
	if groundhog.ErrorCode(err) != groundhog.EINVALID {
		t.Fatalf("New without store: %v, want EINVALID", err)
	}
}

func TestTiers(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		maxBytes int64
		// viaStore writes the entry to the store only (as another replica
		// or an earlier process would have).
		viaStore       bool
		wantStoreReads int64 // over two Gets
		wantStats      Stats
	}{
		{name: "memory hit after Put", wantStoreReads: 0,
			wantStats: Stats{MemoryHits: 2, MemoryEntries: 1}},
		{name: "store hit promoted", viaStore: true, wantStoreReads: 1,
			wantStats: Stats{StoreHits: 1, MemoryHits: 1, MemoryEntries: 1}},
		{name: "no memory tier", maxBytes: -1, wantStoreReads: 2,
			wantStats: Stats{StoreHits: 2}},
		{name: "no memory tier via store", maxBytes: -1, viaStore: true, wantStoreReads: 2,
			wantStats: Stats{StoreHits: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, st := newTestCache(t, tt.maxBytes, newFakeClock())
			e := entry("t1", "sha256:aa", `{"id":"x"}`, time.Time{})
			if tt.viaStore {
				if err := st.PutCache(ctx, e); err != nil {
					t.Fatal(err)
				}
			} else if err := c.Put(ctx, e); err != nil {
				t.Fatal(err)
			}
			first := mustGet(t, c, "t1", "sha256:aa", `{"id":"x"}`)
			second := mustGet(t, c, "t1", "sha256:aa", `{"id":"x"}`)
			if got := st.gets.Load(); got != tt.wantStoreReads {
				t.Errorf("store reads = %d, want %d", got, tt.wantStoreReads)
			}
			if tt.maxBytes >= 0 && first != second {
				t.Errorf("memory hit returned a different entry than the one promoted/put")
			}
			if c.mem != nil {
				c.mem.CleanUp() // MemoryBytes is settled by the tier's maintenance
			}
			got := c.Stats()
			tt.wantStats.MemoryBytes = got.MemoryBytes
			if got != tt.wantStats {
				t.Errorf("Stats = %+v, want %+v", got, tt.wantStats)
			}
			if tt.maxBytes >= 0 && got.MemoryBytes != int64(e.Size()) {
				t.Errorf("MemoryBytes = %d, want %d", got.MemoryBytes, e.Size())
			}
		})
	}
}

func TestMiss(t *testing.T) {
	c, _ := newTestCache(t, 0, newFakeClock())
	mustMiss(t, c, "t1", "sha256:none")
	if st := c.Stats(); st.Misses != 1 || st.StoreHits+st.MemoryHits != 0 {
		t.Fatalf("Stats = %+v, want one miss", st)
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	for _, viaStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("viaStore=%v", viaStore), func(t *testing.T) {
			clk := newFakeClock()
			c, st := newTestCache(t, 0, clk)
			start := clk.Now()
			put := func(e *groundhog.CacheEntry) {
				t.Helper()
				var err error
				if viaStore {
					err = st.PutCache(ctx, e)
				} else {
					err = c.Put(ctx, e)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			put(entry("t1", "sha256:ttl", "short", start.Add(10*time.Second)))
			put(entry("t1", "sha256:forever", "forever", time.Time{}))

			mustGet(t, c, "t1", "sha256:ttl", "short")
			clk.Advance(10*time.Second - time.Nanosecond)
			mustGet(t, c, "t1", "sha256:ttl", "short")
			clk.Advance(time.Nanosecond) // ExpiresAt == now counts as expired
			mustMiss(t, c, "t1", "sha256:ttl")

			clk.Advance(10 * 365 * 24 * time.Hour)
			mustGet(t, c, "t1", "sha256:forever", "forever")

			c.mem.CleanUp()
			if got := c.Stats(); got.MemoryEntries != 1 || got.Expirations != 1 {
				t.Fatalf("after clean-up Stats = %+v, want 1 live entry and 1 expiration", got)
			}
		})
	}
}

// TestPutExpiredOrOversized checks that such entries reach the store only,
// and that they replace (not leave behind) an older memory copy.
func TestPutExpiredOrOversized(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	c, st := newTestCache(t, 4096, clk)
	if err := c.Put(ctx, entry("t1", "sha256:a", "old", time.Time{})); err != nil {
		t.Fatal(err)
	}
	big := entry("t1", "sha256:a", string(bytes.Repeat([]byte("x"), 8192)), time.Time{})
	if err := c.Put(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats(); got.MemoryEntries != 0 {
		t.Fatalf("oversized entry in memory: %+v", got)
	}
	mustGet(t, c, "t1", "sha256:a", string(big.Response.Body))
	if st.gets.Load() != 1 {
		t.Fatalf("oversized entry not served from the store")
	}

	if err := c.Put(ctx, entry("t1", "sha256:b", "live", time.Time{})); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, entry("t1", "sha256:b", "dead", clk.Now())); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, c, "t1", "sha256:b")
}

func TestTenantIsolation(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCache(t, 0, newFakeClock())
	if err := c.Put(ctx, entry("alice", "sha256:same", "alice's answer", time.Time{})); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, c, "bob", "sha256:same")
	if err := c.Put(ctx, entry("bob", "sha256:same", "bob's answer", time.Time{})); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, "alice", "sha256:same", "alice's answer")
	mustGet(t, c, "bob", "sha256:same", "bob's answer")
	if err := c.Delete(ctx, "bob", "sha256:same"); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, c, "bob", "sha256:same")
	mustGet(t, c, "alice", "sha256:same", "alice's answer")
}

func TestSizeBoundEvicts(t *testing.T) {
	ctx := context.Background()
	const budget = 64 << 10
	c, st := newTestCache(t, budget, newFakeClock())
	body := func(i int) string { return fmt.Sprintf("%04d", i) + string(bytes.Repeat([]byte("b"), 4000)) }
	const n = 100 // ~400 KB in total, six times the budget
	total := 0
	for i := range n {
		e := entry("t1", fmt.Sprintf("sha256:%04d", i), body(i), time.Time{})
		total += e.Size()
		if err := c.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	c.mem.CleanUp()
	got := c.Stats()
	if got.MemoryBytes > budget || got.MemoryBytes == 0 {
		t.Fatalf("MemoryBytes = %d after %d bytes of Puts, want (0, %d]", got.MemoryBytes, total, budget)
	}
	if got.Evictions == 0 || int(got.Evictions)+got.MemoryEntries != n {
		t.Fatalf("Stats = %+v, want evictions + entries = %d", got, n)
	}
	for i := range n {
		mustGet(t, c, "t1", fmt.Sprintf("sha256:%04d", i), body(i))
	}
	c.mem.CleanUp()
	got = c.Stats()
	if got.StoreHits == 0 || st.gets.Load() != int64(got.StoreHits) {
		t.Fatalf("evicted entries not served from the store: %+v, store reads %d", got, st.gets.Load())
	}
	if got.MemoryBytes > budget {
		t.Fatalf("MemoryBytes = %d after promotions, want <= %d", got.MemoryBytes, budget)
	}
}

func TestPutRefuses(t *testing.T) {
	ctx := context.Background()
	ok := entry("t1", "sha256:a", "x", time.Time{})
	withStatus := func(s int) *groundhog.CacheEntry {
		e := *ok
		e.Response.Status = s
		return &e
	}
	noTenant := *ok
	noTenant.Tenant = ""
	noHash := *ok
	noHash.RequestHash = ""
	tests := []struct {
		name string
		e    *groundhog.CacheEntry
	}{
		{"nil", nil},
		{"no tenant", &noTenant},
		{"no hash", &noHash},
		{"status 0", withStatus(0)},
		{"status 199", withStatus(199)},
		{"status 304", withStatus(304)},
		{"status 400", withStatus(400)},
		{"status 429", withStatus(429)},
		{"status 500", withStatus(500)},
		{"status 502", withStatus(502)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, st := newTestCache(t, 0, newFakeClock())
			err := c.Put(ctx, tt.e)
			if groundhog.ErrorCode(err) != groundhog.EINVALID {
				t.Fatalf("Put = %v, want EINVALID", err)
			}
			if _, err := st.GetCache(ctx, ok.Tenant, ok.RequestHash, time.Now()); !groundhog.IsNotFound(err) {
				t.Fatalf("refused entry reached the store: %v", err)
			}
			mustMiss(t, c, ok.Tenant, ok.RequestHash)
		})
	}
	for _, s := range []int{200, 201, 299} {
		c, _ := newTestCache(t, 0, newFakeClock())
		if err := c.Put(ctx, withStatus(s)); err != nil {
			t.Errorf("Put status %d: %v", s, err)
		}
	}
}

func TestPutReplaces(t *testing.T) {
	ctx := context.Background()
	c, st := newTestCache(t, 0, newFakeClock())
	for _, body := range []string{"one", "two"} {
		if err := c.Put(ctx, entry("t1", "sha256:a", body, time.Time{})); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, c, "t1", "sha256:a", "two")
	e, err := st.GetCache(ctx, "t1", "sha256:a", time.Now())
	if err != nil || string(e.Response.Body) != "two" {
		t.Fatalf("store holds %v, %v; want two", e, err)
	}
}

func TestStoreErrors(t *testing.T) {
	ctx := context.Background()
	c, st := newTestCache(t, 0, newFakeClock())
	down := groundhog.Errorf(groundhog.EUNAVAILABLE, "store down")

	st.fail.Store(down)
	if err := c.Put(ctx, entry("t1", "sha256:a", "x", time.Time{})); groundhog.ErrorCode(err) != groundhog.EUNAVAILABLE || !errors.Is(err, down) {
		t.Fatalf("Put with failing store = %v, want the store's EUNAVAILABLE", err)
	}
	if got := c.Stats(); got.MemoryEntries != 0 {
		t.Fatalf("failed Put reached memory: %+v", got)
	}
	if _, err := c.Get(ctx, "t1", "sha256:a"); groundhog.ErrorCode(err) != groundhog.EUNAVAILABLE {
		t.Fatalf("Get with failing store = %v, want EUNAVAILABLE", err)
	}
	if got := c.Stats(); got.StoreErrors != 2 || got.Misses != 0 {
		t.Fatalf("Stats = %+v, want 2 store errors and no miss", got)
	}
}

// TestPromotionDoesNotResurrect forces the interleaving promote guards
// against: a Get reads an entry from the store, a Delete removes it from
// both tiers, then the Get would insert it into memory.
func TestPromotionDoesNotResurrect(t *testing.T) {
	ctx := context.Background()
	c, st := newTestCache(t, 0, newFakeClock())
	if err := st.PutCache(ctx, entry("t1", "sha256:a", "doomed", time.Time{})); err != nil {
		t.Fatal(err)
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	st.afterGet = func() {
		close(paused)
		<-resume
	}
	done := make(chan error)
	go func() {
		_, err := c.Get(ctx, "t1", "sha256:a")
		done <- err
	}()
	<-paused
	if err := c.Delete(ctx, "t1", "sha256:a"); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("Get that raced the Delete: %v (it read before the Delete, so it may return the entry)", err)
	}
	st.afterGet = nil
	mustMiss(t, c, "t1", "sha256:a")
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCache(t, 0, newFakeClock())
	if err := c.Put(ctx, entry("t1", "sha256:a", "x", time.Time{})); err != nil {
		t.Fatal(err)
	}
	for range 2 { // absent is not an error
		if err := c.Delete(ctx, "t1", "sha256:a"); err != nil {
			t.Fatal(err)
		}
	}
	mustMiss(t, c, "t1", "sha256:a")
}

// TestConcurrent runs Get, Put and Delete on a few keys from many
// goroutines (run it with -race); every answer must be an entry of the key
// asked for, and after the writers stop both tiers agree.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	c, st := newTestCache(t, 16<<10, newFakeClock())
	const keys, workers, rounds = 8, 8, 300
	hash := func(i int) string { return fmt.Sprintf("sha256:%02d", i) }
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				k := (w + r) % keys
				switch r % 5 {
				case 0, 1:
					body := fmt.Sprintf("%s/%d/%d", hash(k), w, r) + string(bytes.Repeat([]byte("."), 1000))
					if err := c.Put(ctx, entry("t1", hash(k), body, time.Time{})); err != nil {
						errs <- err
						return
					}
				case 2:
					if err := c.Delete(ctx, "t1", hash(k)); err != nil {
						errs <- err
						return
					}
				default:
					e, err := c.Get(ctx, "t1", hash(k))
					if groundhog.IsNotFound(err) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					if e.RequestHash != hash(k) || !bytes.HasPrefix(e.Response.Body, []byte(hash(k)+"/")) {
						errs <- fmt.Errorf("Get(%s) returned %s %.20q", hash(k), e.RequestHash, e.Response.Body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A memory copy that outlived a Delete or disagrees with the store
	// would be a resurrection (concurrent Puts of one key may disagree,
	// so only the deleted case is a hard failure).
	for k := range keys {
		got, err := c.Get(ctx, "t1", hash(k))
		_, serr := st.CacheStore.GetCache(ctx, "t1", hash(k), time.Now())
		if groundhog.IsNotFound(serr) && err == nil {
			t.Errorf("%s: memory serves %.20q, store has none", hash(k), got.Response.Body)
		}
	}
}

// A Delete that runs entirely between a Put's store write and its memory
// write must not leave the memory tier serving what the store no longer has:
// the store says the Delete came last, so memory must too (TestConcurrent
// found it under -race; here the interleaving is forced).
func TestPutRacingDeleteLeavesNoResurrection(t *testing.T) {
	ctx := context.Background()
	c, st := newTestCache(t, 16<<10, newFakeClock())
	var once sync.Once
	st.afterPut = func() {
		once.Do(func() {
			if err := c.Delete(ctx, "t1", "sha256:a"); err != nil {
				t.Error(err)
			}
		})
	}
	if err := c.Put(ctx, entry("t1", "sha256:a", "A", time.Time{})); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CacheStore.GetCache(ctx, "t1", "sha256:a", time.Now()); !groundhog.IsNotFound(err) {
		t.Fatalf("store after the Delete: %v, want not found", err)
	}
	if e, err := c.Get(ctx, "t1", "sha256:a"); !groundhog.IsNotFound(err) {
		t.Fatalf("Get after Put and a Delete between its two writes = %v, %v; want not found (memory resurrected the entry)", e, err)
	}
	// A Put with no writer around it still fills memory.
	st.afterPut = nil
	if err := c.Put(ctx, entry("t1", "sha256:b", "B", time.Time{})); err != nil {
		t.Fatal(err)
	}
	before := st.gets.Load()
	mustGet(t, c, "t1", "sha256:b", "B")
	if st.gets.Load() != before {
		t.Fatal("an uncontended Put did not fill the memory tier")
	}
}

func TestGetMemoryHitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	c, _ := newTestCache(t, 0, newFakeClock())
	if err := c.Put(ctx, entry("t1", "sha256:a", "x", time.Time{})); err != nil {
		t.Fatal(err)
	}
	tenant, hash := "t1", "sha256:a"
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := c.Get(ctx, tenant, hash); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("memory hit allocates %.1f times, want 0", n)
	}
}

// BenchmarkGetMemoryHit measures a memory-tier hit of a 1 KB response with
// the system clock, as the gateway runs it, against a baseline measured in
// the same run: the same lookups in a plain map under a sync.RWMutex.
func BenchmarkGetMemoryHit(b *testing.B) {
	ctx := context.Background()
	const keys = 1024
	hashes := make([]string, keys)
	entries := make([]*groundhog.CacheEntry, keys)
	for i := range hashes {
		hashes[i] = fmt.Sprintf("sha256:%064x", i)
		entries[i] = entry("tenant-1", hashes[i], string(bytes.Repeat([]byte("x"), 1024)), time.Time{})
	}
	b.Run("cache", func(b *testing.B) {
		c, err := New(Options{Store: newTestStore(b)})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if err := c.Put(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := c.Get(ctx, "tenant-1", hashes[i%keys]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		if st := c.Stats(); st.StoreHits != 0 {
			b.Fatalf("benchmark left the memory tier: %+v", st)
		}
	})
	b.Run("baseline=RWMutex-map", func(b *testing.B) {
		var mu sync.RWMutex
		m := make(map[key]*groundhog.CacheEntry, keys)
		for _, e := range entries {
			m[key{e.Tenant, e.RequestHash}] = e
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				mu.RLock()
				e := m[key{"tenant-1", hashes[i%keys]}]
				mu.RUnlock()
				if e == nil {
					b.Fatal("missing")
				}
				i++
			}
		})
	})
}

// The mark of a look-up that finds nothing stays unwritten until this Cache
// writes to the key's part of the key space; a look-up that begins while a
// write to that part is running gives a mark that is never unwritten (that
// write may land after the look-up read the store); a memory hit and a
// cache without a memory tier give marks that are never unwritten. A cache
// whose store others may write gives marks that see its own writes.
func TestMarkSeesWritesSinceIt(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	c := newOwnCache(t, st, 0)
	missMark := func(c *Cache, hash string) Mark {
		t.Helper()
		e, m, err := c.GetMarked(ctx, "t1", hash)
		if !groundhog.IsNotFound(err) {
			t.Fatalf("GetMarked(%s) = %v, %v; want ENOTFOUND", hash, e, err)
		}
		return m
	}
	m := missMark(c, "sha256:a")
	if !c.Unwritten(m) {
		t.Fatal("a mark with no write since is not unwritten")
	}
	if err := c.Put(ctx, entry("t1", "sha256:a", "x", time.Time{})); err != nil {
		t.Fatal(err)
	}
	if c.Unwritten(m) {
		t.Fatal("the Put after the mark is not seen")
	}
	if _, hit, err := c.GetMarked(ctx, "t1", "sha256:a"); err != nil || c.Unwritten(hit) {
		t.Fatalf("a memory hit: %v, unwritten %v", err, c.Unwritten(hit))
	}
	if err := c.Delete(ctx, "t1", "sha256:a"); err != nil {
		t.Fatal(err)
	}
	m = missMark(c, "sha256:a")
	if err := c.Delete(ctx, "t1", "sha256:a"); err != nil {
		t.Fatal(err)
	}
	if c.Unwritten(m) {
		t.Fatal("the Delete after the mark is not seen")
	}

	// A look-up of a key in the stripe of a Put still running (its store
	// write done, its memory write not).
	other := ""
	for i := 0; other == ""; i++ {
		if h := fmt.Sprintf("sha256:c%d", i); c.stripe(key{"t1", h}) == c.stripe(key{"t1", "sha256:b"}) {
			other = h
		}
	}
	written, resume := make(chan struct{}), make(chan struct{})
	st.afterPut = func() {
		close(written)
		<-resume
	}
	done := make(chan error)
	go func() { done <- c.Put(ctx, entry("t1", "sha256:b", "y", time.Time{})) }()
	<-written
	m = missMark(c, other)
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st.afterPut = nil
	if c.Unwritten(m) {
		t.Fatal("a look-up during a Put of its stripe gave an unwritten mark")
	}
	if c.Unwritten(Mark{}) {
		t.Fatal("the zero mark is unwritten")
	}

	noMem := newOwnCache(t, newTestStore(t), -1)
	if m := missMark(noMem, "sha256:a"); noMem.Unwritten(m) {
		t.Fatal("a cache without a memory tier gives an unwritten mark")
	}
	shared, _ := newTestCache(t, 0, newFakeClock())
	m = missMark(shared, "sha256:a")
	if !shared.Unwritten(m) {
		t.Fatal("a cache whose store others may write gives no mark")
	}
	if err := shared.Put(ctx, entry("t1", "sha256:a", "x", time.Time{})); err != nil {
		t.Fatal(err)
	}
	if shared.Unwritten(m) {
		t.Fatal("a cache whose store others may write does not see its own Put after the mark")
	}
}

// A Cache that owns its store reads it only for keys it may hold: those it
// found there when it opened (written by an earlier process) and those it
// wrote since. A key never stored is a miss without a store read; one
// stored then deleted is read as before.
func TestOwnStoreReadsOnlyKeysItMayHold(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	if err := st.PutCache(ctx, entry("t1", "sha256:before", "from an earlier process", time.Time{})); err != nil {
		t.Fatal(err)
	}
	c := newOwnCache(t, st, -1) // no memory tier: every look-up that may find something reads the store
	reads := func() int64 { return st.gets.Load() }

	mustMiss(t, c, "t1", "sha256:never")
	mustMiss(t, c, "t2", "sha256:before") // another tenant's key
	if n := reads(); n != 0 {
		t.Fatalf("keys never stored read the store %d times", n)
	}
	mustGet(t, c, "t1", "sha256:before", "from an earlier process")
	if err := c.Put(ctx, entry("t1", "sha256:new", "written here", time.Time{})); err != nil {
		t.Fatal(err)
	}
	mustGet(t, c, "t1", "sha256:new", "written here")
	if err := c.Delete(ctx, "t1", "sha256:new"); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, c, "t1", "sha256:new")
	if n := reads(); n != 3 {
		t.Fatalf("the store was read %d times for three keys it may hold, want 3", n)
	}
	if st := c.Stats(); st.Misses != 3 || st.StoreHits != 2 {
		t.Errorf("stats %+v, want 3 misses and 2 store hits", st)
	}

	// A cache whose store others may write reads the store for every key.
	shared, err := New(Options{Store: st, MaxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	before := reads()
	mustMiss(t, shared, "t1", "sha256:never")
	if reads() != before+1 {
		t.Error("a cache without OwnStore skipped the store")
	}
}
