package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

var operationTests = []suiteTest{
	{"Operations/BeginStateMachine", testBeginStateMachine},
	{"Operations/StaleWritesAfterTakeover", testStaleAfterTakeover},
	{"Operations/FencedWritesNeedRunning", testFencedNeedRunning},
	{"Operations/FencedWritesUnknownRecord", testFencedUnknown},
	{"Operations/CompleteThenReplay", testCompleteReplay},
	{"Operations/RenewKeepsRecordPastRetention", testRenewKeepsRecordPastRetention},
	{"Operations/RenewExtendsLease", testRenew},
	{"Operations/ReleaseThenReclaim", testRelease},
	{"Operations/TenantsIndependent", testOperationTenants},
	{"Operations/GetIsTenantScoped", testGetOperation},
	{"Operations/RetentionKeepsTokensGrowing", testRetention},
	{"Operations/Purge", testPurgeOperations},
	{"Operations/RaceOnNewKey", testBeginRace},
	{"Operations/RaceOnTakeover", testTakeoverRace},
}

const (
	lease     = time.Minute
	retention = 24 * time.Hour
)

// params is a Begin of key "k" by tenant "t" with hash "h1" at t0+d.
func params(owner string, d time.Duration) groundhog.BeginParams {
	return groundhog.BeginParams{
		Tenant: "t", Key: "k", RequestHash: "h1", Owner: owner,
		Lease: lease, Retention: retention, Now: at(d),
	}
}

// begin calls Begin and checks the outcome.
func begin(t *testing.T, s Stores, p groundhog.BeginParams, want groundhog.BeginOutcome) *groundhog.Operation {
	t.Helper()
	op, out, err := s.Begin(ctx, p)
	must(t, err, "Begin")
	if out != want {
		t.Fatalf("Begin(%s, %s, owner %s, at t0+%v) = %s, want %s", p.Key, p.RequestHash, p.Owner, p.Now.Sub(t0), out, want)
	}
	if op == nil {
		t.Fatalf("Begin returned outcome %s with a nil operation", out)
	}
	return op
}

// get reads (tenant "t", key "k").
func get(t *testing.T, s Stores) *groundhog.Operation {
	t.Helper()
	op, err := s.GetOperationByKey(ctx, "t", "k")
	must(t, err, "GetOperationByKey")
	return op
}

// opDiff compares records; times compare as instants, results byte-exact.
func opDiff(got, want *groundhog.Operation) string {
	g, w := *got, *want
	for _, p := range []struct{ a, b *time.Time }{
		{&g.LeaseExpiresAt, &w.LeaseExpiresAt}, {&g.CreatedAt, &w.CreatedAt},
		{&g.UpdatedAt, &w.UpdatedAt}, {&g.ExpiresAt, &w.ExpiresAt},
	} {
		if !p.a.Equal(*p.b) {
			return fmt.Sprintf("time %v, want %v (record %+v)", *p.a, *p.b, got)
		}
		*p.a, *p.b = time.Time{}, time.Time{}
	}
	if d := responseDiff(g.Result, w.Result); d != "" {
		return "result: " + d
	}
	g.Result, w.Result = nil, nil
	g.LostAttemptStart, w.LostAttemptStart = time.Time{}, time.Time{} // Begin's report, not stored state
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("record = %+v, want %+v", g, w)
	}
	return ""
}

