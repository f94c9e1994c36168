package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// A kill -9 of the gateway under load loses no ledger row of a response
// already sent: every response a client received completely has its row
// once the journal is replayed.
func TestKill9LosesNoLedgerRowOfASentResponse(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	journal := filepath.Join(dir, "journal")
	gw := start(t, nil, "serve", "--db", db, "--journal-dir", journal)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	received := map[string]bool{} // request hashes of complete 200 responses
	var sent atomic.Int64
	var wg sync.WaitGroup
	const workers = 16
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 5000 && ctx.Err() == nil; i++ {
				body := fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"worker %d call %d"}]}`, w, i)
				r := post(ctx, gw.URL+"/v1/chat/completions", body, nil)
				if r.err != nil || r.status != 200 {
					return // the gateway is gone
				}
				mu.Lock()
				received[r.header.Get("Groundhog-Request-Hash")] = true
				mu.Unlock()
				sent.Add(1)
			}
		}(w)
	}
	// Kill it mid-load, once a few hundred responses are out.
	deadline := time.Now().Add(60 * time.Second)
	for sent.Load() < 400 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	gw.kill()
	cancel()
	wg.Wait()
	if len(received) < 400 {
		t.Fatalf("only %d responses before the kill", len(received))
	}

	// What a restart does: open the store and replay the journal.
	bg := context.Background()
	store, err := sqlite.Open(bg, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := ledger.OpenWriter(bg, store, ledger.WriterOptions{JournalDir: journal})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(bg); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	err = store.ScanLedger(bg, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		rows[e.RequestHash]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for h := range received {
		if rows[h] == 0 {
			missing++
		}
		if rows[h] > 1 {
			t.Fatalf("request %s has %d rows (a replay duplicated it)", h, rows[h])
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d responses received have no ledger row after kill -9", missing, len(received))
	}
	t.Logf("kill -9 after %d responses: %d ledger rows, none missing", len(received), len(rows))
}

// kill -9 of the gateway after the provider answered and before the
// operation record was committed: the retry after lease expiry executes
// once more, the ledger shows both attempts, one result is committed, and
// every later retry replays it.
func TestKill9BeforeCommitIsRecoveredByLeaseExpiry(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	journal := filepath.Join(dir, "journal")
	simP := start(t, nil, "sim")
	args := []string{"serve", "--db", db, "--journal-dir", journal, "--upstream", simP.URL + "/v1", "--lease", "1s"}
	crashing := start(t, []string{"GROUNDHOG_FAILPOINT=before-commit"}, args...)

	body := `{"model":"sim-small","messages":[{"role":"user","content":"charge the card once"}]}`
	key := map[string]string{"Idempotency-Key": "order-4711"}
	ctx := context.Background()
	r := post(ctx, crashing.URL+"/v1/chat/completions", body, key)
	if r.err == nil {
		t.Fatalf("the first attempt should die with the process, got %d %s", r.status, r.body)
	}
	waitExit(t, crashing)
	if got := simCalls(t, simP.URL); got != 1 {
		t.Fatalf("provider calls after the crash = %d, want 1 (it answered before the crash)", got)
	}

	gw := start(t, nil, args...)
	// The dead process's lease is still live for up to a second: 409, or a
	// wait until it expires and this request takes over.
	r = post(ctx, gw.URL+"/v1/chat/completions", body, key)
	if r.status != 409 && r.status != 200 {
		t.Fatalf("retry during the dead lease: %d %s", r.status, r.body)
	}
	if r.status == 409 && r.header.Get("Retry-After") == "" {
		t.Fatal("409 without Retry-After")
	}
	r = post(ctx, gw.URL+"/v1/chat/completions", body, map[string]string{"Idempotency-Key": "order-4711", "Prefer": "wait=10"})
	if r.err != nil || r.status != 200 {
		t.Fatalf("retry after lease expiry: %v %d %s", r.err, r.status, r.body)
	}
	if got := simCalls(t, simP.URL); got != 2 {
		t.Fatalf("provider calls = %d, want 2 (the takeover executes once more)", got)
	}
	committed := string(r.body)
	for i := 0; i < 3; i++ {
		rr := post(ctx, gw.URL+"/v1/chat/completions", body, key)
		if rr.status != 200 || rr.header.Get("Idempotent-Replayed") != "true" || string(rr.body) != committed {
			t.Fatalf("later retry %d: status %d replayed %q same body %v", i, rr.status, rr.header.Get("Idempotent-Replayed"), string(rr.body) == committed)
		}
	}
	if got := simCalls(t, simP.URL); got != 2 {
		t.Fatalf("replays reached the provider: %d calls", got)
	}
	gw.kill()

	bg := context.Background()
	store, err := sqlite.Open(bg, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := ledger.OpenWriter(bg, store, ledger.WriterOptions{JournalDir: journal})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close(bg)
	attempts := map[int]int{}
	replays := 0
	_ = store.ScanLedger(bg, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		switch e.Outcome {
		case groundhog.OutcomeUpstream:
			attempts[e.Attempt]++
			if e.Cost <= 0 {
				t.Errorf("attempt %d row has cost %d", e.Attempt, e.Cost)
			}
		case groundhog.OutcomeReplayed:
			replays++
		}
		return nil
	})
	if attempts[1] != 1 || attempts[2] != 1 {
		t.Fatalf("ledger upstream attempts %v, want one row for attempt 1 and one for attempt 2", attempts)
	}
	if replays != 3 {
		t.Fatalf("ledger replays = %d, want 3", replays)
	}
	rep, err := ledger.BuildReport(bg, store, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.Retries != 1 || rep.Total.RetryCost.Sign() <= 0 {
		t.Fatalf("report: retry_attempts %d retry_cost %s, want the recovery attempt and its cost", rep.Total.Retries, rep.Total.RetryCost)
	}
	op, err := store.GetOperationByKey(bg, groundhog.LocalTenant, "order-4711")
	if err != nil {
		t.Fatal(err)
	}
	if op.Status != groundhog.StatusCompleted || op.Attempts != 2 || op.FencingToken != 2 || !strings.Contains(committed, string(op.Result.Body[:20])) {
		t.Fatalf("record: status %s attempts %d token %d", op.Status, op.Attempts, op.FencingToken)
	}
}

func waitExit(t *testing.T, p *proc) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the crashing gateway did not exit")
	}
}
