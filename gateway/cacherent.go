package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// The storage rent of Gemini explicit caches. Every cache created through
// the gateway — by a client (POST …/cachedContents) or by the managed
// caches (explicitcache.go) — is recorded (Options.RentedCaches) with its
// tokens, creation and expiry; the expiry follows the answers to its
// updates (PATCH of ttl or expireTime) and a deletion the provider
// answered 2xx ends it. The rent sweeper (SweepCacheRent, on the Server's
// clock) books one ledger row of outcome cache_rent per cache and UTC day:
// the rent of the day's piece of the cache's life, once that piece is
// over (the day ended, or the cache did). A piece's rent is the rent from
// the creation to its end minus the rent from the creation to its start
// (Price.CacheStorageCost's rule), so a life's pieces add up to the
// provider's bill of the whole life to the picodollar.
//
// A row's ID and time are the piece's own (groundhog.OnceRowID, the
// piece's start), so writing it again stores nothing: the row is written,
// then the record's booked-until advanced with a conditional update. A
// crash between the two, a restart, or two replicas sweeping one store
// book the piece once.

// rentSweepPage is how many records a sweep reads at a time.
const rentSweepPage = 500

// SweepCacheRent books the storage rent of every cache piece that is over
// at the Server's clock. serve runs it with the managed caches' sweep
// (ExplicitCacheLoop).
func (s *Server) SweepCacheRent(ctx context.Context) {
	now := s.clock.Now()
	var after groundhog.RentedCache
	for {
		cs, err := s.opts.RentedCaches.UnbookedCaches(ctx, after, rentSweepPage)
		if err != nil {
			s.log.Error("reading the explicit caches to book failed", "err", err)
			return
		}
		for _, c := range cs {
			if ctx.Err() != nil {
				return
			}
			s.bookRent(ctx, c, now)
		}
		if len(cs) < rentSweepPage {
			return
		}
		after = cs[len(cs)-1]
	}
}

// bookRent books c's pieces that are over at now, in order, and stops at
// the first that is not (or that another sweeper booked first).
func (s *Server) bookRent(ctx context.Context, c groundhog.RentedCache, now time.Time) {
	end := c.LifeEnd()
	if end.IsZero() {
		return // no expiry known: nothing to book until one is
	}
	from := c.BookedUntil
	if from.Before(c.Created) {
		from = c.Created
	}
	for {
		to := nextUTCMidnight(from)
		if !to.Before(end) {
			to = end
		}
		if !from.Before(end) {
			to = from // the life ended before the booked-until: nothing left
		}
		if to.After(now) {
			return
		}
		done := !to.Before(end)
		var row *groundhog.LedgerEntry
		if to.After(from) {
			r, err := s.recordRent(c, from, to)
			if err != nil {
				s.log.Error("booking an explicit cache's rent failed", "tenant", c.Tenant, "cache", c.Name, "err", err)
				return
			}
			row = r
		}
		ok, err := s.opts.RentedCaches.AdvanceRent(context.WithoutCancel(ctx), c.Tenant, c.Name, c.BookedUntil, to, done)
		if err != nil {
			s.log.Error("advancing an explicit cache's booked rent failed", "tenant", c.Tenant, "cache", c.Name, "err", err)
			return
		}
		if ok && row != nil {
			// This sweep booked the piece: the spend metric counts it
			// here, once, though another replica may have written the
			// same row.
			if ro, is := s.opts.Ledger.(rentObserver); is {
				ro.ObserveRent(*row)
			}
		}
		if !ok || done {
			return
		}
		c.BookedUntil, from = to, to
	}
}

// rentObserver is a ledger that also counts a storage-rent row once its
// piece is booked (observe.Recorder: the spend metric).
type rentObserver interface {
	ObserveRent(groundhog.LedgerEntry)
}

