// Package cache is groundhog's tiered exact response cache: a bounded,
// size-aware in-memory tier in front of a durable groundhog.CacheStore.
//
// The cache only stores and looks up; policy (whether a call may use the
// cache, its TTL, refresh and bypass) is the gateway's. Entries are keyed by
// (tenant, request hash) in both tiers, so a lookup can never cross tenants
// even if two tenants' hashes were equal.
package cache

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/groundhog-ai/groundhog"
)

// DefaultMaxBytes is the memory tier's budget when Options.MaxBytes is 0.
const DefaultMaxBytes = 256 << 20

// Options configures a Cache.
type Options struct {
	// Store is the durable tier. Required.
	Store groundhog.CacheStore
	// MaxBytes bounds the memory tier by the sum of CacheEntry.Size() of the
	// entries it holds. 0 means DefaultMaxBytes; a negative value disables the
	// memory tier, so every lookup goes to Store.
	MaxBytes int64
	// Clock decides expiry in both tiers. nil means groundhog.SystemClock.
	Clock groundhog.Clock
	// OwnStore says Store is written through this Cache alone: SQLite, which
	// one serve opens. The Cache then knows what the store can hold. A
	// look-up of a key it never wrote, nor found in the store when it
	// opened, does not read the store (a Store that is a KeyLister: see
	// keyFilter), and Unwritten tells a caller that no entry can have
	// appeared since its look-up. Another process writing the store
	// would go unseen: a look-up would miss its entries.
	OwnStore bool
}

// Stats are the cache's counters since New, for metrics. The counters only
// grow; MemoryBytes and MemoryEntries are the current, approximate, size of
// the memory tier (MemoryBytes follows writes once the tier's asynchronous
// maintenance has run, and may briefly exceed MaxBytes while it catches up).
type Stats struct {
	MemoryHits  uint64 // Get answered by the memory tier
	StoreHits   uint64 // Get answered by the store (and promoted to memory)
	Misses      uint64 // Get found no live entry (ENOTFOUND)
	StoreErrors uint64 // Get, Put or Delete failed in the store
	// Evictions counts entries the memory tier dropped to stay within
	// MaxBytes. They are still served from the store.
	Evictions uint64
	// Expirations counts expired entries removed from the memory tier, by a
	// Get that found them or by the tier's own clean-up.
	Expirations   uint64
	MemoryBytes   int64
	MemoryEntries int
}

// key is the memory tier's key. A struct rather than tenant+"\x00"+hash so
// that a lookup does not allocate: Get must stay cheap on a memory hit.
type key struct {
	tenant, hash string
}

// Cache is the tiered exact response cache. It is safe for concurrent use.
//
// Entries returned by Get are shared, read-only, between every goroutine
// that looks up the same key, and an entry given to Put becomes shared the
// same way: callers must not modify an entry (including its Response.Body,
// Events and their Data) after Put or after Get returns it. Nothing is copied
// on a hit; that is what makes a memory hit cheap.
type Cache struct {
	store groundhog.CacheStore
	clock groundhog.Clock
	max   int64
	mem   *otter.Cache[key, *groundhog.CacheEntry] // nil without a memory tier

	// writes guards promotions against concurrent writes; see promote.
	writes [writeStripes]writeStripe
	own    bool       // Options.OwnStore
	keys   *keyFilter // the keys the store may hold, with OwnStore and a KeyLister (keys.go)
	seed   maphash.Seed

	memoryHits, storeHits, misses, storeErrors atomic.Uint64
	evictions, expirations                     atomic.Uint64
}