func testBeginStateMachine(t *testing.T, s0 Stores) {
	// Each row prepares the record of ("t", "k") through the public API
	// (prep returns it as stored), then calls Begin at t0+now with hash.
	type prepFn func(t *testing.T, s Stores) *groundhog.Operation
	claim := func(t *testing.T, s Stores) *groundhog.Operation {
		return begin(t, s, params("w1", 0), groundhog.BeginClaimed)
	}
	running := claim
	completed := func(t *testing.T, s Stores) *groundhog.Operation {
		op := claim(t, s)
		must(t, s.Complete(ctx, "t", op.ID, op.FencingToken, jsonResponse("done"), at(time.Second)), "Complete")
		return get(t, s)
	}
	failed := func(t *testing.T, s Stores) *groundhog.Operation {
		op := claim(t, s)
		must(t, s.Fail(ctx, "t", op.ID, op.FencingToken, failedResponse(), at(time.Second)), "Fail")
		return get(t, s)
	}
	pending := func(t *testing.T, s Stores) *groundhog.Operation {
		op := claim(t, s)
		must(t, s.Release(ctx, "t", op.ID, op.FencingToken, at(time.Second)), "Release")
		return get(t, s)
	}
	type want struct {
		outcome  groundhog.BeginOutcome
		token    int64
		attempts int
		status   groundhog.OperationStatus
		newID    bool // a new record replaced the prepared one
	}
	// Rows whose Begin takes over a running record under an expired lease:
	// only they report LostAttemptStart, the previous claim's time (a
	// pending record was settled by its previous attempt; a new record has
	// none).
	tookOver := map[string]bool{
		"running, lease expires exactly now: takeover": true,
		"running, lease long expired: takeover":        true,
	}
	for _, tc := range []struct {
		name string
		prep prepFn
		now  time.Duration
		hash string
		want want
	}{
		{"no record: create", nil, 0, "h1", want{groundhog.BeginClaimed, 1, 1, groundhog.StatusRunning, true}},
		{"running, live lease: in progress", running, lease - time.Nanosecond, "h1", want{groundhog.BeginInProgress, 1, 1, groundhog.StatusRunning, false}},
		{"running, lease expires exactly now: takeover", running, lease, "h1", want{groundhog.BeginClaimed, 2, 2, groundhog.StatusRunning, false}},
		{"running, lease long expired: takeover", running, time.Hour, "h1", want{groundhog.BeginClaimed, 2, 2, groundhog.StatusRunning, false}},
		{"running, other hash: mismatch", running, 0, "h2", want{groundhog.BeginMismatch, 1, 1, groundhog.StatusRunning, false}},
		{"running, expired lease, other hash: mismatch", running, time.Hour, "h2", want{groundhog.BeginMismatch, 1, 1, groundhog.StatusRunning, false}},
		{"pending: claim", pending, 2 * time.Second, "h1", want{groundhog.BeginClaimed, 2, 2, groundhog.StatusRunning, false}},
		{"pending, other hash: mismatch", pending, 2 * time.Second, "h2", want{groundhog.BeginMismatch, 1, 1, groundhog.StatusPending, false}},
		{"completed: done", completed, time.Hour, "h1", want{groundhog.BeginDone, 1, 1, groundhog.StatusCompleted, false}},
		{"completed, other hash: mismatch", completed, time.Hour, "h2", want{groundhog.BeginMismatch, 1, 1, groundhog.StatusCompleted, false}},
		{"failed: done", failed, time.Hour, "h1", want{groundhog.BeginDone, 1, 1, groundhog.StatusFailed, false}},
		{"completed, 1ns before retention ends: done", completed, retention - time.Nanosecond, "h1", want{groundhog.BeginDone, 1, 1, groundhog.StatusCompleted, false}},
		{"completed, retention ends exactly now: new record", completed, retention, "h1", want{groundhog.BeginClaimed, 2, 1, groundhog.StatusRunning, true}},
		{"expired, other hash: new record", completed, retention, "h2", want{groundhog.BeginClaimed, 2, 1, groundhog.StatusRunning, true}},
		{"running, retention over: new record", running, 2 * retention, "h1", want{groundhog.BeginClaimed, 2, 1, groundhog.StatusRunning, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each row gets a tenant of its own so rows cannot disturb
			// each other in the shared store.
			s := keyed(s0, tc.name)
			var prev *groundhog.Operation
			if tc.prep != nil {
				prev = tc.prep(t, s)
			}
			p := params("w2", tc.now)
			p.RequestHash = tc.hash
			op := begin(t, s, p, tc.want.outcome)
			stored := get(t, s)
			if d := opDiff(op, stored); d != "" {
				t.Errorf("Begin's record differs from the stored one: %s", d)
			}
			if op.FencingToken != tc.want.token || op.Attempts != tc.want.attempts || op.Status != tc.want.status {
				t.Errorf("token %d attempts %d status %s, want %d %d %s", op.FencingToken, op.Attempts, op.Status, tc.want.token, tc.want.attempts, tc.want.status)
			}
			if op.Tenant != "t" || op.Key != "k" {
				t.Errorf("record names (%q, %q), want (t, k)", op.Tenant, op.Key)
			}
			switch {
			case tookOver[tc.name] && !op.LostAttemptStart.Equal(prev.UpdatedAt):
				t.Errorf("LostAttemptStart = %v, want the lost claim's time %v", op.LostAttemptStart, prev.UpdatedAt)
			case !tookOver[tc.name] && !op.LostAttemptStart.IsZero():
				t.Errorf("LostAttemptStart = %v, want zero", op.LostAttemptStart)
			}
			if prev != nil && (op.ID != prev.ID) != tc.want.newID {
				t.Errorf("ID %s → %s: new record = %v, want %v", prev.ID, op.ID, op.ID != prev.ID, tc.want.newID)
			}
			switch tc.want.outcome {
			case groundhog.BeginClaimed:
				now := at(tc.now)
				if op.LeaseOwner != "w2" || !op.LeaseExpiresAt.Equal(now.Add(lease)) || !op.UpdatedAt.Equal(now) {
					t.Errorf("claimed: owner %q until %v updated %v, want w2 until %v updated %v", op.LeaseOwner, op.LeaseExpiresAt, op.UpdatedAt, now.Add(lease), now)
				}
				if op.Result != nil {
					t.Errorf("claimed record carries a result: %+v", op.Result)
				}
				if op.RequestHash != tc.hash {
					t.Errorf("RequestHash = %q, want %q", op.RequestHash, tc.hash)
				}
				if tc.want.newID {
					if op.ID == "" || !op.CreatedAt.Equal(now) || !op.ExpiresAt.Equal(now.Add(retention)) {
						t.Errorf("new record: id %q created %v expires %v, want created %v expires %v", op.ID, op.CreatedAt, op.ExpiresAt, now, now.Add(retention))
					}
				} else if !op.CreatedAt.Equal(prev.CreatedAt) || !op.ExpiresAt.Equal(prev.ExpiresAt) {
					t.Errorf("takeover changed CreatedAt/ExpiresAt: %v %v, want %v %v", op.CreatedAt, op.ExpiresAt, prev.CreatedAt, prev.ExpiresAt)
				}
			default:
				// Nothing changes unless the caller claims.
				if d := opDiff(stored, prev); d != "" {
					t.Errorf("%s changed the record: %s", tc.want.outcome, d)
				}
			}
			if tc.want.outcome == groundhog.BeginDone {
				want := jsonResponse("done")
				if tc.want.status == groundhog.StatusFailed {
					want = failedResponse()
				}
				if d := responseDiff(op.Result, want); d != "" {
					t.Errorf("replayed result: %s", d)
				}
			}
		})
	}
}

