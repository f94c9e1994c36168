package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// Test 1: 100 concurrent first requests with one key → exactly one claim;
// every other request is told "in progress" or, once the winner has
// completed, gets its result.
func TestConcurrentBeginOneClaim(t *testing.T) {
	e := newEnv(t)
	const n = 100
	winner := resp(200, `{"winner":true}`)
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		mu      sync.Mutex
		counts  = map[groundhog.BeginOutcome]int{}
		replays []*groundhog.Response
	)
	for range n {
		wg.Go(func() {
			<-start
			claim, op, outcome, err := e.svc.Begin(e.ctx, tenantA, "k", hash1)
			if err != nil {
				t.Error(err)
				return
			}
			if claim != nil {
				// The single "upstream call": finish at once so that later
				// Begins see the replay.
				if err := claim.Complete(e.ctx, winner); err != nil {
					t.Error(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			counts[outcome]++
			if outcome == groundhog.BeginDone {
				replays = append(replays, op.Result)
			}
		})
	}
	close(start)
	wg.Wait()
	if counts[groundhog.BeginClaimed] != 1 {
		t.Fatalf("claims = %d, want exactly 1 (outcomes %v)", counts[groundhog.BeginClaimed], counts)
	}
	if got := counts[groundhog.BeginInProgress] + counts[groundhog.BeginDone]; got != n-1 {
		t.Fatalf("in progress + done = %d, want %d (outcomes %v)", got, n-1, counts)
	}
	for _, r := range replays {
		sameResponse(t, r, winner)
	}
	op := e.record(tenantA, "k")
	if op.Status != groundhog.StatusCompleted || op.Attempts != 1 || op.FencingToken != 1 {
		t.Fatalf("record = %+v, want completed after 1 attempt with token 1", op)
	}
	t.Logf("outcomes: %v", counts)
}

// Test 2: the same key with another hash → mismatch, and neither a
// completed result nor a live lease is touched.
func TestMismatchChangesNothing(t *testing.T) {
	t.Run("completed", func(t *testing.T) {
		e := newEnv(t)
		claim, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
		if err := claim.Complete(e.ctx, resp(200, `{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		before := e.record(tenantA, "k")
		_, op := e.begin(tenantA, "k", hash2, groundhog.BeginMismatch)
		if op.RequestHash != hash1 {
			t.Fatalf("mismatch op hash = %s", op.RequestHash)
		}
		e.unchanged(tenantA, "k", before)
		_, op = e.begin(tenantA, "k", hash1, groundhog.BeginDone)
		sameResponse(t, op.Result, resp(200, `{"n":1}`))
	})
	t.Run("live lease", func(t *testing.T) {
		e := newEnv(t)
		claim, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
		before := e.record(tenantA, "k")
		e.clock.Advance(lease / 6) // before the first renewal tick
		e.begin(tenantA, "k", hash2, groundhog.BeginMismatch)
		e.unchanged(tenantA, "k", before)
		if err := claim.Complete(e.ctx, resp(200, `{"n":1}`)); err != nil {
			t.Fatalf("the lease holder cannot complete after a mismatch: %v", err)
		}
	})
}

// Test 3: the same key under two tenants → two independent claims.
func TestTenantsIndependent(t *testing.T) {
	e := newEnv(t)
	ca, opA := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	cb, opB := e.begin(tenantB, "k", hash2, groundhog.BeginClaimed)
	if opA.ID == opB.ID || opA.FencingToken != 1 || opB.FencingToken != 1 {
		t.Fatalf("records not independent: %+v / %+v", opA, opB)
	}
	if err := ca.Complete(e.ctx, resp(200, `"a"`)); err != nil {
		t.Fatal(err)
	}
	e.begin(tenantB, "k", hash2, groundhog.BeginInProgress)
	if err := cb.Complete(e.ctx, resp(200, `"b"`)); err != nil {
		t.Fatal(err)
	}
	_, ra := e.begin(tenantA, "k", hash1, groundhog.BeginDone)
	_, rb := e.begin(tenantB, "k", hash2, groundhog.BeginDone)
	sameResponse(t, ra.Result, resp(200, `"a"`))
	sameResponse(t, rb.Result, resp(200, `"b"`))
	if _, err := e.svc.Get(e.ctx, tenantB, opA.ID); !groundhog.IsNotFound(err) {
		t.Fatalf("tenant B reads tenant A's record: %v", err)
	}
	if idempotency.DownstreamKey(opA) == idempotency.DownstreamKey(opB) {
		t.Fatal("two tenants share a downstream key")
	}
}

// Test 5: a crashed worker's lease expires and the next request takes over
// with token+1 — also when the lease expires at the very moment of the
// request.
func TestLeaseExpiryTakeover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  groundhog.BeginOutcome
	}{
		{"1ns before expiry", lease - time.Nanosecond, groundhog.BeginInProgress},
		{"at expiry", lease, groundhog.BeginClaimed},
		{"after expiry", lease + time.Second, groundhog.BeginClaimed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, opA := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
			a.Abandon() // the worker crashed: nobody renews
			e.clock.Advance(tc.after)
			b, opB := e.begin(tenantA, "k", hash1, tc.want)
			if tc.want == groundhog.BeginInProgress {
				if got := e.svc.RetryAfter(opB); got != 1 {
					t.Fatalf("Retry-After = %d, want 1", got)
				}
				return
			}
			if opB.ID != opA.ID || opB.FencingToken != 2 || opB.Attempts != 2 || b.Attempt() != 2 ||
				opB.LeaseOwner == opA.LeaseOwner || !opB.LeaseExpiresAt.Equal(e.clock.Now().Add(lease)) {
				t.Fatalf("takeover record = %+v (was %+v)", opB, opA)
			}
			if idempotency.DownstreamKey(opA) != idempotency.DownstreamKey(opB) {
				t.Fatal("a takeover changed the downstream key")
			}
			wantCode(t, a.Complete(e.ctx, resp(200, `"a"`)), groundhog.ESTALE)
			if err := b.Complete(e.ctx, resp(200, `"b"`)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Test 6: A (token n) pauses; B takes over (n+1) and completes; A's commit
// returns ESTALE and changes nothing; the replay is B's result.
func TestStaleCommit(t *testing.T) {
	e := newEnv(t)
	a, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	a.Abandon() // paused: its renewals stop with it
	e.clock.Advance(lease)
	b, opB := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	if err := b.Complete(e.ctx, resp(200, `"b"`)); err != nil {
		t.Fatal(err)
	}
	before := e.record(tenantA, "k")
	wantCode(t, a.Complete(e.ctx, resp(200, `"a"`)), groundhog.ESTALE)
	select {
	case <-a.Lost():
	default:
		t.Fatal("a stale Complete did not mark the claim lost")
	}
	e.unchanged(tenantA, "k", before)
	winner, err := e.svc.Get(e.ctx, tenantA, opB.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameResponse(t, winner.Result, resp(200, `"b"`))
	_, op := e.begin(tenantA, "k", hash1, groundhog.BeginDone)
	sameResponse(t, op.Result, resp(200, `"b"`))
	if op.FencingToken != 2 {
		t.Fatalf("token = %d, want 2", op.FencingToken)
	}
}

// Test 6 through Do: the attempt whose record was taken over while its
// function ran returns the winner's result as a replay.
func TestDoStaleCommitReplaysWinner(t *testing.T) {
	e := newEnv(t)
	running := make(chan *groundhog.Operation)
	proceed := make(chan struct{})
	type result struct {
		resp     *groundhog.Response
		replayed bool
		err      error
	}
	done := make(chan result)
	go func() {
		r, replayed, err := e.svc.Do(e.ctx, tenantA, "k", hash1, func(ctx context.Context, op *groundhog.Operation) (*groundhog.Response, error) {
			running <- op
			<-proceed
			return resp(200, `"a"`), nil
		})
		done <- result{r, replayed, err}
	}()
	opA := recv(t, running)
	// An operator (or the tool API) releases A's record and B claims and
	// completes it while A's function still runs.
	if err := e.db.Release(e.ctx, tenantA, opA.ID, opA.FencingToken, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	b, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	if err := b.Complete(e.ctx, resp(200, `"b"`)); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	r := recv(t, done)
	if r.err != nil || !r.replayed {
		t.Fatalf("Do = replayed %v, err %v; want the winner's replay", r.replayed, r.err)
	}
	sameResponse(t, r.resp, resp(200, `"b"`))
}

// Test 7: after a takeover the old worker's fail, renew and release change
// nothing.
func TestStaleWritesAfterTakeover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, c *idempotency.Claim) error
	}{
		{"fail", func(ctx context.Context, c *idempotency.Claim) error { return c.Fail(ctx, resp(400, `"a"`)) }},
		{"renew", func(ctx context.Context, c *idempotency.Claim) error { return c.Renew(ctx) }},
		{"release", func(ctx context.Context, c *idempotency.Claim) error { return c.Release(ctx) }},
		{"complete", func(ctx context.Context, c *idempotency.Claim) error { return c.Complete(ctx, resp(200, `"a"`)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
			a.Abandon()
			e.clock.Advance(lease + time.Second)
			b, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
			before := e.record(tenantA, "k")
			e.clock.Advance(time.Second)
			wantCode(t, tc.write(e.ctx, a), groundhog.ESTALE)
			e.unchanged(tenantA, "k", before)
			if err := b.Complete(e.ctx, resp(200, `"b"`)); err != nil {
				t.Fatalf("the current holder cannot complete: %v", err)
			}
		})
	}
}

// Test 8: a terminal failure is stored and replayed; a retryable one
// releases the record and the next request runs it exactly once.
func TestFailureClasses(t *testing.T) {
	t.Run("terminal failure replayed", func(t *testing.T) {
		e := newEnv(t)
		c, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
		bad := resp(400, `{"error":{"type":"invalid_request_error"}}`)
		if err := c.Fail(e.ctx, bad); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			_, op := e.begin(tenantA, "k", hash1, groundhog.BeginDone)
			if op.Status != groundhog.StatusFailed || op.Attempts != 1 {
				t.Fatalf("record = %+v", op)
			}
			sameResponse(t, op.Result, bad)
		}
	})
	t.Run("retryable failure released, then one claim", func(t *testing.T) {
		e := newEnv(t)
		c, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
		if err := c.Release(e.ctx); err != nil {
			t.Fatal(err)
		}
		if op := e.record(tenantA, "k"); op.Status != groundhog.StatusPending || op.LeaseOwner != "" {
			t.Fatalf("released record = %+v", op)
		}
		const n = 20
		claims := make(chan *idempotency.Claim, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				c, _, outcome, err := e.svc.Begin(e.ctx, tenantA, "k", hash1)
				if err != nil {
					t.Error(err)
					return
				}
				if outcome == groundhog.BeginClaimed {
					claims <- c
				} else if outcome != groundhog.BeginInProgress {
					t.Errorf("outcome %s", outcome)
				}
			})
		}
		wg.Wait()
		close(claims)
		if len(claims) != 1 {
			t.Fatalf("%d claims after a release, want 1", len(claims))
		}
		c2 := <-claims
		if c2.Attempt() != 2 || c2.Op().FencingToken != 2 {
			t.Fatalf("second claim = %+v", c2.Op())
		}
		if err := c2.Complete(e.ctx, resp(200, `"ok"`)); err != nil {
			t.Fatal(err)
		}
		e.begin(tenantA, "k", hash1, groundhog.BeginDone)
	})
}

// Test 8 through Do: fn runs again only after a retryable failure, and
// never after a terminal one or a success.
func TestDoFailureClasses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     *groundhog.Response
		firstErr  error
		wantCalls int // calls of fn over three Do
		wantFinal *groundhog.Response
	}{
		{"success", resp(200, `"ok"`), nil, 1, resp(200, `"ok"`)},
		{"terminal 400", resp(400, `"no"`), nil, 1, resp(400, `"no"`)},
		{"retryable 503", resp(503, `"down"`), nil, 2, resp(200, `"ok"`)},
		{"retryable 429", resp(429, `"slow down"`), nil, 2, resp(200, `"ok"`)},
		{"retryable error", nil, errBoom, 2, resp(200, `"ok"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			calls := 0
			fn := func(ctx context.Context, op *groundhog.Operation) (*groundhog.Response, error) {
				calls++
				if op.Attempts != calls {
					t.Errorf("call %d sees attempt %d", calls, op.Attempts)
				}
				if calls == 1 {
					return tc.first, tc.firstErr
				}
				return resp(200, `"ok"`), nil
			}
			r, replayed, err := e.svc.Do(e.ctx, tenantA, "k", hash1, fn)
			if err != tc.firstErr || replayed {
				t.Fatalf("first Do: replayed %v, err %v", replayed, err)
			}
			if tc.first != nil {
				sameResponse(t, r, tc.first)
			}
			var last *groundhog.Response
			for range 2 {
				if last, _, err = e.svc.Do(e.ctx, tenantA, "k", hash1, fn); err != nil {
					t.Fatal(err)
				}
			}
			if calls != tc.wantCalls {
				t.Fatalf("fn ran %d times, want %d", calls, tc.wantCalls)
			}
			sameResponse(t, last, tc.wantFinal)
		})
	}
}

func TestDoConflictAndMismatch(t *testing.T) {
	e := newEnv(t)
	c, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	fn := func(context.Context, *groundhog.Operation) (*groundhog.Response, error) {
		t.Fatal("fn ran")
		return nil, nil
	}
	_, _, err := e.svc.Do(e.ctx, tenantA, "k", hash1, fn)
	wantCode(t, err, groundhog.ECONFLICT)
	_, _, err = e.svc.Do(e.ctx, tenantA, "k", hash2, fn)
	wantCode(t, err, groundhog.EMISMATCH)
	c.Abandon()
}

func TestDoPanicReleases(t *testing.T) {
	e := newEnv(t)
	func() {
		defer func() {
			if p := recover(); p != "tool exploded" {
				t.Fatalf("recovered %v", p)
			}
		}()
		e.svc.Do(e.ctx, tenantA, "k", hash1, func(context.Context, *groundhog.Operation) (*groundhog.Response, error) {
			panic("tool exploded")
		})
	}()
	if op := e.record(tenantA, "k"); op.Status != groundhog.StatusPending {
		t.Fatalf("after a panic the record is %s, want pending", op.Status)
	}
}

// Test 9: retention boundaries: just before ExpiresAt the result is
// replayed; at and after it the key starts a new execution, and the fencing
// token keeps counting.
func TestRetentionBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  groundhog.BeginOutcome
	}{
		{"1ns before", retention - time.Nanosecond, groundhog.BeginDone},
		{"at", retention, groundhog.BeginClaimed},
		{"1s after", retention + time.Second, groundhog.BeginClaimed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c, first := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
			if err := c.Complete(e.ctx, resp(200, `"first"`)); err != nil {
				t.Fatal(err)
			}
			if !first.ExpiresAt.Equal(t0.Add(retention)) {
				t.Fatalf("ExpiresAt = %v, want %v", first.ExpiresAt, t0.Add(retention))
			}
			e.clock.Set(t0.Add(tc.after))
			c2, op := e.begin(tenantA, "k", hash1, tc.want)
			if tc.want == groundhog.BeginDone {
				sameResponse(t, op.Result, resp(200, `"first"`))
				return
			}
			if op.ID == first.ID || op.FencingToken != 2 || op.Attempts != 1 || op.Result != nil {
				t.Fatalf("new execution record = %+v (first %+v)", op, first)
			}
			c2.Abandon()
		})
	}
}

