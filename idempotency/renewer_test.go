package idempotency_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// renewLog wraps a store and reports every Renew (which record, its
// result) on a channel, without changing any behaviour.
type renewLog struct {
	groundhog.OperationStore
	renews chan renewCall
}

type renewCall struct {
	id  string
	err error
}

func (s *renewLog) Renew(ctx context.Context, tenant, id string, token int64, until time.Time) error {
	err := s.OperationStore.Renew(ctx, tenant, id, token, until)
	s.renews <- renewCall{id, err}
	return err
}

// renewEnv is a Service with lease l over a real SQLite file and a fake
// clock, its store reporting every renewal.
func renewEnv(t *testing.T, l time.Duration, clock groundhog.Clock) (*idempotency.Service, *renewLog, *sqlite.DB) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "groundhog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := &renewLog{OperationStore: db, renews: make(chan renewCall, 1000)}
	svc := idempotency.New(idempotency.Options{Store: store, Clock: clock, Lease: l, Retention: retention, Owner: "test"})
	return svc, store, db
}

// Many claims made at different times, under two services with different
// leases, are each renewed every Lease/3 after their own claim — in due
// order, each at its due time and not before — and each renewal pushes the
// record's lease to the renewal time + Lease. A claim finished between two
// of its renewals is never renewed again; the others go on.
func TestRenewerRenewsEachClaimOnTime(t *testing.T) {
	for _, l := range []time.Duration{30 * time.Second, 3 * time.Second} {
		t.Run(l.String(), func(t *testing.T) {
			ctx := context.Background()
			clock := newFakeClock()
			svc, store, db := renewEnv(t, l, clock)
			every := l / 3
			type held struct {
				claim *idempotency.Claim
				due   time.Time
			}
			claims := map[string]*held{}
			// Claims at t0, t0+every/13, t0+2·every/13, …, all within the
			// first interval: each due at its own time, the renewals of
			// one claim interleaved with those of the others.
			const n = 12
			for i := range n {
				if i > 0 {
					clock.Advance(every / (n + 1))
				}
				c, op, outcome, err := svc.Begin(ctx, tenantA, "k"+strconv.Itoa(i), hash1)
				if err != nil || outcome != groundhog.BeginClaimed {
					t.Fatalf("Begin %d: %v %v", i, outcome, err)
				}
				claims[op.ID] = &held{c, clock.Now().Add(every)}
			}
			// The renewer sets its alarm when it wakes (at t0 for the
			// first claim): the pending timer's duration is the next due
			// time minus that.
			armedAt := t0
			var finished string
			for round := 0; round < 3*n; round++ {
				// The next claim due: the renewer must renew it, and only
				// it, when the clock reaches its due time.
				ids := make([]string, 0, len(claims))
				for id := range claims {
					ids = append(ids, id)
				}
				sort.Slice(ids, func(i, j int) bool { return claims[ids[i]].due.Before(claims[ids[j]].due) })
				next := claims[ids[0]]
				clock.waitTimers(t, next.due.Sub(armedAt), 1)
				clock.Set(next.due)
				armedAt = next.due
				got := recv(t, store.renews)
				if got.err != nil || got.id != ids[0] {
					t.Fatalf("round %d: renewed %s (%v), want %s", round, got.id, got.err, ids[0])
				}
				op, err := db.GetOperation(ctx, tenantA, got.id)
				if err != nil {
					t.Fatal(err)
				}
				if !op.LeaseExpiresAt.Equal(next.due.Add(l)) {
					t.Fatalf("round %d: lease until %v, want %v", round, op.LeaseExpiresAt, next.due.Add(l))
				}
				next.due = next.due.Add(every)
				if round == n/2 {
					// Finish a claim due later than the next one (the
					// renewer's alarm is set for that one): it is out of
					// the map, so a renewal of it fails the test above.
					finished = ids[2]
					if err := claims[finished].claim.Complete(ctx, resp(200, `"ok"`)); err != nil {
						t.Fatal(err)
					}
					delete(claims, finished)
				}
			}
			for id, h := range claims {
				if err := h.claim.Complete(ctx, resp(200, `"ok"`)); err != nil {
					t.Fatalf("complete %s: %v", id, err)
				}
			}
			// Nothing is renewed after its claim finished, however far the
			// clock goes.
			for range 3 {
				clock.Advance(l)
			}
			select {
			case got := <-store.renews:
				t.Fatalf("renewal of %s after every claim finished", got.id)
			default:
			}
		})
	}
}