// keyed wraps s so that the tenant "t" of this file's helpers maps to a
// tenant of its own, letting table rows share one store without sharing
// records.
func keyed(s Stores, scope string) Stores { return &scoped{Stores: s, tenant: "t/" + scope} }

type scoped struct {
	Stores
	tenant string
}

func (s *scoped) t(tenant string) string {
	if tenant == "t" {
		return s.tenant
	}
	return tenant
}

func (s *scoped) unt(op *groundhog.Operation) *groundhog.Operation {
	if op != nil && op.Tenant == s.tenant {
		op.Tenant = "t"
	}
	return op
}

func (s *scoped) Begin(c context.Context, p groundhog.BeginParams) (*groundhog.Operation, groundhog.BeginOutcome, error) {
	p.Tenant = s.t(p.Tenant)
	op, out, err := s.Stores.Begin(c, p)
	return s.unt(op), out, err
}

func (s *scoped) GetOperationByKey(c context.Context, tenant, key string) (*groundhog.Operation, error) {
	op, err := s.Stores.GetOperationByKey(c, s.t(tenant), key)
	return s.unt(op), err
}

func (s *scoped) GetOperation(c context.Context, tenant, id string) (*groundhog.Operation, error) {
	op, err := s.Stores.GetOperation(c, s.t(tenant), id)
	return s.unt(op), err
}

func (s *scoped) Complete(c context.Context, tenant, id string, token int64, r *groundhog.Response, now time.Time) error {
	return s.Stores.Complete(c, s.t(tenant), id, token, r, now)
}

func (s *scoped) Fail(c context.Context, tenant, id string, token int64, r *groundhog.Response, now time.Time) error {
	return s.Stores.Fail(c, s.t(tenant), id, token, r, now)
}