// recordRent writes the ledger row of c's rent from from to to and returns
// it (nil when the ledger is disabled).
func (s *Server) recordRent(c groundhog.RentedCache, from, to time.Time) (*groundhog.LedgerEntry, error) {
	if s.opts.Ledger == nil {
		return nil, nil
	}
	rent := groundhog.CostUnknown
	whole, before := s.rentCost(c.Model, c.Tokens, c.Created, to), s.rentCost(c.Model, c.Tokens, c.Created, from)
	if whole.Known() && before.Known() {
		rent = whole - before
	}
	id := groundhog.OnceRowID(c.Tenant, c.Name, from)
	h := sha256.Sum256([]byte("rent " + c.Name + " " + id))
	row := groundhog.LedgerEntry{
		ID: id, Time: from.UTC(), Tenant: c.Tenant, Operation: c.Operation, Shape: groundhog.ShapeGemini,
		Model: boundModel(c.Model), Provider: s.opts.Gemini.Provider, Outcome: groundhog.OutcomeCacheRent, Status: http.StatusOK,
		Cost: rent, FullCost: rent, RequestHash: "sha256:" + hex.EncodeToString(h[:]),
	}
	return &row, s.opts.Ledger.Record(row)
}

// nextUTCMidnight is the first UTC midnight after t.
func nextUTCMidnight(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// rentCreated records a cache created for tenant's operation, to book its
// rent.
func (s *Server) rentCreated(ctx context.Context, c groundhog.RentedCache) error {
	c.BookedUntil, c.Done = c.Created, false
	return s.opts.RentedCaches.PutRentedCache(context.WithoutCancel(ctx), c)
}

// rentExtended notes the expiry an update of tenant's cache answered.
func (s *Server) rentExtended(ctx context.Context, tenant, name string, expire time.Time) {
	if expire.IsZero() {
		return
	}
	if err := s.opts.RentedCaches.ExtendRentedCache(context.WithoutCancel(ctx), tenant, name, expire); err != nil {
		s.log.Error("noting an explicit cache's expiry failed", "tenant", tenant, "cache", name, "err", err)
	}
}

// rentEnded ends tenant's cache at end and books what is left of its
// rent at once.
func (s *Server) rentEnded(ctx context.Context, tenant, name string, end time.Time) {
	ctx = context.WithoutCancel(ctx)
	c, ok, err := s.opts.RentedCaches.EndRentedCache(ctx, tenant, name, end)
	if err != nil {
		s.log.Error("ending an explicit cache's record failed", "tenant", tenant, "cache", name, "err", err)
		return
	}
	if ok && !c.Done {
		s.bookRent(ctx, c, s.clock.Now())
	}
}

// memRentedCaches is a RentedCacheStore in this process's memory, for a
// gateway built without a store that keeps them.
type memRentedCaches struct {
	mu sync.Mutex
	cs map[[2]string]*groundhog.RentedCache
}

var _ groundhog.RentedCacheStore = (*memRentedCaches)(nil)

func newMemRentedCaches() *memRentedCaches {
	return &memRentedCaches{cs: map[[2]string]*groundhog.RentedCache{}}
}

func (m *memRentedCaches) PutRentedCache(_ context.Context, c groundhog.RentedCache) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.cs[[2]string{c.Tenant, c.Name}]; !ok {
		m.cs[[2]string{c.Tenant, c.Name}] = &c
	}
	return nil
}

func (m *memRentedCaches) ExtendRentedCache(_ context.Context, tenant, name string, expire time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.cs[[2]string{tenant, name}]; c != nil && c.End.IsZero() && !c.Done {
		c.Expire = expire
	}
	return nil
}

func (m *memRentedCaches) EndRentedCache(_ context.Context, tenant, name string, end time.Time) (groundhog.RentedCache, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cs[[2]string{tenant, name}]
	if c == nil {
		return groundhog.RentedCache{}, false, nil
	}
	if c.End.IsZero() {
		c.End = end
	}
	return *c, true, nil
}

func (m *memRentedCaches) UnbookedCaches(_ context.Context, after groundhog.RentedCache, limit int) ([]groundhog.RentedCache, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []groundhog.RentedCache
	for _, c := range m.cs {
		if !c.Done && (after.Created.IsZero() || rentedBefore(after, *c)) {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return rentedBefore(out[i], out[j]) })
	return out[:min(len(out), limit)], nil
}

// rentedBefore orders records by (Created, Tenant, Name).
func rentedBefore(a, b groundhog.RentedCache) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if a.Tenant != b.Tenant {
		return a.Tenant < b.Tenant
	}
	return a.Name < b.Name
}

func (m *memRentedCaches) AdvanceRent(_ context.Context, tenant, name string, from, to time.Time, done bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cs[[2]string{tenant, name}]
	if c == nil || c.Done || !c.BookedUntil.Equal(from) {
		return false, nil
	}
	c.BookedUntil, c.Done = to, done
	if done {
		delete(m.cs, [2]string{tenant, name})
	}
	return true, nil
}