// New returns a Cache over o.Store.
func New(o Options) (*Cache, error) {
	if o.Store == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "cache: Options.Store is required")
	}
	c := &Cache{store: o.Store, clock: o.Clock, max: o.MaxBytes, seed: maphash.MakeSeed(), own: o.OwnStore}
	if l, ok := o.Store.(KeyLister); ok && o.OwnStore {
		c.keys = newKeyFilter()
		go c.keys.fill(context.Background(), l)
	}
	_, system := c.clock.(groundhog.SystemClock)
	if c.clock == nil || system {
		c.clock, system = &monoClock{}, true // clock.go
	}
	if c.max == 0 {
		c.max = DefaultMaxBytes
	}
	if c.max < 0 {
		return c, nil
	}
	oo := &otter.Options[key, *groundhog.CacheEntry]{
		MaximumWeight: uint64(c.max),
		Weigher: func(_ key, e *groundhog.CacheEntry) uint32 {
			return weight(e)
		},
		// The tier expires entries by their own ExpiresAt, so that expired
		// entries stop taking memory without waiting for a Get or an eviction.
		ExpiryCalculator: otter.ExpiryCreatingFunc(func(en otter.Entry[key, *groundhog.CacheEntry]) time.Duration {
			return c.ttl(en.Value)
		}),
		// Maintenance (applying buffered reads and writes to the eviction
		// policy, evicting) runs on the goroutine whose read or write found
		// the buffers full, instead of a goroutine started for it: on the
		// hit path the drain is a few hundred nanoseconds, the goroutine's
		// creation, scheduling and exit about as much again
		// (docs/design/0009-hit-path.md). Nothing here runs on the executor but
		// maintenance: no OnDeletion, no loads or refreshes.
		Executor: runInline,
		// Runs under a bucket lock: it may only count.
		OnAtomicDeletion: func(ev otter.DeletionEvent[key, *groundhog.CacheEntry]) {
			switch ev.Cause {
			case otter.CauseOverflow:
				c.evictions.Add(1)
			case otter.CauseExpiration:
				c.expirations.Add(1)
			}
		},
	}
	if !system {
		// A custom (test) clock must also drive the tier's expiry.
		oo.Clock = otterClock{c.clock}
	}
	mem, err := otter.New(oo)
	if err != nil {
		return nil, fmt.Errorf("cache: memory tier: %w", err)
	}
	c.mem = mem
	return c, nil
}

// runInline is the memory tier's executor: the task runs at once, on the
// caller's goroutine.
func runInline(fn func()) { fn() }

// Get returns the live entry for (tenant, hash): from the memory tier if it
// holds one, else from the store, in which case the entry is promoted to the
// memory tier. A missing or expired entry is an error with code ENOTFOUND; an
// expired entry found in memory is dropped from it. Any other error comes
// from the store.
//
// The returned entry is shared: the caller must not modify it.
func (c *Cache) Get(ctx context.Context, tenant, hash string) (*groundhog.CacheEntry, error) {
	e, _, err := c.GetMarked(ctx, tenant, hash)
	return e, err
}

// GetMarked is Get that also returns, when the memory tier does not hold
// the entry, the mark of its look-up: where this Cache's writes to the
// key's part of the key space stood before it looked in the store. When the
// look-up finds nothing, Unwritten then tells whether that answer still
// stands. A memory hit returns the zero Mark, which is never Unwritten.
func (c *Cache) GetMarked(ctx context.Context, tenant, hash string) (*groundhog.CacheEntry, Mark, error) {
	k := key{tenant, hash}
	if c.mem != nil {
		if e, ok := c.mem.GetIfPresent(k); ok {
			if !e.Expired(c.clock.Now()) {
				c.memoryHits.Add(1)
				return e, Mark{}, nil
			}
			// The tier's own expiry normally hides it; this is the exact
			// check on our clock. Drop this entry only: a concurrent Put may
			// already have replaced it with a live one.
			c.removeIfSame(k, e, &c.expirations)
		}
	}

	var s *writeStripe
	var started uint64
	promotable := false
	if c.mem != nil {
		s = c.stripe(k)
		started, promotable = s.begin()
	}
	var m Mark
	if promotable {
		// No writer of this stripe is running: one that finished wrote
		// the store (and the key filter) before this look.
		m = Mark{s: s, started: started}
	}
	if c.keys != nil && c.keys.absent(k) {
		c.misses.Add(1)
		return nil, m, errAbsent // never written: the store cannot hold it
	}
	e, err := c.store.GetCache(ctx, tenant, hash, c.clock.Now())
	if err != nil {
		if groundhog.IsNotFound(err) {
			c.misses.Add(1)
			return nil, m, err
		}
		c.storeErrors.Add(1)
		return nil, Mark{}, fmt.Errorf("cache: get %s: %w", hash, err)
	}
	if e == nil || e.Tenant != tenant || e.RequestHash != hash {
		// A store that answers for another key is broken; never serve it.
		c.storeErrors.Add(1)
		return nil, Mark{}, groundhog.Errorf(groundhog.EINTERNAL, "cache: store returned an entry for another key")
	}
	c.storeHits.Add(1)
	if promotable {
		c.promote(k, e, s, started)
	}
	return e, m, nil
}

