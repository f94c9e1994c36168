package ledger

import (
	"strings"
	"testing"
)

func TestReqMapKeysAreExact(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	h := "sha256:" + hex
	upper := "sha256:" + strings.ToUpper(hex)
	m := newReqMap[int]()
	entries := []struct {
		tenant, hash string
		compact      bool
	}{
		{"acme", h, true},
		{"globex", h, true},    // same hash, other tenant: another request
		{"acme", upper, false}, // another string, even if it decodes alike
		{"acme", "sha256:x", false},
		{"acme", h[:len(h)-1], false},
		{"acme", "md5:" + hex, false},
	}
	for i, e := range entries {
		r := m.ref(e.tenant, e.hash)
		if r.compact != e.compact {
			t.Errorf("%q: compact = %v", e.hash, r.compact)
		}
		if _, ok := m.get(r); ok {
			t.Fatalf("entry %d (%s, %q) found before it was set", i, e.tenant, e.hash)
		}
		m.set(r, i)
	}
	for i, e := range entries {
		if v, ok := m.get(m.ref(e.tenant, e.hash)); !ok || v != i {
			t.Errorf("entry %d = %d, %v", i, v, ok)
		}
	}
	m.deleteFunc(func(v int) bool { return v%2 == 0 })
	for i, e := range entries {
		if _, ok := m.get(m.ref(e.tenant, e.hash)); ok != (i%2 == 1) {
			t.Errorf("after deleteFunc, entry %d present = %v", i, ok)
		}
	}
}