func (s *scoped) Release(c context.Context, tenant, id string, token int64, now time.Time) error {
	return s.Stores.Release(c, s.t(tenant), id, token, now)
}

func (s *scoped) Renew(c context.Context, tenant, id string, token int64, until time.Time) error {
	return s.Stores.Renew(c, s.t(tenant), id, token, until)
}

func testStaleAfterTakeover(t *testing.T, s Stores) {
	a := begin(t, s, params("worker-a", 0), groundhog.BeginClaimed)
	b := begin(t, s, params("worker-b", lease), groundhog.BeginClaimed) // a's lease expired: takeover
	if b.ID != a.ID || b.FencingToken != a.FencingToken+1 {
		t.Fatalf("takeover: id %s token %d, want id %s token %d", b.ID, b.FencingToken, a.ID, a.FencingToken+1)
	}
	before := get(t, s)
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"Complete", func() error {
			return s.Complete(ctx, "t", a.ID, a.FencingToken, jsonResponse("stale"), at(lease+time.Second))
		}},
		{"Fail", func() error { return s.Fail(ctx, "t", a.ID, a.FencingToken, failedResponse(), at(lease+time.Second)) }},
		{"Renew", func() error { return s.Renew(ctx, "t", a.ID, a.FencingToken, at(time.Hour)) }},
		{"Release", func() error { return s.Release(ctx, "t", a.ID, a.FencingToken, at(lease+time.Second)) }},
		{"Complete with a future token", func() error {
			return s.Complete(ctx, "t", a.ID, b.FencingToken+1, jsonResponse("future"), at(lease+time.Second))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.write(), groundhog.ESTALE, "stale "+tc.name)
			if d := opDiff(get(t, s), before); d != "" {
				t.Errorf("stale %s changed the record: %s", tc.name, d)
			}
		})
	}
	// The current holder still can.
	must(t, s.Complete(ctx, "t", b.ID, b.FencingToken, jsonResponse("winner"), at(lease+2*time.Second)), "Complete by the new holder")
	done := begin(t, s, params("worker-c", lease+3*time.Second), groundhog.BeginDone)
	if d := responseDiff(done.Result, jsonResponse("winner")); d != "" {
		t.Error(d)
	}
}

func testFencedNeedRunning(t *testing.T, s Stores) {
	// Once a record left "running", even its last token writes nothing.
	for _, end := range []struct {
		name string
		do   func(op *groundhog.Operation) error
	}{
		{"completed", func(op *groundhog.Operation) error {
			return s.Complete(ctx, op.Tenant, op.ID, op.FencingToken, jsonResponse("ok"), at(time.Second))
		}},
		{"failed", func(op *groundhog.Operation) error {
			return s.Fail(ctx, op.Tenant, op.ID, op.FencingToken, failedResponse(), at(time.Second))
		}},
		{"pending", func(op *groundhog.Operation) error {
			return s.Release(ctx, op.Tenant, op.ID, op.FencingToken, at(time.Second))
		}},
	} {
		t.Run(end.name, func(t *testing.T) {
			p := params("w", 0)
			p.Key = "k-" + end.name
			op := begin(t, s, p, groundhog.BeginClaimed)
			must(t, end.do(op), "first write")
			before, err := s.GetOperation(ctx, "t", op.ID)
			must(t, err, "GetOperation")
			for name, w := range map[string]func() error{
				"Complete": func() error {
					return s.Complete(ctx, "t", op.ID, op.FencingToken, jsonResponse("again"), at(2*time.Second))
				},
				"Fail":    func() error { return s.Fail(ctx, "t", op.ID, op.FencingToken, failedResponse(), at(2*time.Second)) },
				"Renew":   func() error { return s.Renew(ctx, "t", op.ID, op.FencingToken, at(time.Hour)) },
				"Release": func() error { return s.Release(ctx, "t", op.ID, op.FencingToken, at(2*time.Second)) },
			} {
				wantCode(t, w(), groundhog.ESTALE, name+" on a "+end.name+" record")
			}
			after, err := s.GetOperation(ctx, "t", op.ID)
			must(t, err, "GetOperation")
			if d := opDiff(after, before); d != "" {
				t.Errorf("record changed: %s", d)
			}
		})
	}
}