// Put stores e in the store and then in the memory tier (write-through),
// replacing any entry for (e.Tenant, e.RequestHash).
//
// Only cacheable responses are accepted: Put refuses, with code EINVALID and
// without touching either tier, an entry whose Response is not a success
// (2xx), so that an error can never be cached even by mistake. Whether a
// streamed response is complete is the caller's check (wire.StreamComplete)
// before Put. If the store fails, the memory tier is left unchanged.
//
// An entry already expired at Put, or larger than the memory budget, is
// written to the store only (and any memory copy of the key is dropped).
// After Put, e is shared: the caller must not modify it.
//
// A Put that overlaps another writer of the same key (or of its stripe of
// the key space) leaves its entry out of the memory tier (the next Get reads
// the store and promotes it), so memory never holds an entry a concurrent
// Delete has removed from the store.
func (c *Cache) Put(ctx context.Context, e *groundhog.CacheEntry) error {
	switch {
	case e == nil:
		return groundhog.Errorf(groundhog.EINVALID, "cache: nil entry")
	case e.Tenant == "" || e.RequestHash == "":
		return groundhog.Errorf(groundhog.EINVALID, "cache: entry without tenant or request hash")
	case !e.Response.OK():
		return groundhog.Errorf(groundhog.EINVALID, "cache: refusing to cache a response with status %d", e.Response.Status)
	}
	k := key{e.Tenant, e.RequestHash}
	var s *writeStripe
	var ticket uint64
	alone := true
	if c.mem != nil {
		s = c.stripe(k)
		ticket = s.started.Add(1)
		alone = s.finished.Load() == ticket-1 // every writer before this one is done
		defer s.finished.Add(1)
	}
	if c.keys != nil {
		c.keys.add(k) // before the store can hold it
	}
	if err := c.store.PutCache(ctx, e); err != nil {
		c.storeErrors.Add(1)
		return fmt.Errorf("cache: put %s: %w", e.RequestHash, err)
	}
	if c.mem == nil {
		return nil
	}
	if e.Expired(c.clock.Now()) || int64(e.Size()) > c.max {
		c.mem.Invalidate(k)
		return nil
	}
	c.mem.Set(k, e)
	if !alone || !s.quiet(ticket) {
		// Another writer of this stripe overlapped this Put: its store
		// write may have come after this one and its memory write before
		// (a Delete that dropped the key before this Set), and memory must
		// not hold what the store no longer has. Drop this entry only; the
		// next Get reads the store. As in promote, finished may count a
		// writer that started after this one and hide an older one still
		// running, but then started has moved and quiet fails.
		c.removeIfSame(k, e, nil)
	}
	return nil
}

// Delete removes the entry for (tenant, hash) from both tiers. Deleting an
// absent entry is not an error.
func (c *Cache) Delete(ctx context.Context, tenant, hash string) error {
	k := key{tenant, hash}
	if c.mem != nil {
		s := c.stripe(k)
		s.started.Add(1)
		defer s.finished.Add(1)
		// Drop the memory copy even if the store fails: serving it after a
		// failed Delete would be worse than one extra store read.
		defer c.mem.Invalidate(k)
	}
	if err := c.store.DeleteCache(ctx, tenant, hash); err != nil {
		c.storeErrors.Add(1)
		return fmt.Errorf("cache: delete %s: %w", hash, err)
	}
	return nil
}

// A Mark is where this Cache's writes (Put and Delete) to one part of the
// key space stood before a look-up read the store (GetMarked). The zero
// Mark, that of a Cache without a memory tier, or of a look-up that began
// while a write to that part was running, is never Unwritten. A Mark sees
// only this Cache's writes: on a store other processes write too (without
// Options.OwnStore), theirs may have landed since.
type Mark struct {
	s       *writeStripe
	started uint64
}

// Unwritten reports whether no Put or Delete of this Cache has begun in m's
// part of the key space since m was taken: with Options.OwnStore, a
// look-up that found nothing would still find nothing.
func (c *Cache) Unwritten(m Mark) bool { return m.s != nil && m.s.quiet(m.started) }

