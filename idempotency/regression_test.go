// Regression tests from the review of the tool operations API: each one
// demonstrated a defect (since fixed) and fails if it comes back.
package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// readFailStore fails GetOperation (by id) while failGet is set: a store
// whose read pool is momentarily unavailable while its writer works.
type readFailStore struct {
	groundhog.OperationStore
	failGet atomic.Bool
}

func (s *readFailStore) GetOperation(ctx context.Context, tenant, id string) (*groundhog.Operation, error) {
	if s.failGet.Load() {
		return nil, groundhog.Errorf(groundhog.EUNAVAILABLE, "read pool unavailable")
	}
	return s.OperationStore.GetOperation(ctx, tenant, id)
}

// A fenced write of the tool operations API that the store committed must
// not be answered as a failure: the handler re-reads the record after the
// write and turns a failure of that read into 503 "store unavailable".
// The tool then believes its completion was not stored, and its retry (the
// very situation the API exists for) gets 409 stale_token. The handler also
// skips notify, so an in-process Wait on the key is not woken.
func TestReviewHTTPCompleteCommittedButAnswered503(t *testing.T) {
	e := newEnv(t)
	store := &readFailStore{OperationStore: e.db}
	svc := idempotency.New(idempotency.Options{Store: store, Clock: e.clock, Lease: lease, Retention: retention, Owner: "test"})
	mux := http.NewServeMux()
	h := svc.Handler(testAuth)
	mux.Handle(idempotency.OperationsPath, h)
	mux.Handle(idempotency.OperationsPath+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a := &api{env: e, srv: srv}
	a.svc = svc

	r := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")

	// An in-process waiter on the same key.
	waited := make(chan *groundhog.Operation, 1)
	go func() {
		op, _ := svc.Wait(context.Background(), tenantA, "k", time.Minute)
		waited <- op
	}()
	a.clock.waitTimers(t, 50*time.Millisecond, 1)

	store.failGet.Store(true)
	res := a.write(t, "key-a", r.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": "sent"})
	store.failGet.Store(false)

	rec := e.record(tenantA, "k")
	if res.status == http.StatusServiceUnavailable && rec.Status == groundhog.StatusRunning {
		// Refused before writing anything: an honest 503, and the tool's
		// retry once the store answers completes the operation.
		res = a.write(t, "key-a", r.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": "sent"})
		if res.status != http.StatusOK {
			t.Fatalf("retry after the store recovered: %d %s", res.status, res.raw)
		}
		rec = e.record(tenantA, "k")
	}
	if res.status != http.StatusOK && rec.Status == groundhog.StatusCompleted {
		t.Errorf("complete answered %d %s, but the store holds the completion (status %s)", res.status, res.raw, rec.Status)
		// What the tool does next: retry its completion.
		retry := a.write(t, "key-a", r.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": "sent"})
		t.Errorf("the tool's retry of its own committed completion is answered %d %s", retry.status, retry.raw)
	}
	select {
	case op := <-waited:
		if op == nil || !op.Status.Terminal() {
			t.Errorf("waiter woke with %+v", op)
		}
	case <-time.After(time.Second):
		t.Errorf("in-process waiter not woken by the committed completion (left to its poll timer)")
		a.clock.Advance(time.Minute) // release it
		<-waited
	}
}
