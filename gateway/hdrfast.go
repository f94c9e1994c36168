package gateway

import (
	"net/http"

	"github.com/groundhog-ai/groundhog"
)

// Header work on the hit path without net/http's per-call key
// canonicalization (docs/design/0009-hit-path.md). http.Header.Get(k) looks up
// textproto.CanonicalMIMEHeaderKey(k), which validates and copies-if-needed
// k byte by byte on every call; the gateway reads about twenty request
// headers per call, nearly all absent. With a key already in canonical form
// the map look-up is the same look-up: request headers are stored under
// canonical keys (net/http's server canonicalizes them, and Header.Set/Add
// do), and a key stored in another form is not found by Get either.
//
// Every key passed to hget or hvalues must be canonical: TestFastHeaderKeys
// checks the ones the gateway uses.

// keyCacheTTL is hdrCacheTTL in canonical form ("TTL" is "Ttl").
const keyCacheTTL = "Groundhog-Cache-Ttl"

// hget is h.Get(k) for a canonical key k.
func hget(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// hvalues is h.Values(k) for a canonical key k.
func hvalues(h http.Header, k string) []string { return h[k] }

// fastHeaderKeys lists the canonical keys read with hget and hvalues.
var fastHeaderKeys = []string{
	"Authorization", "X-Api-Key", "Content-Type", "Content-Encoding", "Accept-Encoding", "Cache-Control",
	"Anthropic-Version", "Anthropic-Beta", "Content-Length", keyCacheTTL,
	hdrOperation, hdrCache, hdrCoalesce, hdrCacheVersion, hdrIdemKey,
	hdrPromptCacheBreakpoints, hdrPromptCacheKey, hdrFanOut, hdrPromptCacheDiagnostics,
	groundhog.HeaderSession, groundhog.HeaderParentSession,
}

// headerVals hands out the one-value slices of a response head from an
// array held by the call, instead of one allocation per Header.Set. Each
// slice has capacity 1, so an Add to the key copies instead of writing
// into the array, and net/http copies the head (Header.Clone) before it
// writes it. k must be canonical (as Set would make it).
type headerVals struct {
	a [6]string
	n int
}

func (v *headerVals) set(h http.Header, k, val string) {
	if v.n == len(v.a) {
		h[k] = []string{val}
		return
	}
	v.a[v.n] = val
	h[k] = v.a[v.n : v.n+1 : v.n+1]
	v.n++
}
