package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

var keyTests = []suiteTest{
	{"Keys/CreateLookupListCount", testKeys},
	{"Keys/DuplicateHash", testKeyDuplicate},
	{"Keys/Delete", testKeyDelete},
}

func testKeys(t *testing.T, s Stores) {
	n, err := s.CountKeys(ctx)
	must(t, err, "CountKeys")
	if n != 0 {
		t.Fatalf("CountKeys on an empty store = %d, want 0", n)
	}
	keys, err := s.ListKeys(ctx)
	must(t, err, "ListKeys")
	if len(keys) != 0 {
		t.Fatalf("ListKeys on an empty store = %v", keys)
	}

	secretA, a := groundhog.NewAPIKey("acme", t0)
	secretB, b := groundhog.NewAPIKey("globex", at(time.Hour))
	_, c := groundhog.NewAPIKey("acme", at(2*time.Hour)) // a tenant may have several keys
	for _, k := range []groundhog.APIKey{a, b, c} {
		must(t, s.CreateKey(ctx, k), "CreateKey")
	}
	for _, tc := range []struct {
		secret, tenant string
	}{
		{secretA, "acme"},
		{secretB, "globex"},
	} {
		got, err := s.TenantForKey(ctx, groundhog.HashAPIKey(tc.secret))
		must(t, err, "TenantForKey")
		if got != tc.tenant {
			t.Errorf("TenantForKey = %q, want %q", got, tc.tenant)
		}
	}
	for _, unknown := range []string{groundhog.HashAPIKey("gh_unknown"), "", secretA /* the secret itself is not its hash */} {
		_, err := s.TenantForKey(ctx, unknown)
		wantCode(t, err, groundhog.ENOTFOUND, "TenantForKey of an unknown hash")
	}

	n, err = s.CountKeys(ctx)
	must(t, err, "CountKeys")
	if n != 3 {
		t.Errorf("CountKeys = %d, want 3", n)
	}
	keys, err = s.ListKeys(ctx)
	must(t, err, "ListKeys")
	want := []groundhog.APIKey{a, b, c}
	byHash := func(x, y groundhog.APIKey) int { return strings.Compare(x.Hash, y.Hash) }
	slices.SortFunc(keys, byHash)
	slices.SortFunc(want, byHash)
	if len(keys) != len(want) {
		t.Fatalf("ListKeys returned %d keys, want %d", len(keys), len(want))
	}
	for i := range keys {
		g, w := keys[i], want[i]
		if g.ID != w.ID || g.Tenant != w.Tenant || g.Hash != w.Hash || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("key %d = %+v, want %+v", i, g, w)
		}
	}
}

func testKeyDuplicate(t *testing.T, s Stores) {
	_, k := groundhog.NewAPIKey("acme", t0)
	must(t, s.CreateKey(ctx, k), "CreateKey")
	dup := k
	dup.Tenant = "mallory" // must not be able to capture the key
	wantCode(t, s.CreateKey(ctx, dup), groundhog.ECONFLICT, "CreateKey of a stored hash")
	got, err := s.TenantForKey(ctx, k.Hash)
	must(t, err, "TenantForKey")
	if got != "acme" {
		t.Errorf("TenantForKey = %q after a duplicate create, want acme", got)
	}
}

func testKeyDelete(t *testing.T, s Stores) {
	_, a := groundhog.NewAPIKey("acme", t0)
	_, b := groundhog.NewAPIKey("acme", t0)
	must(t, s.CreateKey(ctx, a), "CreateKey")
	must(t, s.CreateKey(ctx, b), "CreateKey")
	n, err := s.DeleteKey(ctx, a.ID)
	must(t, err, "DeleteKey")
	if n != 1 {
		t.Fatalf("DeleteKey removed %d keys, want 1", n)
	}
	_, err = s.TenantForKey(ctx, a.Hash)
	wantCode(t, err, groundhog.ENOTFOUND, "TenantForKey of a deleted key")
	if tenant, err := s.TenantForKey(ctx, b.Hash); err != nil || tenant != "acme" {
		t.Fatalf("the other key of the tenant: %q %v", tenant, err)
	}
	_, err = s.DeleteKey(ctx, a.ID)
	wantCode(t, err, groundhog.ENOTFOUND, "DeleteKey of a deleted key")
}
