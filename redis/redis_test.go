package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/wake"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
)

// openTest opens a DB on GROUNDHOG_TEST_REDIS under a prefix of its own,
// whose keys are deleted when the test ends.
func openTest(t *testing.T, o redis.Options) *redis.DB {
	t.Helper()
	url := storetest.RedisURL(t)
	if o.Prefix == "" {
		o.Prefix = "ghtest:" + groundhog.NewID()[:12] + ":"
	}
	ctx := context.Background()
	db, err := redis.Open(ctx, url, o)
	if err != nil {
		t.Fatalf("redis.Open: %v", err)
	}
	t.Cleanup(func() {
		cleanPrefix(t, db.Client(), o.Prefix)
		db.Close()
	})
	return db
}

func cleanPrefix(t *testing.T, c *goredis.Client, prefix string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		if err := c.Del(ctx, keys...).Err(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

func TestConformance(t *testing.T) {
	storetest.RunCache(t, func(t *testing.T) groundhog.CacheStore { return openTest(t, redis.Options{}) })
}

func entry(tenant, hash string, body string, created time.Time, ttl time.Duration) *groundhog.CacheEntry {
	e := &groundhog.CacheEntry{Tenant: tenant, RequestHash: hash, Shape: groundhog.ShapeChat, CreatedAt: created,
		Response: groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(body), Cost: 42}}
	if ttl > 0 {
		e.ExpiresAt = created.Add(ttl)
	}
	return e
}

// keyOf finds the single cache key the test wrote (not the expiry index).
func keyOf(t *testing.T, db *redis.DB) string {
	t.Helper()
	ctx := context.Background()
	keys, err := db.Client().Keys(ctx, db.Prefix()+"c:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("cache keys = %v, %v; want exactly one", keys, err)
	}
	return keys[0]
}

func TestCorruptEntryIsAMissAndDeleted(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-7] }},
		{"flipped byte", func(b []byte) []byte { c := append([]byte(nil), b...); c[len(c)-3] ^= 0x20; return c }},
		{"not an entry", func([]byte) []byte { return []byte("hello") }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, redis.Options{})
			if err := db.PutCache(ctx, entry("acme", "sha256:x", `{"ok":true}`, now, time.Hour)); err != nil {
				t.Fatal(err)
			}
			k := keyOf(t, db)
			b, err := db.Client().Get(ctx, k).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Client().Set(ctx, k, tc.mangle(b), time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			_, err = db.GetCache(ctx, "acme", "sha256:x", now)
			if !groundhog.IsNotFound(err) {
				t.Fatalf("GetCache of a corrupt entry = %v, want ENOTFOUND", err)
			}
			if n, _ := db.Client().Exists(ctx, k).Result(); n != 0 {
				t.Errorf("corrupt entry still in Redis")
			}
			if db.Stats().Corrupt != 1 {
				t.Errorf("Stats().Corrupt = %d, want 1", db.Stats().Corrupt)
			}
		})
	}
}

// An entry stored under another key (a copied value) is never served.
func TestEntryUnderAnotherKeyIsNotServed(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, redis.Options{})
	now := time.Now()
	if err := db.PutCache(ctx, entry("alice", "sha256:a", `{"secret":1}`, now, time.Hour)); err != nil {
		t.Fatal(err)
	}
	k := keyOf(t, db)
	b, _ := db.Client().Get(ctx, k).Bytes()
	bobKey := strings.Replace(k, "5.alice:", "3.bob:", 1)
	if err := db.Client().Set(ctx, bobKey, b, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetCache(ctx, "bob", "sha256:a", now); !groundhog.IsNotFound(err) {
		t.Fatalf("bob got alice's copied entry: err = %v", err)
	}
}

func TestNativeTTLAndTenantNamespace(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, redis.Options{})
	now := time.Now()
	if err := db.PutCache(ctx, entry("team:a/b", "sha256:t", `{}`, now, 90*time.Second)); err != nil {
		t.Fatal(err)
	}
	k := keyOf(t, db)
	if want := db.Prefix() + "c:8.team:a/b:sha256:t"; k != want {
		t.Errorf("key = %q, want %q", k, want)
	}
	ttl, err := db.Client().PTTL(ctx, k).Result()
	if err != nil || ttl <= 0 || ttl > 90*time.Second {
		t.Errorf("PTTL = %v, %v; want a native TTL of at most 90s", ttl, err)
	}
	if err := db.PutCache(ctx, entry("team:a/b", "sha256:t", `{}`, now, 0)); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := db.Client().PTTL(ctx, k).Result(); ttl != -1 {
		t.Errorf("PTTL of a never-expiring entry = %v, want -1 (no TTL)", ttl)
	}
}

func TestLargeEntriesStayOutOfRedis(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, redis.Options{MaxEntryBytes: 1024})
	now := time.Now()
	if err := db.PutCache(ctx, entry("t", "sha256:big", `"small"`, now, time.Hour)); err != nil {
		t.Fatal(err)
	}
	big := entry("t", "sha256:big", `"`+strings.Repeat("x", 2048)+`"`, now, time.Hour)
	if err := db.PutCache(ctx, big); err != nil {
		t.Fatalf("PutCache of a large entry = %v, want nil (kept out of Redis)", err)
	}
	// The older small entry is gone too: a stale answer must not outlive
	// its replacement.
	if _, err := db.GetCache(ctx, "t", "sha256:big", now); !groundhog.IsNotFound(err) {
		t.Fatalf("GetCache after a large Put = %v, want ENOTFOUND", err)
	}
	if db.Stats().TooLarge != 1 {
		t.Errorf("Stats().TooLarge = %d, want 1", db.Stats().TooLarge)
	}
}

func TestNotifierWakesOtherProcess(t *testing.T) {
	a := openTest(t, redis.Options{})
	b := openTest(t, redis.Options{Prefix: a.Prefix()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := wake.IdemNotifier{T: b}.Subscribe(ctx, "acme", "key-1")
	other := wake.IdemNotifier{T: b}.Subscribe(ctx, "acme", "key-2")
	wake.IdemNotifier{T: a}.Notify("acme", "key-1")
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("Subscribe on replica b was not woken by Notify on replica a")
	}
	select {
	case <-other:
		t.Error("a wake-up for key-1 woke the waiter of key-2")
	default:
	}
	cancel()
	if _, ok := <-woken; ok {
		// drain a possible buffered value, then it must be closed
		if _, ok := <-woken; ok {
			t.Error("subscription channel not closed after ctx ended")
		}
	}
}
