package sim

import (
	"sync"
	"time"
)

// Prefix caching defaults: sim-small's limits (every model's limits are in
// ModelCacheLimits) and the lifetime of a short-lived entry.
const (
	MinCacheTokens  = 1024
	BlockTokens     = 128
	DefaultCacheTTL = 5 * time.Minute
)

// PrefixPoint identifies one prompt prefix: Hash is a digest of exactly the
// first Tokens tokens of the prompt (framing markers included), so two
// prompts share a point iff they start with the same Tokens tokens.
type PrefixPoint struct {
	Hash   uint64
	Tokens int
}

// PrefixWrite is a prefix to cache and how long it lives unused: TTL is
// refreshed on every read; 0 means the cache's default lifetime (the 5-minute
// class: OpenAI automatic caching and Anthropic's default "5m").
type PrefixWrite struct {
	PrefixPoint
	TTL time.Duration
}

// PrefixCache is the provider-side prompt prefix cache: which prompt
// prefixes a provider still holds the computed state of, per (scope, model).
// Scope is a digest of the caller's API key (and, on OpenAI routes, the
// prompt_cache_key), so keys never share entries.
//
// For each model call the server calls Lookup once on arrival (its answer
// sets the cached-token usage and the time to first token), then, once the
// time to first token has passed (the prompt has been "processed"), Store
// once. So a prefix becomes readable only after the request that writes it
// has passed its prefill, as with real providers: requests that arrive
// together all miss.
//
// The server applies the provider's rules (minimum length, blocks,
// breakpoints, lookback) before calling: the points passed are already the
// eligible ones, in increasing Tokens order. Lookup's points are where a read
// may be found, Store's the prefixes the request writes.
//
// Implementations must be safe for concurrent use.
type PrefixCache interface {
	// Lookup returns the Tokens of the longest point of prefix that is
	// cached for (scope, model) and unexpired at now, refreshing that entry's
	// TTL (its own lifetime, from now); 0 when none is.
	Lookup(scope, model string, prefix []PrefixPoint, now time.Time) (cachedTokens int)
	// Store caches the writes the implementation accepts for (scope, model)
	// at now, each living its TTL after now (an entry already cached keeps
	// the longer of its lifetime and the new one), and returns the Tokens of
	// the longest of them it holds afterwards (0 if none).
	Store(scope, model string, writes []PrefixWrite, now time.Time) (storedTokens int)
}

// NoPrefixCache is a PrefixCache that caches nothing: every prompt token is
// uncached. Use it for a no-provider-caching baseline.
type NoPrefixCache struct{}

// Lookup returns 0.
func (NoPrefixCache) Lookup(string, string, []PrefixPoint, time.Time) int { return 0 }

// Store stores nothing and returns 0.
func (NoPrefixCache) Store(string, string, []PrefixWrite, time.Time) int { return 0 }

// memPrefixCache is the default PrefixCache: an in-memory map from (scope,
// model, point) to expiry, swept of expired entries at most once per default
// TTL.
type memPrefixCache struct {
	ttl       time.Duration
	mu        sync.Mutex
	entries   map[prefixKey]prefixEntry
	lastSweep time.Time
}

type prefixKey struct {
	scope, model string
	point        PrefixPoint
}

type prefixEntry struct {
	expires time.Time
	ttl     time.Duration // lifetime, renewed from each read
}

// NewPrefixCache returns the default in-memory PrefixCache. ttl is the
// lifetime of a write without a TTL of its own (<= 0 means DefaultCacheTTL);
// every entry expires its lifetime after its last use.
func NewPrefixCache(ttl time.Duration) PrefixCache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &memPrefixCache{ttl: ttl, entries: map[prefixKey]prefixEntry{}}
}

func (c *memPrefixCache) Lookup(scope, model string, prefix []PrefixPoint, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, found := prefixKey{}, false
	for _, p := range prefix {
		if found && p.Tokens <= best.point.Tokens {
			continue
		}
		k := prefixKey{scope, model, p}
		if e, ok := c.entries[k]; ok && now.Before(e.expires) {
			best, found = k, true
		}
	}
	if !found {
		return 0
	}
	e := c.entries[best]
	e.expires = now.Add(e.ttl)
	c.entries[best] = e
	return best.point.Tokens
}

func (c *memPrefixCache) Store(scope, model string, writes []PrefixWrite, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.lastSweep) >= c.ttl {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		c.lastSweep = now
	}
	stored := 0
	for _, w := range writes {
		ttl := w.TTL
		if ttl <= 0 {
			ttl = c.ttl
		}
		k := prefixKey{scope, model, w.PrefixPoint}
		if old, ok := c.entries[k]; ok && now.Before(old.expires) && old.ttl > ttl {
			ttl = old.ttl
		}
		c.entries[k] = prefixEntry{expires: now.Add(ttl), ttl: ttl}
		stored = max(stored, w.Tokens)
	}
	return stored
}
