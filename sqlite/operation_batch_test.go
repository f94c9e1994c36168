package sqlite

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/groupcommit"
)

// waitQueued blocks until n operation writes have been made since db's
// write count was w0: taken into a batch (the leader's, which waits for
// the writer connection) or waiting in the queue behind it.
func waitQueued(t *testing.T, db *DB, w0 int64, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a bound against hanging, not a timing figure
	for {
		got := int(db.ops.writes.Load()-w0) + db.ops.q.Queued()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d operation writes made, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// holdWriter takes the writer connection in a transaction until the
// returned function is called: operation writes made meanwhile queue up.
func holdWriter(t *testing.T, db *DB) func() {
	t.Helper()
	tx, err := db.w.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// Concurrent claims and fenced writes that queue behind a busy writer are
// committed together in one transaction, and each caller still gets its
// own statement's answer: every new key claimed once, every current token
// completes, every stale one is ESTALE, and what was stored is each
// caller's own result.
func TestOperationWritesGroupCommit(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.Now()
	const n = 24
	params := func(i int) groundhog.BeginParams {
		return groundhog.BeginParams{Tenant: "t", Key: "k" + strconv.Itoa(i), RequestHash: "sha256:00",
			Owner: "o", Lease: time.Minute, Retention: time.Hour, Now: now}
	}

	// Claims: n new keys, plus a second claim of key 0 in the same batch.
	ops := make([]*groundhog.Operation, n+1)
	outcomes := make([]groundhog.BeginOutcome, n+1)
	release := holdWriter(t, db)
	w0, c0 := db.ops.writes.Load(), db.ops.commits.Load()
	var wg sync.WaitGroup
	for i := range n + 1 {
		wg.Go(func() {
			var err error
			ops[i], outcomes[i], err = db.Begin(ctx, params(i%n))
			if err != nil {
				t.Error(err)
			}
		})
	}
	waitQueued(t, db, w0, n+1) // a leader's batch waits for the writer, the rest queue behind it
	release()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if w, c := db.ops.writes.Load()-w0, db.ops.commits.Load()-c0; w != n+1 || c > 2 {
		t.Fatalf("%d claim statements in %d commits, want %d in at most 2 (the leader's batch, then one more)", w, c, n+1)
	}
	claimed := map[string]bool{}
	for i, op := range ops {
		switch outcomes[i] {
		case groundhog.BeginClaimed:
			if claimed[op.Key] {
				t.Fatalf("key %s claimed twice", op.Key)
			}
			claimed[op.Key] = true
		case groundhog.BeginInProgress:
			if i%n != 0 {
				t.Fatalf("key %s: %s", op.Key, outcomes[i])
			}
		default:
			t.Fatalf("key %s: %s", op.Key, outcomes[i])
		}
	}
	if len(claimed) != n {
		t.Fatalf("%d keys claimed, want %d", len(claimed), n)
	}

	// Fenced writes: the even records completed with their own result, the
	// odd ones with a stale token.
	byKey := map[string]*groundhog.Operation{}
	for i, op := range ops {
		if outcomes[i] == groundhog.BeginClaimed {
			byKey[op.Key] = op
		}
	}
	errs := make([]error, n)
	release = holdWriter(t, db)
	w0, c0 = db.ops.writes.Load(), db.ops.commits.Load()
	for i := range n {
		op := byKey["k"+strconv.Itoa(i)]
		token := op.FencingToken
		if i%2 == 1 {
			token++
		}
		wg.Go(func() {
			errs[i] = db.Complete(ctx, "t", op.ID, token, &groundhog.Response{Status: 200, Body: []byte(op.Key)}, now)
		})
	}
	waitQueued(t, db, w0, n)
	release()
	wg.Wait()
	if w, c := db.ops.writes.Load()-w0, db.ops.commits.Load()-c0; w != n || c > 2 {
		t.Fatalf("%d fenced statements in %d commits, want %d in at most 2", w, c, n)
	}
	for i := range n {
		key := "k" + strconv.Itoa(i)
		rec, err := db.GetOperationByKey(ctx, "t", key)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if groundhog.ErrorCode(errs[i]) != groundhog.ESTALE || rec.Status != groundhog.StatusRunning {
				t.Fatalf("stale complete of %s: %v, status %s", key, errs[i], rec.Status)
			}
			continue
		}
		if errs[i] != nil || rec.Status != groundhog.StatusCompleted || string(rec.Result.Body) != key {
			t.Fatalf("complete of %s: %v, status %s, result %q", key, errs[i], rec.Status, rec.Result.Body)
		}
	}
}

// A statement that fails inside a batch fails only its own caller: the
// batch is rolled back and its writes run again one by one, so the
// neighbours' writes are committed and answered as if alone.
func TestOperationWritesBatchErrorIsolated(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.Now()
	insert := func(id, key, status string) *opWrite {
		return &opWrite{ctx: ctx, q: qClaimNew, Waiter: groupcommit.NewWaiter(), args: []any{id, "t", key, "sha256:00", status,
			"o", ns(now.Add(time.Minute)), int64(1), 1, ns(now), ns(now), ns(now.Add(time.Hour))}}
	}
	// The middle one breaks the status CHECK constraint.
	batch := []*opWrite{insert("id-a", "a", "running"), insert("id-b", "b", "bogus"), insert("id-c", "c", "running")}
	db.runOps(batch)
	if batch[0].err != nil || batch[0].n != 1 || batch[2].err != nil || batch[2].n != 1 {
		t.Fatalf("neighbours: %v/%d, %v/%d", batch[0].err, batch[0].n, batch[2].err, batch[2].n)
	}
	if batch[1].err == nil {
		t.Fatal("the bad statement reported no error")
	}
	for _, key := range []string{"a", "c"} {
		if _, err := db.GetOperationByKey(ctx, "t", key); err != nil {
			t.Fatalf("record %s: %v", key, err)
		}
	}
	if _, err := db.GetOperationByKey(ctx, "t", "b"); !groundhog.IsNotFound(err) {
		t.Fatalf("record b: %v", err)
	}
}
