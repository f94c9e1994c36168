package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// versionHeader builds the request headers versionsFor reads.
func versionHeader(cacheVersion, anthropicVersion, beta string) http.Header {
	h := http.Header{}
	if cacheVersion != "" {
		h[http.CanonicalHeaderKey(hdrCacheVersion)] = []string{cacheVersion}
	}
	if anthropicVersion != "" {
		h["Anthropic-Version"] = []string{anthropicVersion}
	}
	if beta != "" {
		h["Anthropic-Beta"] = []string{beta}
	}
	return h
}

// decodeVersions is versionsFor's left inverse: it parses the string back
// into its named components, failing on anything it cannot parse exactly.
func decodeVersions(t *testing.T, s string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for s != "" {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			t.Fatalf("no name in %q", s)
		}
		n, rest, ok := strings.Cut(rest, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || size < 0 || size > len(rest) {
			t.Fatalf("bad length %q", n)
		}
		if _, dup := got[name]; dup {
			t.Fatalf("component %q twice", name)
		}
		got[name], s = rest[:size], rest[size:]
		if s != "" {
			if s[0] != '|' {
				t.Fatalf("no separator before %q", s)
			}
			s = s[1:]
		}
	}
	return got
}

// TestCacheVersionCannotForgeAnthropicBeta: a
// Groundhog-Cache-Version value that spells out another component must not
// give the same key as a request that sends that component for real.
func TestCacheVersionCannotForgeAnthropicBeta(t *testing.T) {
	forged := versionsFor("", groundhog.ShapeMessages, versionHeader("v1|anthropic-beta=interleaved-thinking-2025-05-14", "2023-06-01", ""))
	real := versionsFor("", groundhog.ShapeMessages, versionHeader("v1", "2023-06-01", "interleaved-thinking-2025-05-14"))
	if forged == real {
		t.Fatalf("forged cache version gives the key of a beta request: %q", forged)
	}
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	hash := func(v string) string {
		r, err := fingerprint.Compute(fingerprint.Params{Shape: groundhog.ShapeMessages, Tenant: "t", Versions: v}, body)
		if err != nil {
			t.Fatal(err)
		}
		return r.Hash
	}
	if hash(forged) == hash(real) {
		t.Fatal("forged cache version collides with the beta request's fingerprint")
	}
	// The operation's versions cannot be forged by the client either.
	if versionsFor("prompt=4", groundhog.ShapeChat, nil) == versionsFor("", groundhog.ShapeChat, versionHeader("x|op=prompt=4", "", "")) {
		t.Fatal("client header forges the operation's versions")
	}
	if got := versionsFor("", groundhog.ShapeChat, http.Header{}); got != "" {
		t.Fatalf("nothing declared gives %q, want \"\"", got)
	}
}

// FuzzVersionsFor proves versionsFor injective: its output always decodes
// back to exactly the components it was given, so two different sets of
// components (one of them crafted by a client) never build one key.
func FuzzVersionsFor(f *testing.F) {
	f.Add("", "v1|anthropic-beta=interleaved-thinking-2025-05-14", "2023-06-01", "")
	f.Add("", "v1", "2023-06-01", "interleaved-thinking-2025-05-14")
	f.Add("prompt=4", "3:x|client=1:y", "", "a,b")
	f.Fuzz(func(t *testing.T, op, cv, av, beta string) {
		for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeMessages} {
			h := versionHeader(cv, av, beta)
			want := map[string]string{}
			put := func(name, v string) {
				if v != "" {
					want[name] = v
				}
			}
			put("op", op)
			put("client", h.Get(hdrCacheVersion))
			if shape == groundhog.ShapeMessages {
				put("anthropic-version", strings.TrimSpace(av))
				put("anthropic-beta", beta)
			}
			got := decodeVersions(t, versionsFor(op, shape, h))
			if len(got) != len(want) {
				t.Fatalf("%s: decoded %q, want %q", shape, got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s: component %s = %q, want %q", shape, k, got[k], v)
				}
			}
		}
	})
}
