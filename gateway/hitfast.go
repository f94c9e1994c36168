package gateway

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
)

// Hit-path work that repeats the same results call after call
// (docs/design/0009-hit-path.md): the response head's strings of a stored answer,
// and the mux's choice of handler for the four provider routes.

// strCache remembers the strings of recent values in a small direct-mapped
// table: a cache hit replays a stored answer, whose saved cost and body
// length are the same every time it is served, so formatting them anew (one
// allocation each) is wasted work. A slot holds one (value, string) pair; a
// value that maps to a taken slot replaces it. Safe for concurrent use: a
// slot is swapped whole, never written in place.
type strCache struct {
	slots [64]atomic.Pointer[strEntry]
}

type strEntry struct {
	v int64
	s string
}

func (c *strCache) get(v int64, format func(int64) string) string {
	slot := &c.slots[uint64(v)*0x9e3779b97f4a7c15>>58] // Fibonacci hashing: the top 6 bits
	if e := slot.Load(); e != nil && e.v == v {
		return e.s
	}
	s := format(v)
	slot.Store(&strEntry{v: v, s: s})
	return s
}

var (
	moneyStrs  strCache // groundhog.Money → Money.String
	lengthStrs strCache // body length → strconv.Itoa
)

func formatMoney(v int64) string { return groundhog.Money(v).String() }

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

// providerPaths are the routes dispatched without the mux (directRoutes).
var providerPaths = [...]string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/messages"}

// directRoutes finds, once the mux is complete, the handler the mux picks
// for each provider path, so that ServeHTTP can call it without the mux's
// path cleaning and pattern matching (about 1 % of a hit). A path is
// dispatched directly only when the mux picks the same pattern, the path
// itself, for every method: a more specific pattern registered later
// ("POST /v1/messages") keeps the path in the mux. Only requests whose path
// is exactly one of these, unescaped (RawPath empty), are dispatched
// directly; every other request goes through the mux as before.
func (s *Server) directRoutes() {
	for i, p := range providerPaths {
		var h http.Handler
		ok := true
		for _, m := range [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodOptions, http.MethodTrace, "QUERY"} {
			got, pattern := s.mux.Handler(&http.Request{Method: m, URL: &url.URL{Path: p}, Host: ""})
			if pattern != p {
				ok = false
				break
			}
			h = got
		}
		if ok {
			s.direct[i] = h
		}
	}
}

// route returns the handler of r: the provider handler for an exact
// provider path, else the mux. Not inlined: ServeHTTP's frame stays under
// a call for as long as it runs (see deliver).
//
//go:noinline
func (s *Server) route(r *http.Request) http.Handler {
	if r.URL.RawPath == "" {
		for i, p := range providerPaths {
			if r.URL.Path == p && s.direct[i] != nil {
				r.Pattern = p // as the mux sets it
				return s.direct[i]
			}
		}
	}
	return s.mux
}

// savedHeaderFor is savedHeader; for a cache hit with a known amount (the
// stored answer's cost, the same at every hit of the entry) the string comes
// from the table of recent strings.
func savedHeaderFor(state string, outcome groundhog.Outcome, saved groundhog.Money, resp *groundhog.Response) string {
	if state != "hit" || outcome != groundhog.OutcomeCacheHit || resp == nil || !resp.Cost.Known() || !saved.Known() {
		return savedHeader(outcome, saved, resp)
	}
	return moneyStrs.get(int64(saved), formatMoney)
}

// lengthFor is strconv.Itoa(n); for a stored answer served as a hit (the
// same length every time) from the table of recent strings.
func lengthFor(state string, n int) string {
	if state != "hit" || n < 100 { // strconv.Itoa does not allocate below 100
		return strconv.Itoa(n)
	}
	return lengthStrs.get(int64(n), formatInt)
}

// emptyChoices is the member a usage-only chat chunk carries.
const emptyChoices = `"choices":[]`

// containsEmptyChoices is bytes.Contains(data, []byte(emptyChoices)),
// found from the closing bracket: bytes.Index looks for a pattern from its
// first byte, a quote, which is every few bytes of JSON, while ']' is rare
// (a chunk has one) and IndexByte skips 32 bytes at a time. On a replayed
// stream every event is checked (hiddenUsageChunk): with bytes.Contains that
// scan was about a seventh of a 1 KB streaming hit.
func containsEmptyChoices(data []byte) bool {
	const n = len(emptyChoices)
	for off := n - 1; off < len(data); {
		i := bytes.IndexByte(data[off:], ']')
		if i < 0 {
			return false
		}
		end := off + i + 1 // just past the ']'
		if string(data[end-n:end]) == emptyChoices {
			return true
		}
		off = end
	}
	return false
}