// A renewal that finds the token superseded marks that claim lost (and
// stops renewing it), while the claims around it are renewed as before.
func TestRenewerLostAmongMany(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	svc, store, db := renewEnv(t, lease, clock)
	var cs []*idempotency.Claim
	for i := range 5 {
		c, _, _, err := svc.Begin(ctx, tenantA, "k"+strconv.Itoa(i), hash1)
		if err != nil || c == nil {
			t.Fatalf("Begin %d: %v", i, err)
		}
		cs = append(cs, c)
	}
	// Another worker takes claim 2's record over (its token released by
	// an operator, then claimed anew elsewhere).
	victim := cs[2].Op()
	if err := db.Release(ctx, tenantA, victim.ID, victim.FencingToken, clock.Now()); err != nil {
		t.Fatal(err)
	}
	other := idempotency.New(idempotency.Options{Store: db, Clock: clock, Lease: lease, Retention: retention, Owner: "other"})
	winner, _, _, err := other.Begin(ctx, tenantA, "k2", hash1)
	if err != nil || winner == nil {
		t.Fatalf("takeover: %v", err)
	}
	defer winner.Abandon()
	clock.waitTimers(t, lease/3, 1)
	clock.Advance(lease / 3)
	renewed := map[string]error{}
	for range 5 {
		got := recv(t, store.renews)
		renewed[got.id] = got.err
	}
	recv(t, cs[2].Lost())
	wantCode(t, renewed[victim.ID], groundhog.ESTALE)
	for i, c := range cs {
		if i == 2 {
			continue
		}
		if err := renewed[c.Op().ID]; err != nil {
			t.Fatalf("claim %d: renewal %v", i, err)
		}
		select {
		case <-c.Lost():
			t.Fatalf("claim %d reports lost", i)
		default:
		}
	}
	// The next round renews the four others, not the lost one. Two alarms
	// of Lease/3 must be pending: the other service's (its renewer re-arms
	// after renewing the winner) and this one's, which it sets only after
	// the last renewal of the first round returned — waiting for one could
	// see only the other's and advance the clock before this renewer armed.
	clock.waitTimers(t, lease/3, 2)
	clock.Advance(lease / 3)
	for range 4 {
		if got := recv(t, store.renews); got.id == victim.ID || got.err != nil {
			t.Fatalf("second round renewed %s (%v)", got.id, got.err)
		}
	}
	wantCode(t, cs[2].Complete(ctx, resp(200, `"late"`)), groundhog.ESTALE)
	for i, c := range cs {
		if i != 2 {
			if err := c.Complete(ctx, resp(200, `"ok"`)); err != nil {
				t.Fatalf("claim %d: %v", i, err)
			}
		}
	}
}

// With the wall clock (no AfterClock) the renewer's timer renews a held
// claim over and over, and once Complete has returned no renewal of it is
// ever made again (none is in flight either: Complete waits for it).
func TestRenewerWallClock(t *testing.T) {
	ctx := context.Background()
	svc, store, _ := renewEnv(t, 30*time.Millisecond, groundhog.SystemClock{})
	c, op, _, err := svc.Begin(ctx, tenantA, "k", hash1)
	if err != nil || c == nil {
		t.Fatalf("Begin: %v", err)
	}
	for range 3 {
		if got := recv(t, store.renews); got.id != op.ID || got.err != nil {
			t.Fatalf("renewed %s (%v)", got.id, got.err)
		}
	}
	if err := c.Complete(ctx, resp(200, `"ok"`)); err != nil {
		t.Fatal(err)
	}
	// A renewal that raced the Complete would have been reported before
	// Complete returned: drain it. After that none may come.
	for len(store.renews) > 0 {
		<-store.renews
	}
	select {
	case got := <-store.renews:
		// A renewal sent after Complete returned must be of a finished
		// claim: only possible if the renewer ignored the stop.
		t.Fatalf("renewal %v after Complete returned", got)
	case <-time.After(100 * time.Millisecond): // several renewal periods; not a timing figure
	}
}

// The renewer's goroutine exits once no claim is held: a thousand short
// calls leave no goroutine behind after one renewal interval.
func TestRenewerLeavesNoGoroutine(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	svc, store, _ := renewEnv(t, lease, clock)
	base := runtime.NumGoroutine()
	for i := range 1000 {
		c, _, _, err := svc.Begin(ctx, tenantA, "k"+strconv.Itoa(i), hash1)
		if err != nil || c == nil {
			t.Fatalf("Begin %d: %v", i, err)
		}
		if err := c.Complete(ctx, resp(200, `"ok"`)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(lease / 3) // the renewer wakes for the first claim, finds none, exits
	deadline := time.Now().Add(guard)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before the claims:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
	if len(store.renews) != 0 {
		t.Fatalf("%d renewals of claims that had finished", len(store.renews))
	}
}
