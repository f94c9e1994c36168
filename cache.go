package groundhog

import (
	"context"
	"time"
)

// CacheEntry is one stored response of the exact cache. Its identity is
// (Tenant, RequestHash): the hash already includes the tenant scope, and the
// tenant is kept as a separate column so a lookup can never cross tenants.
type CacheEntry struct {
	Tenant      string
	RequestHash string // "sha256:<hex>"
	Shape       Shape
	Response    Response // Response.Cost is the saved cost of every hit
	CreatedAt   time.Time
	ExpiresAt   time.Time // zero: never expires
}

// Size is the approximate memory footprint of e in bytes, used by size-aware
// in-memory tiers.
func (e *CacheEntry) Size() int {
	n := 256 + len(e.Tenant) + len(e.RequestHash) + len(e.Response.Body) + len(e.Response.ContentType) + len(e.Response.Model)
	for _, ev := range e.Response.Events {
		n += 48 + len(ev.Name) + len(ev.Data)
	}
	return n
}

// Expired reports whether e is past its expiry at now.
func (e *CacheEntry) Expired(now time.Time) bool {
	return !e.ExpiresAt.IsZero() && !now.Before(e.ExpiresAt)
}

// CacheStore is the durable tier of the exact response cache.
//
// GetCache returns the entry for (tenant, hash) unless it is missing or
// expired at now, in which case the error has code ENOTFOUND. PutCache
// inserts or replaces the entry for (e.Tenant, e.RequestHash). DeleteCache
// removes it (no error when absent). PurgeCache deletes every entry expired at
// now and returns how many.
type CacheStore interface {
	GetCache(ctx context.Context, tenant, hash string, now time.Time) (*CacheEntry, error)
	PutCache(ctx context.Context, e *CacheEntry) error
	DeleteCache(ctx context.Context, tenant, hash string) error
	PurgeCache(ctx context.Context, now time.Time) (int, error)
}
