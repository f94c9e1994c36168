package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/storetest"
)

var ctx = context.Background()

// freshSchema creates a schema of its own for t (see storetest.FreshPostgres).
func freshSchema(t testing.TB) string { return storetest.FreshPostgres(t) }

// twoReplicas opens two stores on one fresh schema, as two replicas of a
// deployment would; both are closed when the test ends.
func twoReplicas(t testing.TB) (a, b *DB) {
	t.Helper()
	u := freshSchema(t)
	for _, db := range []**DB{&a, &b} {
		var err error
		if *db, err = Open(ctx, u); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*db).Close() })
	}
	return a, b
}

func openTest(t testing.TB) *DB {
	t.Helper()
	u := freshSchema(t)
	db, err := Open(ctx, u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	// Registered after freshSchema's cleanup, so it runs before the drop.
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.PostgresURL(t) // skip (or fail) once, not in every subtest
	storetest.Run(t, func(t *testing.T) storetest.Stores { return openTest(t) })
}

// TestConcurrentOpenMigratesOnce opens several DBs on one new schema at
// once, as replicas starting together do: each migration is applied once
// and every Open succeeds.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	u := freshSchema(t)
	const replicas = 4
	var wg sync.WaitGroup
	dbs := make([]*DB, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			dbs[i], errs[i] = Open(ctx, u)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: Open: %v", i, err)
		}
		defer dbs[i].Close()
	}
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := dbs[0].pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(migs) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(migs))
	}
	// Reopening applies nothing and keeps the data.
	_, k := groundhog.NewAPIKey("acme", time.Now())
	if err := dbs[0].CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, u)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer again.Close()
	if tenant, err := again.TenantForKey(ctx, k.Hash); err != nil || tenant != "acme" {
		t.Errorf("after reopen TenantForKey = %q, %v", tenant, err)
	}
}

func TestClosedDBIsUnavailable(t *testing.T) {
	db := openTest(t)
	db.Close()
	now := time.Now()
	for name, call := range map[string]func() error{
		"Ping":     func() error { return db.Ping(ctx) },
		"GetCache": func() error { _, err := db.GetCache(ctx, "t", "h", now); return err },
		"Begin": func() error {
			_, _, err := db.Begin(ctx, groundhog.BeginParams{Tenant: "t", Key: "k", Now: now, Lease: time.Minute})
			return err
		},
		"AppendLedger": func() error { return db.AppendLedger(ctx, []groundhog.LedgerEntry{{ID: "x", Time: now}}) },
		"CountKeys":    func() error { _, err := db.CountKeys(ctx); return err },
	} {
		if code := groundhog.ErrorCode(call()); code != groundhog.EUNAVAILABLE {
			t.Errorf("%s on a closed DB: code %q, want %q", name, code, groundhog.EUNAVAILABLE)
		}
	}
}

func TestUnreachableServerIsUnavailable(t *testing.T) {
	// Port 1 on localhost refuses connections: no server needed.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := Open(cctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if code := groundhog.ErrorCode(err); code != groundhog.EUNAVAILABLE {
		t.Errorf("Open of an unreachable server: %v (code %q), want %q", err, code, groundhog.EUNAVAILABLE)
	}
	if _, err := Open(ctx, "postgres://%zz"); groundhog.ErrorCode(err) != groundhog.EINVALID {
		t.Errorf("Open of a malformed URL: %v, want EINVALID", err)
	}
}

func TestMapErr(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, groundhog.EUNAVAILABLE},
		{"too many connections", &pgconn.PgError{Code: "53300"}, groundhog.EUNAVAILABLE},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, groundhog.EUNAVAILABLE},
		{"syntax error", &pgconn.PgError{Code: "42601"}, groundhog.EINTERNAL},
		{"unique violation", &pgconn.PgError{Code: "23505"}, groundhog.EINTERNAL},
		{"eof", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), groundhog.EUNAVAILABLE},
		{"deadline", context.DeadlineExceeded, groundhog.EUNAVAILABLE},
		{"closed pool", errors.New("closed pool"), groundhog.EUNAVAILABLE},
		{"coded kept", groundhog.Errorf(groundhog.ESTALE, "x"), groundhog.ESTALE},
		{"other", errors.New("cannot scan"), groundhog.EINTERNAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mapErr(tc.err)
			if got := groundhog.ErrorCode(err); got != tc.want {
				t.Errorf("code %q, want %q", got, tc.want)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("mapErr lost the cause: %v", err)
			}
		})
	}
}

// TestBeginAcrossReplicas races Begin on one key through two pools (two
// replicas) on the same schema: exactly one claims.
func TestBeginAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t)
	const n = 40
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		outcomes = make([]groundhog.BeginOutcome, n)
		errs     = make([]error, n)
	)
	for i := range n {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, outcomes[i], errs[i] = db.Begin(ctx, groundhog.BeginParams{Tenant: "t", Key: "k", RequestHash: "h",
				Owner: fmt.Sprint(i), Lease: time.Minute, Retention: time.Hour, Now: now})
		}()
	}
	close(start)
	wg.Wait()
	claimed := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Begin %d: %v", i, errs[i])
		}
		if outcomes[i] == groundhog.BeginClaimed {
			claimed++
		}
	}
	if claimed != 1 {
		t.Errorf("%d claimed, want 1", claimed)
	}
}