func testFencedUnknown(t *testing.T, s Stores) {
	op := begin(t, s, params("w", 0), groundhog.BeginClaimed)
	for _, tc := range []struct{ name, tenant, id string }{
		{"unknown id", "t", "no-such-id"},
		{"other tenant", "other", op.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, s.Complete(ctx, tc.tenant, tc.id, op.FencingToken, jsonResponse("x"), t0), groundhog.ENOTFOUND, "Complete")
			wantCode(t, s.Fail(ctx, tc.tenant, tc.id, op.FencingToken, failedResponse(), t0), groundhog.ENOTFOUND, "Fail")
			wantCode(t, s.Renew(ctx, tc.tenant, tc.id, op.FencingToken, at(time.Hour)), groundhog.ENOTFOUND, "Renew")
			wantCode(t, s.Release(ctx, tc.tenant, tc.id, op.FencingToken, t0), groundhog.ENOTFOUND, "Release")
		})
	}
	if got := get(t, s); got.Status != groundhog.StatusRunning || got.FencingToken != 1 {
		t.Errorf("record changed by writes under other names: %+v", got)
	}
}

func testCompleteReplay(t *testing.T, s Stores) {
	for _, tc := range []struct {
		name   string
		result *groundhog.Response
	}{
		{"json", jsonResponse("r")},
		{"stream", streamResponse("r")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params("w", 0)
			p.Key = "k-" + tc.name
			op := begin(t, s, p, groundhog.BeginClaimed)
			must(t, s.Complete(ctx, "t", op.ID, op.FencingToken, tc.result, at(10*time.Second)), "Complete")

			stored, err := s.GetOperation(ctx, "t", op.ID)
			must(t, err, "GetOperation")
			if stored.Status != groundhog.StatusCompleted || !stored.UpdatedAt.Equal(at(10*time.Second)) {
				t.Errorf("after Complete: status %s updated %v", stored.Status, stored.UpdatedAt)
			}
			if d := responseDiff(stored.Result, tc.result); d != "" {
				t.Errorf("stored result: %s", d)
			}

			p.Now, p.Owner = at(time.Hour), "retry"
			done := begin(t, s, p, groundhog.BeginDone)
			if d := responseDiff(done.Result, tc.result); d != "" {
				t.Errorf("replayed result: %s", d)
			}
			p.RequestHash = "other"
			mm := begin(t, s, p, groundhog.BeginMismatch)
			if mm.RequestHash != "h1" {
				t.Errorf("mismatch returned hash %q, want the stored h1", mm.RequestHash)
			}
			after, err := s.GetOperation(ctx, "t", op.ID)
			must(t, err, "GetOperation")
			if d := opDiff(after, stored); d != "" {
				t.Errorf("mismatch changed the record: %s", d)
			}
		})
	}
}

func testRenew(t *testing.T, s Stores) {
	op := begin(t, s, params("w", 0), groundhog.BeginClaimed)
	until := at(3 * lease)
	must(t, s.Renew(ctx, "t", op.ID, op.FencingToken, until), "Renew")
	if got := get(t, s); !got.LeaseExpiresAt.Equal(until) || got.FencingToken != op.FencingToken || got.LeaseOwner != "w" {
		t.Errorf("after Renew: lease %v token %d owner %q, want %v %d w", got.LeaseExpiresAt, got.FencingToken, got.LeaseOwner, until, op.FencingToken)
	}
	// The original lease is over, the renewed one is not.
	begin(t, s, params("x", 2*lease), groundhog.BeginInProgress)
	begin(t, s, params("x", 3*lease-time.Nanosecond), groundhog.BeginInProgress)
	begin(t, s, params("x", 3*lease), groundhog.BeginClaimed)
}

func testRelease(t *testing.T, s Stores) {
	op := begin(t, s, params("w1", 0), groundhog.BeginClaimed)
	must(t, s.Release(ctx, "t", op.ID, op.FencingToken, at(time.Second)), "Release")
	got := get(t, s)
	if got.Status != groundhog.StatusPending || got.LeaseOwner != "" || got.Result != nil || !got.UpdatedAt.Equal(at(time.Second)) {
		t.Errorf("after Release: %+v, want pending with no owner", got)
	}
	// Pending is claimable at once, lease or not.
	again := begin(t, s, params("w2", 2*time.Second), groundhog.BeginClaimed)
	if again.ID != op.ID || again.Attempts != 2 || again.FencingToken != 2 || again.LeaseOwner != "w2" {
		t.Errorf("reclaim: %+v, want same id, attempts 2, token 2, owner w2", again)
	}
	wantCode(t, s.Release(ctx, "t", op.ID, op.FencingToken, at(3*time.Second)), groundhog.ESTALE, "Release with the old token")
	begin(t, s, params("w3", 3*time.Second), groundhog.BeginInProgress)
}

