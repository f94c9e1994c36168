package groundhog

import (
	"context"
	"time"
)

// OutcomeCacheRent is the outcome of a ledger row that books the storage
// rent of one UTC day's piece of a provider explicit cache's life (a
// Gemini cachedContent created through the gateway). It is not a call:
// the gateway writes it, one per cache and day (OnceRowID).
const OutcomeCacheRent Outcome = "cache_rent"

// RentedCache is the gateway's record of a provider explicit cache a
// tenant created through it (or the gateway made for it), kept to book the
// cache's storage rent day by day.
//
// Its life runs from Created to End when End is set (a deletion the
// provider answered 2xx), else to Expire (the latest expiry the provider
// answered, to a create or an update of its ttl). Rent from Created to
// BookedUntil is booked in the ledger; Done says the whole life is.
type RentedCache struct {
	Tenant      string
	Operation   string
	Model       string // the model the cache holds a prefix of
	Name        string // the provider's name ("cachedContents/{id}")
	Tokens      int64
	Created     time.Time
	Expire      time.Time
	End         time.Time // zero until deleted
	BookedUntil time.Time // zero or Created: nothing booked yet
	Done        bool
}

// LifeEnd is when c stops accruing rent: its deletion when that came
// before its expiry, else its expiry.
func (c RentedCache) LifeEnd() time.Time {
	if !c.End.IsZero() && (c.Expire.IsZero() || c.End.Before(c.Expire)) {
		return c.End
	}
	return c.Expire
}

// RentedCacheStore keeps the records of rented caches. Records are keyed
// by (Tenant, Name); tenants never see each other's.
//
// PutRentedCache stores c as a new record; a record already stored under
// its key is kept as it is (storing it again is not an error).
// ExtendRentedCache sets the expiry of a record not yet ended nor done
// (no record: not an error). EndRentedCache sets the End of a record that
// has none and returns the record as it is then (ok false: no record).
// UnbookedCaches returns up to limit records not Done that come after
// after in (Created, Tenant, Name) order (a zero after: from the first),
// in that order. AdvanceRent moves a record's
// BookedUntil from from to to, and sets Done with done; it reports false,
// changing nothing, when the record's BookedUntil is no longer from (an
// other sweeper advanced it first) — a conditional update, so two
// sweepers never both advance the same piece.
type RentedCacheStore interface {
	PutRentedCache(ctx context.Context, c RentedCache) error
	ExtendRentedCache(ctx context.Context, tenant, name string, expire time.Time) error
	EndRentedCache(ctx context.Context, tenant, name string, end time.Time) (c RentedCache, ok bool, err error)
	UnbookedCaches(ctx context.Context, after RentedCache, limit int) ([]RentedCache, error)
	AdvanceRent(ctx context.Context, tenant, name string, from, to time.Time, done bool) (bool, error)
}
