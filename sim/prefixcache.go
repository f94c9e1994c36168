package sim

import (
	"sync"
	"time"
)

// Prefix caching constants of the default implementation (those of the real
// providers): nothing shorter than MinCacheTokens is cached, and OpenAI-style
// automatic caching matches in whole blocks of BlockTokens.
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

// PrefixCache is the provider-side prompt prefix cache: which prompt
// prefixes a provider still holds the computed state of, per (scope, model).
// Scope is a digest of the caller's API key, so keys never share entries.
//
// For each model call the server calls Lookup once on arrival (its answer
// sets the cached-token usage and the time to first token), then, once the
// time to first token has passed (the prompt has been "processed"), Store
// once. So a prefix becomes readable only after the request that writes it
// has passed its prefill, as with real providers.
//
// The points passed are in increasing Tokens order. For OpenAI routes
// (automatic caching) they are every multiple of BlockTokens in the prompt,
// both for Lookup and Store. For Anthropic they are the cache_control
// breakpoints for Store, and the breakpoints plus the content-block
// boundaries up to 20 blocks before each of them for Lookup (Anthropic's
// lookback).
//
// Implementations must be safe for concurrent use.
type PrefixCache interface {
	// Lookup returns the Tokens of the longest point of prefix that is
	// cached for (scope, model) and unexpired at now, refreshing that entry's
	// TTL; 0 when none is.
	Lookup(scope, model string, prefix []PrefixPoint, now time.Time) (cachedTokens int)
	// Store caches the points of prefix the implementation accepts (the
	// default: at least MinCacheTokens long) for (scope, model) at now,
	// refreshing those already cached, and returns the Tokens of the longest
	// point it holds afterwards among them (0 if none).
	Store(scope, model string, prefix []PrefixPoint, now time.Time) (storedTokens int)
}

// NoPrefixCache is a PrefixCache that caches nothing: every prompt token is
// uncached. Use it for a no-provider-caching baseline.
type NoPrefixCache struct{}

// Lookup returns 0.
func (NoPrefixCache) Lookup(string, string, []PrefixPoint, time.Time) int { return 0 }

// Store stores nothing and returns 0.
func (NoPrefixCache) Store(string, string, []PrefixPoint, time.Time) int { return 0 }

// memPrefixCache is the default PrefixCache: an in-memory map from (scope,
// model, point) to expiry, swept of expired entries at most once per TTL.
type memPrefixCache struct {
	ttl       time.Duration
	mu        sync.Mutex
	entries   map[prefixKey]time.Time // expiry
	lastSweep time.Time
}

type prefixKey struct {
	scope, model string
	point        PrefixPoint
}

// NewPrefixCache returns the default in-memory PrefixCache: entries of at
// least MinCacheTokens tokens, each expiring ttl after its last use (ttl <= 0
// means DefaultCacheTTL).
func NewPrefixCache(ttl time.Duration) PrefixCache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &memPrefixCache{ttl: ttl, entries: map[prefixKey]time.Time{}}
}

func (c *memPrefixCache) Lookup(scope, model string, prefix []PrefixPoint, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	best := prefixKey{}
	for _, p := range prefix {
		if p.Tokens < MinCacheTokens || p.Tokens <= best.point.Tokens {
			continue
		}
		k := prefixKey{scope, model, p}
		if exp, ok := c.entries[k]; ok && now.Before(exp) {
			best = k
		}
	}
	if best.point.Tokens == 0 {
		return 0
	}
	c.entries[best] = now.Add(c.ttl)
	return best.point.Tokens
}

func (c *memPrefixCache) Store(scope, model string, prefix []PrefixPoint, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.lastSweep) >= c.ttl {
		for k, exp := range c.entries {
			if !now.Before(exp) {
				delete(c.entries, k)
			}
		}
		c.lastSweep = now
	}
	stored := 0
	for _, p := range prefix {
		if p.Tokens < MinCacheTokens {
			continue
		}
		c.entries[prefixKey{scope, model, p}] = now.Add(c.ttl)
		stored = max(stored, p.Tokens)
	}
	return stored
}