// Test 10: a store that cannot be reached → EUNAVAILABLE, no claim, and
// Do does not run its function.
func TestStoreUnavailable(t *testing.T) {
	e := newEnv(t)
	c, op := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	c.Abandon()
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	claim, _, _, err := e.svc.Begin(e.ctx, tenantA, "k2", hash1)
	wantCode(t, err, groundhog.EUNAVAILABLE)
	if claim != nil {
		t.Fatal("a claim without a store")
	}
	_, _, err = e.svc.Do(e.ctx, tenantA, "k3", hash1, func(context.Context, *groundhog.Operation) (*groundhog.Response, error) {
		t.Fatal("fn ran without a record")
		return nil, nil
	})
	wantCode(t, err, groundhog.EUNAVAILABLE)
	_, err = e.svc.Wait(e.ctx, tenantA, "k", time.Second)
	wantCode(t, err, groundhog.EUNAVAILABLE)
	_, err = e.svc.Get(e.ctx, tenantA, op.ID)
	wantCode(t, err, groundhog.EUNAVAILABLE)
	wantCode(t, c.Complete(e.ctx, resp(200, `"x"`)), groundhog.EUNAVAILABLE)
}

func TestBeginValidates(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		key, hash string
		ok        bool
	}{
		{"k", hash1, true},
		{strings.Repeat("x", 255), hash1, true},
		{"!~", hash1, true},
		{"", hash1, false},
		{strings.Repeat("x", 256), hash1, false},
		{"with space", hash1, false},
		{"tab\t", hash1, false},
		{"caf\u00e9", hash1, false},
		{"del\x7f", hash1, false},
		{"k", "", false},
	} {
		_, _, _, err := e.svc.Begin(e.ctx, tenantA, tc.key, tc.hash)
		if tc.ok && err != nil || !tc.ok && groundhog.ErrorCode(err) != groundhog.EINVALID {
			t.Errorf("Begin(key %q, hash %q) = %v", tc.key, tc.hash, err)
		}
	}
}