func testOperationTenants(t *testing.T, s Stores) {
	pa, pb := params("a", 0), params("b", 0)
	pa.Tenant, pb.Tenant = "alice", "bob"
	pb.RequestHash = "other-hash" // would be a mismatch if the records were shared
	a := begin(t, s, pa, groundhog.BeginClaimed)
	b := begin(t, s, pb, groundhog.BeginClaimed)
	if a.ID == b.ID || a.FencingToken != 1 || b.FencingToken != 1 {
		t.Errorf("alice %+v, bob %+v: want independent records with token 1", a, b)
	}
	must(t, s.Complete(ctx, "alice", a.ID, a.FencingToken, jsonResponse("alice"), at(time.Second)), "Complete alice")
	pb.Now = at(2 * time.Second)
	begin(t, s, pb, groundhog.BeginInProgress)
	pa.Now = at(2 * time.Second)
	begin(t, s, pa, groundhog.BeginDone)
}

func testGetOperation(t *testing.T, s Stores) {
	op := begin(t, s, params("w", 0), groundhog.BeginClaimed)
	got, err := s.GetOperation(ctx, "t", op.ID)
	must(t, err, "GetOperation")
	if d := opDiff(got, op); d != "" {
		t.Error(d)
	}
	_, err = s.GetOperation(ctx, "other", op.ID)
	wantCode(t, err, groundhog.ENOTFOUND, "GetOperation by another tenant")
	_, err = s.GetOperation(ctx, "t", "no-such-id")
	wantCode(t, err, groundhog.ENOTFOUND, "GetOperation of an unknown id")
	_, err = s.GetOperationByKey(ctx, "other", "k")
	wantCode(t, err, groundhog.ENOTFOUND, "GetOperationByKey by another tenant")
	_, err = s.GetOperationByKey(ctx, "t", "no-such-key")
	wantCode(t, err, groundhog.ENOTFOUND, "GetOperationByKey of an unknown key")
}

func testRetention(t *testing.T, s Stores) {
	// Tokens of a key keep growing across records: a worker of an expired
	// record can never hold a token equal to the new record's.
	first := begin(t, s, params("w1", 0), groundhog.BeginClaimed)
	second := begin(t, s, params("w2", lease), groundhog.BeginClaimed) // takeover: token 2
	must(t, s.Complete(ctx, "t", second.ID, second.FencingToken, jsonResponse("old"), at(lease+time.Second)), "Complete")

	p := params("w3", retention) // ExpiresAt == now: the record counts as absent
	p.RequestHash = "h-new"
	fresh := begin(t, s, p, groundhog.BeginClaimed)
	if fresh.FencingToken <= second.FencingToken {
		t.Errorf("new record token %d, want > %d", fresh.FencingToken, second.FencingToken)
	}
	if fresh.Attempts != 1 || fresh.Result != nil || fresh.RequestHash != "h-new" || !fresh.ExpiresAt.Equal(at(2*retention)) {
		t.Errorf("new record %+v: want attempts 1, no result, hash h-new, expiring at t0+2×retention", fresh)
	}
	// The old record's workers write nothing.
	for _, old := range []*groundhog.Operation{first, second} {
		err := s.Complete(ctx, "t", old.ID, old.FencingToken, jsonResponse("late"), at(retention+time.Second))
		if c := groundhog.ErrorCode(err); c != groundhog.ESTALE && c != groundhog.ENOTFOUND {
			t.Errorf("Complete by a worker of the expired record: %v, want ESTALE or ENOTFOUND", err)
		}
	}
	if got := get(t, s); got.Status != groundhog.StatusRunning || got.FencingToken != fresh.FencingToken || got.Result != nil {
		t.Errorf("new record after late writes: %+v", got)
	}
	must(t, s.Complete(ctx, "t", fresh.ID, fresh.FencingToken, jsonResponse("new"), at(retention+2*time.Second)), "Complete new")
}

