package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// t0 is the fake clock's origin; its nanoseconds catch a store that
// rounds times.
var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)

const (
	lease     = 30 * time.Second
	retention = 24 * time.Hour
	tenantA   = "tenant-a"
	tenantB   = "tenant-b"
	hash1     = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	hash2     = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// guard bounds every blocking wait of a test, so a bug fails the test
// instead of hanging it. Nothing waits for it to pass.
const guard = 10 * time.Second

// fakeClock is a groundhog.Clock and idempotency.AfterClock whose time
// moves only when the test says so. Timers fire when Advance reaches them.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced when a timer is added
}

type fakeTimer struct {
	d  time.Duration
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0, changed: make(chan struct{})} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, &fakeTimer{d: d, at: c.now.Add(d), ch: ch})
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Advance moves the clock by d and fires the timers it reaches.
func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards) and fires the timers it reaches.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("fakeClock: time goes backwards")
	}
	c.now = t
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(t) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- t
	}
	c.timers = kept
}

// waitTimers blocks until at least n timers of duration d are pending:
// the goroutine that set them is now blocked on them.
func (c *fakeClock) waitTimers(t *testing.T, d time.Duration, n int) {
	t.Helper()
	deadline := time.After(guard)
	for {
		c.mu.Lock()
		got := 0
		for _, tm := range c.timers {
			if tm.d == d {
				got++
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %d pending timers of %v after %v", n, d, guard)
		}
	}
}

// countingStore delegates every call to the real store; it counts reads
// and reports each Renew's result, without changing any behaviour.
type countingStore struct {
	groundhog.OperationStore
	reads   atomic.Int64
	renewed chan error
}

func (s *countingStore) GetOperation(ctx context.Context, tenant, id string) (*groundhog.Operation, error) {
	s.reads.Add(1)
	return s.OperationStore.GetOperation(ctx, tenant, id)
}

func (s *countingStore) GetOperationByKey(ctx context.Context, tenant, key string) (*groundhog.Operation, error) {
	s.reads.Add(1)
	return s.OperationStore.GetOperationByKey(ctx, tenant, key)
}

func (s *countingStore) Renew(ctx context.Context, tenant, id string, token int64, until time.Time) error {
	err := s.OperationStore.Renew(ctx, tenant, id, token, until)
	select {
	case s.renewed <- err:
	default:
	}
	return err
}

// env is one test's world: a real SQLite file, the counting wrapper, a
// fake clock and a Service over them.
type env struct {
	t     testing.TB
	db    *sqlite.DB
	store *countingStore
	clock *fakeClock
	svc   *idempotency.Service
	ctx   context.Context
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "groundhog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{t: t, db: db, clock: newFakeClock(), ctx: ctx}
	e.store = &countingStore{OperationStore: db, renewed: make(chan error, 1000)}
	e.svc = idempotency.New(idempotency.Options{
		Store: e.store, Clock: e.clock, Lease: lease, Retention: retention, Owner: "test",
	})
	return e
}

// begin calls Begin and fails the test on an error or another outcome.
func (e *env) begin(tenant, key, hash string, want groundhog.BeginOutcome) (*idempotency.Claim, *groundhog.Operation) {
	e.t.Helper()
	claim, op, outcome, err := e.svc.Begin(e.ctx, tenant, key, hash)
	if err != nil {
		e.t.Fatalf("Begin(%s, %s): %v", tenant, key, err)
	}
	if outcome != want {
		e.t.Fatalf("Begin(%s, %s) = %s, want %s (op %+v)", tenant, key, outcome, want, op)
	}
	if (claim != nil) != (outcome == groundhog.BeginClaimed) || op == nil {
		e.t.Fatalf("Begin(%s, %s) = claim %v, op %v with outcome %s", tenant, key, claim, op, outcome)
	}
	return claim, op
}

// record reads (tenant, key) from the real store, bypassing the counter.
func (e *env) record(tenant, key string) *groundhog.Operation {
	e.t.Helper()
	op, err := e.db.GetOperationByKey(e.ctx, tenant, key)
	if err != nil {
		e.t.Fatalf("GetOperationByKey(%s, %s): %v", tenant, key, err)
	}
	return op
}

// unchanged fails unless the record (tenant, key) still equals before.
func (e *env) unchanged(tenant, key string, before *groundhog.Operation) {
	e.t.Helper()
	if after := e.record(tenant, key); !reflect.DeepEqual(after, before) {
		e.t.Fatalf("record changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// wantCode fails unless err has code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := groundhog.ErrorCode(err); got != code {
		t.Fatalf("error %v has code %q, want %q", err, got, code)
	}
}

// resp is a JSON response with body.
func resp(status int, body string) *groundhog.Response {
	return &groundhog.Response{Status: status, ContentType: "application/json", Body: []byte(body)}
}

func sameResponse(t *testing.T, got, want *groundhog.Response) {
	t.Helper()
	if got == nil || got.Status != want.Status || !bytes.Equal(got.Body, want.Body) {
		t.Fatalf("response = %+v, want %+v", got, want)
	}
}

// recv receives from ch within guard.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("nothing received after %v", guard)
		panic("unreachable")
	}
}

var errBoom = errors.New("boom")
