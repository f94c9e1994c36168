package storetest

import (
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

var cacheTests = []suiteTest{
	{"Cache/RoundTrip", testCacheRoundTrip},
	{"Cache/TenantIsolation", testCacheTenantIsolation},
	{"Cache/ExpiryBoundary", testCacheExpiry},
	{"Cache/Replace", testCacheReplace},
	{"Cache/Delete", testCacheDelete},
	{"Cache/Purge", testCachePurge},
}

func cacheEntry(tenant, hash string, r *groundhog.Response, expires time.Time) *groundhog.CacheEntry {
	return &groundhog.CacheEntry{
		Tenant:      tenant,
		RequestHash: hash,
		Shape:       groundhog.ShapeChat,
		Response:    *r,
		CreatedAt:   t0,
		ExpiresAt:   expires,
	}
}

func testCacheRoundTrip(t *testing.T, s Stores) {
	for _, tc := range []struct {
		name    string
		shape   groundhog.Shape
		resp    *groundhog.Response
		expires time.Time
	}{
		{"json", groundhog.ShapeChat, jsonResponse("a"), at(time.Hour)},
		{"stream", groundhog.ShapeMessages, streamResponse("b"), at(24 * time.Hour)},
		{"never expires", groundhog.ShapeEmbeddings, jsonResponse("c"), time.Time{}},
		{"empty body", groundhog.ShapeResponses, &groundhog.Response{Status: 204, ContentType: "application/json"}, at(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hash := "sha256:" + tc.name
			want := cacheEntry("tenant-1", hash, tc.resp, tc.expires)
			want.Shape = tc.shape
			must(t, s.PutCache(ctx, want), "PutCache")
			got, err := s.GetCache(ctx, "tenant-1", hash, at(time.Second))
			must(t, err, "GetCache")
			if got.Tenant != want.Tenant || got.RequestHash != want.RequestHash || got.Shape != want.Shape {
				t.Errorf("identity = (%q, %q, %q), want (%q, %q, %q)", got.Tenant, got.RequestHash, got.Shape, want.Tenant, want.RequestHash, want.Shape)
			}
			if !timeEq(got.CreatedAt, want.CreatedAt) || !timeEq(got.ExpiresAt, want.ExpiresAt) {
				t.Errorf("times = (%v, %v), want (%v, %v)", got.CreatedAt, got.ExpiresAt, want.CreatedAt, want.ExpiresAt)
			}
			if tc.expires.IsZero() && !got.ExpiresAt.IsZero() {
				t.Errorf("ExpiresAt = %v, want zero (never)", got.ExpiresAt)
			}
			if d := responseDiff(&got.Response, tc.resp); d != "" {
				t.Error(d)
			}
		})
	}
	// An entry that never expires is found however late it is asked for.
	if _, err := s.GetCache(ctx, "tenant-1", "sha256:never expires", at(100*365*24*time.Hour)); err != nil {
		t.Errorf("never-expiring entry a century later: %v", err)
	}
}

func testCacheTenantIsolation(t *testing.T, s Stores) {
	const hash = "sha256:shared"
	must(t, s.PutCache(ctx, cacheEntry("alice", hash, jsonResponse("alice"), at(time.Hour))), "PutCache alice")
	_, err := s.GetCache(ctx, "bob", hash, t0)
	wantCode(t, err, groundhog.ENOTFOUND, "bob reads alice's hash")

	must(t, s.PutCache(ctx, cacheEntry("bob", hash, jsonResponse("bob"), at(time.Hour))), "PutCache bob")
	for _, tenant := range []string{"alice", "bob"} {
		got, err := s.GetCache(ctx, tenant, hash, t0)
		must(t, err, "GetCache "+tenant)
		if d := responseDiff(&got.Response, jsonResponse(tenant)); d != "" {
			t.Errorf("%s: %s", tenant, d)
		}
	}
	must(t, s.DeleteCache(ctx, "alice", hash), "DeleteCache alice")
	if _, err := s.GetCache(ctx, "bob", hash, t0); err != nil {
		t.Errorf("deleting alice's entry removed bob's: %v", err)
	}
}

func testCacheExpiry(t *testing.T, s Stores) {
	exp := at(time.Minute)
	must(t, s.PutCache(ctx, cacheEntry("t", "sha256:x", jsonResponse("x"), exp)), "PutCache")
	for _, tc := range []struct {
		name  string
		now   time.Time
		found bool
	}{
		{"1ns before expiry", exp.Add(-time.Nanosecond), true},
		{"at expiry", exp, false},
		{"after expiry", exp.Add(time.Nanosecond), false},
		{"before creation", t0.Add(-time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.GetCache(ctx, "t", "sha256:x", tc.now)
			if tc.found {
				must(t, err, "GetCache")
			} else {
				wantCode(t, err, groundhog.ENOTFOUND, "GetCache")
			}
		})
	}
}

func testCacheReplace(t *testing.T, s Stores) {
	must(t, s.PutCache(ctx, cacheEntry("t", "sha256:r", streamResponse("first"), at(time.Minute))), "PutCache 1")
	second := cacheEntry("t", "sha256:r", jsonResponse("second"), at(time.Hour))
	second.Shape = groundhog.ShapeResponses
	second.CreatedAt = at(30 * time.Second)
	must(t, s.PutCache(ctx, second), "PutCache 2")
	// At t0+2m the first entry would have expired: the replacement's expiry counts.
	got, err := s.GetCache(ctx, "t", "sha256:r", at(2*time.Minute))
	must(t, err, "GetCache")
	if d := responseDiff(&got.Response, jsonResponse("second")); d != "" {
		t.Error(d)
	}
	if got.Shape != groundhog.ShapeResponses || !timeEq(got.CreatedAt, second.CreatedAt) || !timeEq(got.ExpiresAt, second.ExpiresAt) {
		t.Errorf("got shape %q created %v expires %v, want the replacement's", got.Shape, got.CreatedAt, got.ExpiresAt)
	}
	// Replacing with a never-expiring entry clears the expiry.
	third := cacheEntry("t", "sha256:r", jsonResponse("third"), time.Time{})
	must(t, s.PutCache(ctx, third), "PutCache 3")
	n, err := s.PurgeCache(ctx, at(48*time.Hour))
	must(t, err, "PurgeCache")
	if n != 0 {
		t.Errorf("PurgeCache removed %d entries, want 0", n)
	}
	if _, err := s.GetCache(ctx, "t", "sha256:r", at(48*time.Hour)); err != nil {
		t.Errorf("never-expiring replacement: %v", err)
	}
}

func testCacheDelete(t *testing.T, s Stores) {
	must(t, s.PutCache(ctx, cacheEntry("t", "sha256:d", jsonResponse("d"), at(time.Hour))), "PutCache")
	must(t, s.PutCache(ctx, cacheEntry("t", "sha256:keep", jsonResponse("k"), at(time.Hour))), "PutCache")
	must(t, s.DeleteCache(ctx, "t", "sha256:d"), "DeleteCache")
	_, err := s.GetCache(ctx, "t", "sha256:d", t0)
	wantCode(t, err, groundhog.ENOTFOUND, "GetCache after delete")
	must(t, s.DeleteCache(ctx, "t", "sha256:d"), "DeleteCache of an absent entry")
	must(t, s.DeleteCache(ctx, "nobody", "sha256:nothing"), "DeleteCache of an unknown tenant")
	if _, err := s.GetCache(ctx, "t", "sha256:keep", t0); err != nil {
		t.Errorf("other entry: %v", err)
	}
}

func testCachePurge(t *testing.T, s Stores) {
	now := at(time.Hour)
	entries := map[string]time.Time{
		"sha256:long-gone": at(time.Minute),
		"sha256:at-now":    now, // ExpiresAt == now: expired
		"sha256:1ns-later": now.Add(time.Nanosecond),
		"sha256:future":    at(2 * time.Hour),
		"sha256:never":     {},
	}
	for hash, exp := range entries {
		must(t, s.PutCache(ctx, cacheEntry("t", hash, jsonResponse(hash), exp)), "PutCache "+hash)
	}
	n, err := s.PurgeCache(ctx, now)
	must(t, err, "PurgeCache")
	if n != 2 {
		t.Errorf("PurgeCache = %d, want 2", n)
	}
	// Probe before now so that only the purge decides what is found.
	for hash, exp := range entries {
		_, err := s.GetCache(ctx, "t", hash, t0)
		if purged := !exp.IsZero() && !exp.After(now); purged {
			wantCode(t, err, groundhog.ENOTFOUND, "purged "+hash)
		} else if err != nil {
			t.Errorf("kept %s: %v", hash, err)
		}
	}
	n, err = s.PurgeCache(ctx, now)
	must(t, err, "PurgeCache again")
	if n != 0 {
		t.Errorf("second PurgeCache = %d, want 0", n)
	}
}
