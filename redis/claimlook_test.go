package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
)

// ClaimLook takes a free claim and reads the call's cache entry in one
// command; the look-up after the claim then answers from what it read,
// the entry or its absence, decoded and checked as GetCache always does,
// without a command of its own. A held claim is not taken.
func TestClaimLookReadsTheEntryWithTheClaim(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, redis.Options{})
	count := &storetest.RedisCommands{}
	db.Client().AddHook(count)
	now := time.Now()
	if err := db.PutCache(ctx, entry("acme", "sha256:stored", "stored", now, time.Hour)); err != nil {
		t.Fatal(err)
	}
	claim := db.Prefix() + "test-claim:"
	if _, _, err := db.ClaimLook(ctx, claim+"warm", "token", time.Minute, "acme", "sha256:warm"); err != nil {
		t.Fatal(err) // loads the script (the first run of a script is two commands)
	}
	for _, tc := range []struct {
		hash  string
		found bool
	}{{"sha256:stored", true}, {"sha256:absent", false}} {
		before := count.Count()
		ok, lookCtx, err := db.ClaimLook(ctx, claim+tc.hash, "token", time.Minute, "acme", tc.hash)
		if err != nil || !ok {
			t.Fatalf("%s: claimed %v, %v; want the free claim", tc.hash, ok, err)
		}
		e, err := db.GetCache(lookCtx, "acme", tc.hash, now)
		if n := count.Count() - before; n != 1 {
			t.Errorf("%s: the claim and its look took %d commands, want 1", tc.hash, n)
		}
		if tc.found && (err != nil || string(e.Response.Body) != "stored") {
			t.Errorf("%s: %v, %v; want the stored entry", tc.hash, e, err)
		}
		if !tc.found && !groundhog.IsNotFound(err) {
			t.Errorf("%s: %v, %v; want not found", tc.hash, e, err)
		}
		// Another key under the same context is read as ever.
		before = count.Count()
		if _, err := db.GetCache(lookCtx, "acme", "sha256:other", now); !groundhog.IsNotFound(err) || count.Count()-before != 1 {
			t.Errorf("%s: another key under the claim's context: %v after %d commands, want a read of its own", tc.hash, err, count.Count()-before)
		}
		if v, err := db.Client().Get(ctx, claim+tc.hash).Result(); err != nil || v != "token" {
			t.Errorf("%s: the claim holds %q, %v; want token", tc.hash, v, err)
		}
		if ok, _, err := db.ClaimLook(ctx, claim+tc.hash, "other", time.Minute, "acme", tc.hash); err != nil || ok {
			t.Errorf("%s: a held claim was taken again: %v, %v", tc.hash, ok, err)
		}
	}
	if ttl := db.Client().PTTL(ctx, claim+"sha256:stored").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("the claim's lease is %v, want at most a minute", ttl)
	}
}