// Stats returns the counters and the memory tier's current size.
func (c *Cache) Stats() Stats {
	st := Stats{
		MemoryHits:  c.memoryHits.Load(),
		StoreHits:   c.storeHits.Load(),
		Misses:      c.misses.Load(),
		StoreErrors: c.storeErrors.Load(),
		Evictions:   c.evictions.Load(),
		Expirations: c.expirations.Load(),
	}
	if c.mem != nil {
		st.MemoryBytes = int64(c.mem.WeightedSize())
		st.MemoryEntries = c.mem.EstimatedSize()
	}
	return st
}

// promote puts e, just read from the store, into the memory tier, unless
// that could resurrect data a concurrent writer has replaced or deleted.
//
// The interleaving it guards against: Get reads entry A from the store;
// Delete (or a Put whose entry skips memory) removes A from the store and
// drops the key from memory; Get then inserts A into memory, where it would
// be served although the store no longer has it. A plain SetIfAbsent handles
// a concurrent Put that sets memory (its entry wins), but not a writer that
// leaves the key absent.
//
// So writers count themselves in a stripe of the key space (started before
// the store write, finished after the memory write), and a reader reads the
// stripe's counters before its store read (begin): if a writer is active
// then, it does not promote at all. After inserting, the reader checks that
// no writer has started since (quiet); otherwise it removes what it inserted
// (only that entry). A writer that starts after that check does its memory
// write after the insert, so the writer's state wins. A skipped promotion
// costs one more store read later, never a wrong answer.
func (c *Cache) promote(k key, e *groundhog.CacheEntry, s *writeStripe, started uint64) {
	if e.Expired(c.clock.Now()) || int64(e.Size()) > c.max {
		return
	}
	if _, inserted := c.mem.SetIfAbsent(k, e); !inserted {
		return
	}
	if s.quiet(started) {
		return
	}
	c.removeIfSame(k, e, nil)
}

// removeIfSame drops k from the memory tier if it still maps to e, counting
// the removal in n if n is not nil.
func (c *Cache) removeIfSame(k key, e *groundhog.CacheEntry, n *atomic.Uint64) {
	c.mem.ComputeIfPresent(k, func(old *groundhog.CacheEntry) (*groundhog.CacheEntry, otter.ComputeOp) {
		if old != e {
			return old, otter.CancelOp
		}
		if n != nil {
			n.Add(1)
		}
		return nil, otter.InvalidateOp
	})
}

// ttl is how long e may stay in the memory tier from now.
func (c *Cache) ttl(e *groundhog.CacheEntry) time.Duration {
	if e.ExpiresAt.IsZero() {
		return math.MaxInt64 // otter saturates the deadline
	}
	d := e.ExpiresAt.Sub(c.clock.Now())
	if d <= 0 {
		return 1 // already expired: gone at the next clean-up
	}
	return d
}

func weight(e *groundhog.CacheEntry) uint32 {
	n := e.Size()
	if n <= 0 {
		return 1
	}
	if uint64(n) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

const writeStripes = 64

// writeStripe counts the writers of one stripe of the key space. Padded to
// a cache line so writers of different stripes do not contend.
type writeStripe struct {
	started, finished atomic.Uint64
	_                 [48]byte
}

// begin snapshots the stripe before a store read. ok is false when a writer
// may be active. finished is loaded after started, so it may count writers
// that started after the snapshot, which can hide an older active writer;
// but such a writer makes quiet fail, since started has then moved.
func (s *writeStripe) begin() (started uint64, ok bool) {
	started = s.started.Load()
	return started, s.finished.Load() == started
}

// quiet reports whether no writer has started since begin returned started.
func (s *writeStripe) quiet(started uint64) bool { return s.started.Load() == started }

func (c *Cache) stripe(k key) *writeStripe {
	return &c.writes[maphash.Comparable(c.seed, k)%writeStripes]
}

// otterClock adapts a groundhog.Clock to the memory tier. It has no ticks:
// with a custom clock, expired entries leave memory on access or eviction.
type otterClock struct{ c groundhog.Clock }

func (o otterClock) NowNano() int64                      { return o.c.Now().UnixNano() }
func (o otterClock) Tick(time.Duration) <-chan time.Time { return nil }
