package storetest

import (
	"slices"
	"strconv"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// RunResources runs the ResourceStore conformance suite. open is called
// once per subtest and must return an empty store of its own.
func RunResources(t *testing.T, open func(t *testing.T) groundhog.ResourceStore) {
	t.Run("Resources/OwnedPerTenant", func(t *testing.T) { testResourcesOwned(t, open(t)) })
	t.Run("Resources/ManyNames", func(t *testing.T) { testResourcesMany(t, open(t)) })
}

func owned(t *testing.T, s groundhog.ResourceStore, tenant, kind string, names ...string) []string {
	t.Helper()
	got, err := s.OwnedResources(ctx, tenant, kind, names)
	must(t, err, "OwnedResources")
	slices.Sort(got)
	return got
}

func testResourcesOwned(t *testing.T, s groundhog.ResourceStore) {
	const kind = groundhog.ResourceKindGeminiCache
	if got := owned(t, s, "acme", kind, "cachedContents/a"); len(got) != 0 {
		t.Fatalf("an empty store owns %v", got)
	}
	must(t, s.PutResource(ctx, groundhog.Resource{Tenant: "acme", Kind: kind, Name: "cachedContents/a", CreatedAt: t0}), "PutResource")
	must(t, s.PutResource(ctx, groundhog.Resource{Tenant: "acme", Kind: kind, Name: "cachedContents/a", CreatedAt: at(1)}), "PutResource again")
	must(t, s.PutResource(ctx, groundhog.Resource{Tenant: "acme", Kind: kind, Name: "cachedContents/b", CreatedAt: t0}), "PutResource")
	must(t, s.PutResource(ctx, groundhog.Resource{Tenant: "globex", Kind: kind, Name: "cachedContents/c", CreatedAt: t0}), "PutResource")
	must(t, s.PutResource(ctx, groundhog.Resource{Tenant: "acme", Kind: "other.kind", Name: "cachedContents/c", CreatedAt: t0}), "PutResource")

	all := []string{"cachedContents/a", "cachedContents/b", "cachedContents/c", "cachedContents/x"}
	if got := owned(t, s, "acme", kind, all...); !slices.Equal(got, []string{"cachedContents/a", "cachedContents/b"}) {
		t.Fatalf("acme owns %v, want a and b", got)
	}
	if got := owned(t, s, "globex", kind, all...); !slices.Equal(got, []string{"cachedContents/c"}) {
		t.Fatalf("globex owns %v, want c only", got)
	}
	if got := owned(t, s, "acme", kind); len(got) != 0 {
		t.Fatalf("no names asked, got %v", got)
	}

	must(t, s.DeleteResource(ctx, "globex", kind, "cachedContents/a"), "DeleteResource of another tenant's")
	if got := owned(t, s, "acme", kind, all...); !slices.Equal(got, []string{"cachedContents/a", "cachedContents/b"}) {
		t.Fatalf("another tenant's delete removed acme's record: %v", got)
	}
	must(t, s.DeleteResource(ctx, "acme", kind, "cachedContents/a"), "DeleteResource")
	must(t, s.DeleteResource(ctx, "acme", kind, "cachedContents/a"), "DeleteResource again")
	if got := owned(t, s, "acme", kind, all...); !slices.Equal(got, []string{"cachedContents/b"}) {
		t.Fatalf("after delete acme owns %v, want b", got)
	}
	if got := owned(t, s, "acme", "other.kind", all...); !slices.Equal(got, []string{"cachedContents/c"}) {
		t.Fatalf("kinds are apart: got %v", got)
	}
}

// testResourcesMany asks about more names than one statement's parameters
// may carry in some backends.
func testResourcesMany(t *testing.T, s groundhog.ResourceStore) {
	const kind = groundhog.ResourceKindGeminiCache
	var names, want []string
	for i := range 1500 {
		n := "cachedContents/" + strconv.Itoa(i)
		names = append(names, n)
		if i%7 == 0 {
			must(t, s.PutResource(ctx, groundhog.Resource{Tenant: "acme", Kind: kind, Name: n, CreatedAt: t0}), "PutResource")
			want = append(want, n)
		}
	}
	slices.Sort(want)
	if got := owned(t, s, "acme", kind, names...); !slices.Equal(got, want) {
		t.Fatalf("owned %d of 1500 names, want %d", len(got), len(want))
	}
}