// A client that hung up must not leave its record running: Complete
// writes with a context of its own.
func TestCompleteSurvivesCancelledContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	c, _, _, err := e.svc.Begin(ctx, tenantA, "k", hash1)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := c.Complete(ctx, resp(200, `"ok"`)); err != nil {
		t.Fatal(err)
	}
	if op := e.record(tenantA, "k"); op.Status != groundhog.StatusCompleted {
		t.Fatalf("status %s", op.Status)
	}
}

// The renewal goroutine keeps a long claim alive across several lease
// periods: nobody can take it over while its holder lives.
func TestRenewalKeepsClaimAlive(t *testing.T) {
	e := newEnv(t)
	c, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	for i := 1; i <= 9; i++ { // three lease periods
		e.clock.waitTimers(t, lease/3, 1)
		e.clock.Advance(lease / 3)
		if err := recv(t, e.store.renewed); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	now := e.clock.Now()
	if now.Sub(t0) != 3*lease {
		t.Fatalf("clock at %v", now.Sub(t0))
	}
	_, op := e.begin(tenantA, "k", hash1, groundhog.BeginInProgress)
	if !op.LeaseExpiresAt.Equal(now.Add(lease)) || op.FencingToken != 1 {
		t.Fatalf("record after renewals = %+v", op)
	}
	if err := c.Complete(e.ctx, resp(200, `"ok"`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Lost():
		t.Fatal("a renewed claim reports lost")
	default:
	}
}

// A renewal that finds the token superseded closes Lost.
func TestRenewalDetectsLoss(t *testing.T) {
	e := newEnv(t)
	a, opA := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	// Someone holding A's token (the tool API, an operator) releases it,
	// and B claims the record.
	if err := e.db.Release(e.ctx, tenantA, opA.ID, opA.FencingToken, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	b, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	e.clock.waitTimers(t, lease/3, 2) // both renewal goroutines wait
	e.clock.Advance(lease / 3)
	recv(t, a.Lost())
	wantCode(t, a.Complete(e.ctx, resp(200, `"a"`)), groundhog.ESTALE)
	if err := b.Complete(e.ctx, resp(200, `"b"`)); err != nil {
		t.Fatal(err)
	}
}

// Wait wakes on an in-process completion, reading the store once before
// and once after, and never polls while the (fake) clock stands still.
func TestWaitWakesOnCompletion(t *testing.T) {
	for _, finish := range []string{"complete", "fail", "release"} {
		t.Run(finish, func(t *testing.T) {
			e := newEnv(t)
			c, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
			type result struct {
				op  *groundhog.Operation
				err error
			}
			done := make(chan result)
			reads0 := e.store.reads.Load()
			go func() {
				op, err := e.svc.Wait(e.ctx, tenantA, "k", 20*time.Second)
				done <- result{op, err}
			}()
			e.clock.waitTimers(t, 50*time.Millisecond, 1) // Wait is blocked on its first poll
			var want groundhog.OperationStatus
			var err error
			switch finish {
			case "complete":
				err, want = c.Complete(e.ctx, resp(200, `"ok"`)), groundhog.StatusCompleted
			case "fail":
				err, want = c.Fail(e.ctx, resp(400, `"no"`)), groundhog.StatusFailed
			case "release":
				err, want = c.Release(e.ctx), groundhog.StatusPending
			}
			if err != nil {
				t.Fatal(err)
			}
			r := recv(t, done)
			if r.err != nil || r.op == nil || r.op.Status != want {
				t.Fatalf("Wait = %+v, %v; want status %s", r.op, r.err, want)
			}
			if reads := e.store.reads.Load() - reads0; reads != 2 {
				t.Fatalf("Wait read the store %d times, want 2", reads)
			}
		})
	}
}

// Wait returns when the lease of a dead worker expires, so the caller can
// take over.
func TestWaitReturnsOnLeaseExpiry(t *testing.T) {
	e := newEnv(t)
	a, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	a.Abandon()
	done := make(chan *groundhog.Operation)
	go func() {
		op, err := e.svc.Wait(e.ctx, tenantA, "k", time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- op
	}()
	e.clock.waitTimers(t, 50*time.Millisecond, 1)
	e.clock.Advance(lease)
	op := recv(t, done)
	if op == nil || op.Status != groundhog.StatusRunning || op.LeaseExpiresAt.After(e.clock.Now()) {
		t.Fatalf("Wait = %+v, want the running record with its lease expired", op)
	}
	b, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	if b.Op().FencingToken != 2 {
		t.Fatalf("takeover token %d", b.Op().FencingToken)
	}
	b.Abandon()
}

// Wait gives up after maxWait (on the service clock) and returns the
// running record; with ctx cancelled it returns at once.
func TestWaitLimits(t *testing.T) {
	e := newEnv(t)
	c, _ := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	defer c.Abandon()
	done := make(chan *groundhog.Operation)
	go func() {
		op, err := e.svc.Wait(e.ctx, tenantA, "k", 40*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		done <- op
	}()
	e.clock.waitTimers(t, 40*time.Millisecond, 1)
	e.clock.Advance(40 * time.Millisecond)
	if op := recv(t, done); op == nil || op.Status != groundhog.StatusRunning {
		t.Fatalf("Wait after maxWait = %+v", op)
	}

	ctx, cancel := context.WithCancel(e.ctx)
	errc := make(chan error)
	go func() {
		_, err := e.svc.Wait(ctx, tenantA, "k", time.Minute)
		errc <- err
	}()
	e.clock.waitTimers(t, 50*time.Millisecond, 1)
	cancel()
	if err := recv(t, errc); err != context.Canceled {
		t.Fatalf("Wait with ctx cancelled = %v", err)
	}

	op, err := e.svc.Wait(e.ctx, tenantA, "no-such-key", time.Minute)
	if op != nil || err != nil {
		t.Fatalf("Wait without a record = %v, %v; want nil, nil", op, err)
	}
}

// fakeNotifier stands in for a cross-replica notifier (Redis pub/sub).
type fakeNotifier struct {
	mu   sync.Mutex
	subs map[string][]chan struct{}
}

func (n *fakeNotifier) Notify(tenant, key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.subs[tenant+"\x00"+key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (n *fakeNotifier) Subscribe(ctx context.Context, tenant, key string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.subs[tenant+"\x00"+key] = append(n.subs[tenant+"\x00"+key], ch)
	return ch
}

// A completion in another process (here: written straight to the store)
// wakes the waiter through the Notifier.
func TestWaitWakesOnNotifier(t *testing.T) {
	e := newEnv(t)
	n := &fakeNotifier{subs: map[string][]chan struct{}{}}
	svc := idempotency.New(idempotency.Options{Store: e.store, Clock: e.clock, Lease: lease, Notifier: n})
	c, op := e.begin(tenantA, "k", hash1, groundhog.BeginClaimed)
	c.Abandon() // it completes "in another process" below
	done := make(chan *groundhog.Operation)
	go func() {
		op, err := svc.Wait(e.ctx, tenantA, "k", time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- op
	}()
	e.clock.waitTimers(t, 50*time.Millisecond, 1)
	if err := e.db.Complete(e.ctx, tenantA, op.ID, op.FencingToken, resp(200, `"remote"`), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.Notify(tenantA, "k")
	if got := recv(t, done); got == nil || got.Status != groundhog.StatusCompleted {
		t.Fatalf("Wait = %+v", got)
	}
}

func TestPurgeLoop(t *testing.T) {
	e := newEnv(t)
	c, _ := e.begin(tenantA, "old", hash1, groundhog.BeginClaimed)
	if err := c.Complete(e.ctx, resp(200, `"x"`)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(retention / 2)
	c2, _ := e.begin(tenantA, "young", hash1, groundhog.BeginClaimed)
	c2.Abandon()
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	go func() {
		e.svc.PurgeLoop(ctx, time.Hour)
		close(stopped)
	}()
	e.clock.waitTimers(t, time.Hour, 1) // first round done: nothing expired yet
	if _, err := e.db.GetOperationByKey(e.ctx, tenantA, "old"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(retention / 2) // "old" expires exactly now
	e.clock.waitTimers(t, time.Hour, 1)
	if _, err := e.db.GetOperationByKey(e.ctx, tenantA, "old"); !groundhog.IsNotFound(err) {
		t.Fatalf("expired record not purged: %v", err)
	}
	e.record(tenantA, "young")
	cancel()
	recv(t, stopped)
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    error
		want   idempotency.Disposition
	}{
		{200, nil, idempotency.DispositionComplete},
		{201, nil, idempotency.DispositionComplete},
		{299, nil, idempotency.DispositionComplete},
		{400, nil, idempotency.DispositionFail},
		{401, nil, idempotency.DispositionRelease}, // the provider refused our credentials, not the request
		{403, nil, idempotency.DispositionRelease},
		{404, nil, idempotency.DispositionFail},
		{422, nil, idempotency.DispositionFail},
		{408, nil, idempotency.DispositionRelease},
		{429, nil, idempotency.DispositionRelease},
		{500, nil, idempotency.DispositionRelease},
		{502, nil, idempotency.DispositionRelease},
		{503, nil, idempotency.DispositionRelease},
		{504, nil, idempotency.DispositionRelease},
		{529, nil, idempotency.DispositionRelease}, // Anthropic "overloaded"
		{302, nil, idempotency.DispositionRelease},
		{200, errBoom, idempotency.DispositionRelease},                  // a stream broken after a 200 header
		{200, context.DeadlineExceeded, idempotency.DispositionRelease}, // timeout
		{400, errBoom, idempotency.DispositionRelease},
		{0, nil, idempotency.DispositionRelease}, // no response at all
	} {
		var r *groundhog.Response
		if tc.status != 0 {
			r = resp(tc.status, `{}`)
		}
		if got := idempotency.Classify(r, tc.err); got != tc.want {
			t.Errorf("Classify(%d, %v) = %v, want %v", tc.status, tc.err, got, tc.want)
		}
	}
}

func TestDownstreamKey(t *testing.T) {
	base := &groundhog.Operation{ID: "id1", Tenant: "t", Key: "k", FencingToken: 1, Attempts: 1}
	k := idempotency.DownstreamKey(base)
	if !strings.HasPrefix(k, "gh_") || len(k) != 43 {
		t.Fatalf("key %q", k)
	}
	same := *base
	same.FencingToken, same.Attempts = 7, 3
	if idempotency.DownstreamKey(&same) != k {
		t.Fatal("the fencing token or attempt changes the downstream key")
	}
	for _, other := range []groundhog.Operation{
		{ID: "id2", Tenant: "t", Key: "k"},
		{ID: "id1", Tenant: "u", Key: "k"},
		{ID: "id1", Tenant: "t", Key: "k2"},
		{ID: "1", Tenant: "t", Key: "kid"}, // framing: no ambiguity from concatenation
	} {
		if idempotency.DownstreamKey(&other) == k {
			t.Errorf("%+v shares the downstream key of %+v", other, base)
		}
	}
}

func TestDispositionString(t *testing.T) {
	got := fmt.Sprint(idempotency.DispositionComplete, idempotency.DispositionFail, idempotency.DispositionRelease)
	if got != "complete fail release" {
		t.Fatal(got)
	}
}
