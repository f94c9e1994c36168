package gateway

import (
	"net/http"
	"testing"
)

// TestFastHeaderKeys: every key the gateway reads with hget/hvalues is in
// canonical form, so each look-up finds what http.Header.Get would.
func TestFastHeaderKeys(t *testing.T) {
	for _, k := range fastHeaderKeys {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q): hget would miss what Get finds", k, c)
		}
		h := http.Header{}
		h.Add(k, "v1")
		h.Add(k, "v2")
		if got, want := hget(h, k), h.Get(k); got != want {
			t.Errorf("hget(%q) = %q, Get = %q", k, got, want)
		}
		if got, want := hvalues(h, k), h.Values(k); len(got) != len(want) {
			t.Errorf("hvalues(%q) = %q, Values = %q", k, got, want)
		}
	}
	if keyCacheTTL != http.CanonicalHeaderKey(hdrCacheTTL) {
		t.Errorf("keyCacheTTL %q is not the canonical form of %q", keyCacheTTL, hdrCacheTTL)
	}
}
