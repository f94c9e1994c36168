// Package storetest is the conformance suite of groundhog's store
// interfaces: one test body, run by every backend's tests (sqlite,
// postgres, …) against a fresh store, so all backends keep the same
// contract. It also holds the helpers that find the external services
// (PostgreSQL, Redis) used by backend tests.
//
// Time is never read from a clock here: every call gets an explicit now
// derived from a fixed instant with a nanosecond part, so boundaries
// ("expired when ExpiresAt == now") are tested exactly and a backend that
// rounds times fails.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
)

// Stores is everything a groundhog backend implements.
type Stores interface {
	groundhog.CacheStore
	groundhog.LedgerStore
	groundhog.OperationStore
	groundhog.KeyStore
}

// Run runs the whole conformance suite. open is called once per subtest and
// must return an empty store of its own, closed by open's own t.Cleanup.
//
// Beyond the doc comments of the interfaces, the suite requires that
// CreateKey refuses a duplicate hash with ECONFLICT and that
// ScanLedger treats a zero From or To as an open end.
func Run(t *testing.T, open func(t *testing.T) Stores) {
	for _, group := range [][]suiteTest{cacheTests, ledgerTests, operationTests, keyTests} {
		for _, st := range group {
			t.Run(st.name, func(t *testing.T) {
				st.fn(t, open(t))
			})
		}
	}
}

type suiteTest struct {
	name string
	fn   func(t *testing.T, s Stores)
}

// PostgresURL returns the URL in GROUNDHOG_TEST_POSTGRES. When it is unset
// the test is skipped, or fails if GROUNDHOG_TEST_REQUIRE_SERVICES=1 (CI
// that must not silently skip the PostgreSQL backend).
func PostgresURL(t testing.TB) string {
	t.Helper()
	return serviceURL(t, "GROUNDHOG_TEST_POSTGRES", "PostgreSQL")
}

// RedisURL returns the URL in GROUNDHOG_TEST_REDIS, skipping or failing
// like PostgresURL when it is unset.
func RedisURL(t testing.TB) string {
	t.Helper()
	return serviceURL(t, "GROUNDHOG_TEST_REDIS", "Redis")
}

func serviceURL(t testing.TB, env, what string) string {
	t.Helper()
	if u := os.Getenv(env); u != "" {
		return u
	}
	if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatalf("%s is required (GROUNDHOG_TEST_REQUIRE_SERVICES=1) but %s is not set", what, env)
	}
	t.Skipf("%s not set: skipping %s tests", env, what)
	return ""
}

// FreshPostgres creates a schema of its own for t in the PostgreSQL of
// PostgresURL (dropped with CASCADE when t ends) and returns the URL that
// puts it first on the search_path, so tests that share the server never
// see each other's tables. It skips or fails like PostgresURL.
func FreshPostgres(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "gh_test_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("cleanup: connect: %v", err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("cleanup: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
