package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// roundTrips counts what pgx sends to the server and waits for: every
// query or command (BEGIN and COMMIT included), every statement prepared,
// every COPY. pg_stat_statements is not needed.
type roundTrips struct {
	mu  sync.Mutex
	sql []string
}

func (r *roundTrips) add(s string) {
	r.mu.Lock()
	r.sql = append(r.sql, strings.Join(strings.Fields(s), " "))
	r.mu.Unlock()
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	r.add("PREPARE " + d.SQL)
	return ctx
}
func (r *roundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// take returns the statements counted since the last take and resets.
func (r *roundTrips) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sql
	r.sql = nil
	return out
}

// TestRoundTripsPerIdempotentCall counts the PostgreSQL round trips of an
// idempotent call with a new key, as the gateway makes it: Service.Begin
// (claim) then Claim.Complete. The goal, asserted: 2 — one to claim, one to
// complete. Not counted here, by design: the gateway-key lookup (cached by
// the gateway for the key-cache TTL), the ledger row (batched by the ledger
// writer: one AppendLedger per batch of calls) and the wake-up publish
// (Redis PUBLISH with --cache redis; a NOTIFY only with --cache memory).
// Statements are warmed first: pgx prepares each statement once per
// connection, then reuses it.
func TestRoundTripsPerIdempotentCall(t *testing.T) {
	u := freshSchema(t)
	rt := &roundTrips{}
	db, err := open(ctx, u, func(c *pgxpool.Config) {
		c.ConnConfig.Tracer = rt
		c.MaxConns = 1 // one connection: warmed statements are the ones reused
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Lease renewals (every Lease/3) would add round trips: none is due
	// within this test's calls.
	svc := idempotency.New(idempotency.Options{Store: db, Lease: time.Hour, Retention: 2 * time.Hour})
	call := func(key string) {
		t.Helper()
		claim, _, outcome, err := svc.Begin(ctx, "acme", key, "sha256:"+key)
		if err != nil || outcome != groundhog.BeginClaimed {
			t.Fatalf("Begin %s: %v, %v", key, outcome, err)
		}
		if err := claim.Complete(ctx, &groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(`{}`)}); err != nil {
			t.Fatalf("Complete %s: %v", key, err)
		}
	}
	call("warm-up")
	rt.take()

	const calls = 20
	for i := range calls {
		call(fmt.Sprintf("key-%d", i))
	}
	got := rt.take()
	if len(got) != 2*calls {
		t.Errorf("%d round trips for %d idempotent calls with new keys, want %d (claim + complete):\n%s",
			len(got), calls, 2*calls, strings.Join(got[:min(len(got), 8)], "\n"))
	}
	// A retry of a completed key: the first one reads the record (one round
	// trip, no transaction); later ones are served from the Service's memory.
	for i, want := range []int{1, 0} {
		if _, _, outcome, err := svc.Begin(ctx, "acme", "key-3", "sha256:key-3"); err != nil || outcome != groundhog.BeginDone {
			t.Fatalf("replay %d: %v, %v", i, outcome, err)
		}
		if got := rt.take(); len(got) != want {
			t.Errorf("replay %d cost %d round trips, want %d: %v", i, len(got), want, got)
		}
	}
	// A retry while the call runs (409 or Prefer: wait) and one with another
	// payload (422) are one read each.
	claim, _, _, err := svc.Begin(ctx, "acme", "running", "sha256:running")
	if err != nil {
		t.Fatal(err)
	}
	rt.take()
	for _, tc := range []struct {
		hash string
		want groundhog.BeginOutcome
	}{{"sha256:running", groundhog.BeginInProgress}, {"sha256:other", groundhog.BeginMismatch}} {
		if _, _, outcome, err := svc.Begin(ctx, "acme", "running", tc.hash); err != nil || outcome != tc.want {
			t.Fatalf("Begin on a running key: %v, %v; want %v", outcome, err, tc.want)
		}
		if got := rt.take(); len(got) != 1 {
			t.Errorf("Begin (%s) cost %d round trips, want 1: %v", tc.want, len(got), got)
		}
	}
	if err := claim.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rt.take()
	// A takeover changes an existing record: it runs under the row lock
	// (the read, then BEGIN, SELECT … FOR UPDATE, UPDATE, COMMIT).
	claim, _, outcome, err := svc.Begin(ctx, "acme", "running", "sha256:running")
	if err != nil || outcome != groundhog.BeginClaimed {
		t.Fatalf("Begin after Release: %v, %v", outcome, err)
	}
	defer claim.Release(ctx)
	if got := rt.take(); len(got) < 5 || got[1] != "begin" || !strings.HasSuffix(got[2], "FOR UPDATE") {
		t.Errorf("takeover round trips = %v, want the read then a locking transaction", got)
	}
}

// TestRoundTripsWithListenNotify: with the wake-ups on LISTEN/NOTIFY (no
// Redis), completing a record wakes another replica's waiter and still costs
// one round trip: the NOTIFY rides in the completing UPDATE.
func TestRoundTripsWithListenNotify(t *testing.T) {
	u := freshSchema(t)
	rt := &roundTrips{}
	a, err := open(ctx, u, func(c *pgxpool.Config) { c.ConnConfig.Tracer = rt; c.MaxConns = 1 })
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, u) // another replica
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wa, err := a.Listen(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Close()
	wb, err := b.Listen(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	svc := idempotency.New(idempotency.Options{Store: a, Lease: time.Hour, Retention: 2 * time.Hour, Notifier: wa.IdemNotifier()})
	other := wb.IdemNotifier()

	// A tenant name with a two-byte character: the topic counts bytes.
	const tenant = "acmé"
	for i, key := range []string{"warm-up", "second"} {
		woken := other.Subscribe(ctx, tenant, key)
		rt.take()
		claim, _, outcome, err := svc.Begin(ctx, tenant, key, "sha256:"+key)
		if err != nil || outcome != groundhog.BeginClaimed {
			t.Fatalf("Begin: %v, %v", outcome, err)
		}
		if err := claim.Complete(ctx, &groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if got := rt.take(); i > 0 && len(got) != 2 {
			t.Errorf("%d round trips for claim + complete + wake-up, want 2: %v", len(got), got)
		}
		<-woken // the other replica's waiter is woken (the test times out otherwise)
	}
	// A stale completion changes nothing: the fencing still decides.
	claim, _, _, err := svc.Begin(ctx, tenant, "stale", "sha256:stale")
	if err != nil {
		t.Fatal(err)
	}
	op := claim.Op()
	if err := a.Complete(ctx, tenant, op.ID, op.FencingToken+1, &groundhog.Response{Status: 200}, time.Now()); groundhog.ErrorCode(err) != groundhog.ESTALE {
		t.Errorf("Complete with a wrong token: %v, want ESTALE", err)
	}
	if err := claim.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