func testPurgeOperations(t *testing.T, s Stores) {
	now := at(retention)
	for _, k := range []struct {
		key     string
		created time.Duration // Begin time; the record expires retention later
	}{
		{"old", -time.Hour},
		{"at-now", 0}, // ExpiresAt == now: purged
		{"young", time.Nanosecond},
	} {
		p := params("w", k.created)
		p.Key = k.key
		begin(t, s, p, groundhog.BeginClaimed)
	}
	n, err := s.PurgeOperations(ctx, now)
	must(t, err, "PurgeOperations")
	if n != 2 {
		t.Errorf("PurgeOperations = %d, want 2", n)
	}
	for key, kept := range map[string]bool{"old": false, "at-now": false, "young": true} {
		_, err := s.GetOperationByKey(ctx, "t", key)
		if kept {
			must(t, err, "GetOperationByKey "+key)
		} else {
			wantCode(t, err, groundhog.ENOTFOUND, "purged "+key)
		}
	}
	n, err = s.PurgeOperations(ctx, now)
	must(t, err, "PurgeOperations again")
	if n != 0 {
		t.Errorf("second PurgeOperations = %d, want 0", n)
	}
	// A purged key starts over.
	p := params("w", retention)
	p.Key = "old"
	begin(t, s, p, groundhog.BeginClaimed)
}

func testBeginRace(t *testing.T, s Stores) {
	raceBegin(t, s, 0, 1)
}

// testTakeoverRace lets the lease expire, then races Begins on the
// running record: exactly one takes it over.
func testTakeoverRace(t *testing.T, s Stores) {
	begin(t, s, params("first", 0), groundhog.BeginClaimed)
	raceBegin(t, s, lease, 2)
}

// raceBegin runs n Begins of ("t", "k") at t0+d at once and checks that
// exactly one claims, with token and attempts want, and the others see it
// in progress.
func raceBegin(t *testing.T, s Stores, d time.Duration, want int64) {
	const n = 100
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		outcomes = make([]groundhog.BeginOutcome, n)
		ops      = make([]*groundhog.Operation, n)
		errs     = make([]error, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ops[i], outcomes[i], errs[i] = s.Begin(ctx, params(fmt.Sprintf("w%d", i), d))
		}()
	}
	close(start)
	wg.Wait()
	claimed, inProgress := 0, 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Begin %d: %v", i, errs[i])
		}
		switch outcomes[i] {
		case groundhog.BeginClaimed:
			claimed++
		case groundhog.BeginInProgress:
			inProgress++
		}
		if ops[i].ID != ops[0].ID || ops[i].FencingToken != want {
			t.Errorf("Begin %d saw record %s token %d, want %s token %d", i, ops[i].ID, ops[i].FencingToken, ops[0].ID, want)
		}
	}
	if claimed != 1 || inProgress != n-1 {
		t.Errorf("%d claimed, %d in progress; want 1 and %d", claimed, inProgress, n-1)
	}
	if got := get(t, s); got.Attempts != int(want) || got.FencingToken != want {
		t.Errorf("record after the race: attempts %d token %d, want %d and %d", got.Attempts, got.FencingToken, want, want)
	}
}

// A lease renewed past the record's retention keeps the record: a record
// never expires under a live lease, so a long run is never executed twice.
func testRenewKeepsRecordPastRetention(t *testing.T, s Stores) {
	p := params("w", 0)
	p.Retention = time.Minute
	op := begin(t, s, p, groundhog.BeginClaimed)
	must(t, s.Renew(ctx, "t", op.ID, op.FencingToken, at(5*time.Minute)), "Renew")
	p.Now, p.Owner = at(2*time.Minute), "other" // past the original retention, inside the lease
	got := begin(t, s, p, groundhog.BeginInProgress)
	if got.ID != op.ID || got.FencingToken != op.FencingToken {
		t.Fatalf("record replaced under a live lease: %+v", got)
	}
	if !got.ExpiresAt.Equal(at(5 * time.Minute)) {
		t.Errorf("ExpiresAt = %v, want the lease's end %v", got.ExpiresAt, at(5*time.Minute))
	}
}
