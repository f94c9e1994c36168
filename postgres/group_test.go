package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// holdGroup starts a batch that cannot end until release is called: a
// cache write waiting for a row another transaction holds. Writes made
// meanwhile queue behind it; release(n) waits until n are queued, then lets
// the held one finish, and the n run as the next batch. The held write
// counts one write and one commit.
func holdGroup(t *testing.T, db *DB) (release func(n int)) {
	t.Helper()
	held := cacheEntryN(-1)
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]any{held.Tenant, held.RequestHash, string(held.Shape)}, respArgs(&held.Response)...)
	if _, err := tx.Exec(ctx, qPutCache, append(args, ns(held.CreatedAt), ns(held.ExpiresAt))...); err != nil {
		t.Fatal(err)
	}
	w0, _ := db.GroupStats()
	done := make(chan error, 1)
	go func() { done <- db.PutCache(ctx, held) }()
	waitFor(t, "the held write running", func() bool { w, _ := db.GroupStats(); return w > w0 })
	return func(n int) {
		waitFor(t, fmt.Sprintf("%d writes queued", n), func() bool { return db.group.q.Queued() == n })
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the held write: %v", err)
		}
	}
}

// waitFor polls cond until it holds, failing after ten seconds (a bound
// against hanging, not a timing figure).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func cacheEntryN(i int) *groundhog.CacheEntry {
	now := time.Now()
	return &groundhog.CacheEntry{Tenant: "acme", RequestHash: fmt.Sprintf("sha256:%064d", i), Shape: groundhog.ShapeChat, CreatedAt: now,
		Response: groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}}
}

// Writes that queue together commit together: one transaction for a
// batch of cache entries, idempotency claims and completions, each caller
// getting its own statement's answer, and everything readable after.
func TestGroupCommitsConcurrentWrites(t *testing.T) {
	db := openTest(t)
	now := time.Now()
	// Two operations to complete in the batch, claimed beforehand.
	var done []*groundhog.Operation
	for i := range 2 {
		op, outcome, err := db.Begin(ctx, groundhog.BeginParams{Tenant: "acme", Key: fmt.Sprintf("done-%d", i), RequestHash: "h", Owner: "o", Lease: time.Minute, Retention: time.Hour, Now: now})
		if err != nil || outcome != groundhog.BeginClaimed {
			t.Fatalf("begin: %v %v", outcome, err)
		}
		done = append(done, op)
	}
	w0, c0 := db.GroupStats()
	release := holdGroup(t, db)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- db.PutCache(ctx, cacheEntryN(i)) }()
	}
	claimed := make(chan groundhog.BeginOutcome, 2)
	for _, key := range []string{"new", "new"} { // the same new key twice: one claims, the other finds it running
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, outcome, err := db.Begin(ctx, groundhog.BeginParams{Tenant: "acme", Key: key, RequestHash: "h", Owner: "o", Lease: time.Minute, Retention: time.Hour, Now: now})
			errs <- err
			claimed <- outcome
		}()
	}
	for _, op := range done {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.Complete(ctx, "acme", op.ID, op.FencingToken, &groundhog.Response{Status: 200, Body: []byte(`{}`)}, now)
		}()
	}
	release(12)
	wg.Wait()
	close(errs)
	close(claimed)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	outcomes := map[groundhog.BeginOutcome]int{}
	for o := range claimed {
		outcomes[o]++
	}
	if outcomes[groundhog.BeginClaimed] != 1 || outcomes[groundhog.BeginInProgress] != 1 {
		t.Errorf("two claims of one new key: %v, want one claimed and one in progress", outcomes)
	}
	if w, c := db.GroupStats(); w-w0 != 1+12 || c-c0 != 1+1 {
		t.Errorf("%d writes in %d transactions besides the held one, want 12 in 1", w-w0-1, c-c0-1)
	}
	for i := range 8 {
		e, err := db.GetCache(ctx, "acme", cacheEntryN(i).RequestHash, time.Now())
		if err != nil || string(e.Response.Body) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("entry %d: %v %v", i, e, err)
		}
	}
	for _, op := range done {
		got, err := db.GetOperation(ctx, "acme", op.ID)
		if err != nil || got.Status != groundhog.StatusCompleted {
			t.Fatalf("operation %s: %v %v, want completed", op.Key, got, err)
		}
	}
}

// A statement the server refuses, or one pgx cannot send, fails only its
// own caller: nothing of the batch is committed and each write runs again
// on its own. A fenced write whose token moved on is told so, not
// committed.
func TestGroupRefusedStatementFailsAlone(t *testing.T) {
	for _, bad := range []struct {
		name string
		q    string
		args []any
	}{
		{"refused by the server", "INSERT INTO no_such_table VALUES (1)", nil},
		{"that pgx cannot send", "SELECT $1::int", []any{make(chan int)}}, // fails before the batch is sent
	} {
		t.Run(bad.name, func(t *testing.T) {
			db := openTest(t)
			w0, c0 := db.GroupStats()
			release := holdGroup(t, db)
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for i := range 6 {
				wg.Add(1)
				go func() { defer wg.Done(); errs <- db.PutCache(ctx, cacheEntryN(i)) }()
			}
			var badErr, stale error
			wg.Add(2)
			go func() { defer wg.Done(); _, badErr = db.groupExec(ctx, "x", bad.q, bad.args...) }()
			go func() {
				defer wg.Done()
				stale = db.Complete(ctx, "acme", "no-such-operation", 1, &groundhog.Response{Status: 200}, time.Now())
			}()
			release(8)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("a good write failed beside a bad one: %v", err)
				}
			}
			if badErr == nil {
				t.Error("the bad statement reported no error")
			}
			if groundhog.ErrorCode(stale) != groundhog.ENOTFOUND {
				t.Errorf("complete of a missing operation: %v, want not found", stale)
			}
			if w, c := db.GroupStats(); w-w0 != 1+8 || c-c0 != 1+8 {
				t.Errorf("%d writes in %d transactions besides the held one, want 8 run again alone", w-w0-1, c-c0-1)
			}
			for i := range 6 {
				if _, err := db.GetCache(ctx, "acme", cacheEntryN(i).RequestHash, time.Now()); err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
			}
		})
	}
}
