package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// A leader whose client gives up (a timeout) while a follower still waits:
// the upstream call goes on for the follower, its cost is recorded under
// the leader's call (outcome upstream, status 499), and the leader's
// idempotency record gets the result, so the client's retry is a replay
// and the provider is paid once.
func TestLeaderClientGoneStillAccountsAndCommits(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"slow answer"}]}`
	hash := hashOf(t, "chat", body)

	ctx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Groundhog-Cache", "use")
		req.Header.Set("Idempotency-Key", "job-7")
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		leaderDone <- err
	}()
	<-g.arrived // the leader's flight is at the provider
	followerDone := make(chan *http.Response, 1)
	go func() {
		r, _ := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use"})
		followerDone <- r
	}()
	waitFor(t, func() bool { return h.GW.Followers("local", hash) == 1 })
	cancel() // the leader's client times out
	if err := <-leaderDone; err == nil {
		t.Fatal("the leader's request should have been cancelled")
	}
	// The client has left; the gateway notices when its connection closes.
	// Until its handler has returned, an answer arriving now would still be
	// written to the leader (a 200 into a dead socket), not abandoned.
	waitFor(t, func() bool { return h.Running.Load() == 1 }) // the follower alone
	g.open()
	if r := <-followerDone; r.StatusCode != 200 || r.Header.Get("Groundhog-Cache") != "coalesced" {
		t.Fatalf("follower: %d %q", r.StatusCode, r.Header.Get("Groundhog-Cache"))
	}
	waitFor(t, func() bool { return len(h.ledgerRows()) == 2 })
	var leader, follower *groundhog.LedgerEntry
	rows := h.ledgerRows()
	for i := range rows {
		switch rows[i].Outcome {
		case groundhog.OutcomeUpstream:
			leader = &rows[i]
		case groundhog.OutcomeCoalesced:
			follower = &rows[i]
		}
	}
	if leader == nil || follower == nil {
		t.Fatalf("rows %+v", rows)
	}
	if leader.Status != 499 || leader.Cost <= 0 || leader.Usage.OutputTokens == 0 || !leader.Idempotent || leader.Attempt != 1 {
		t.Fatalf("leader row: %+v", *leader)
	}
	if follower.Saved != leader.Cost {
		t.Fatalf("follower saved %d, leader cost %d", follower.Saved, leader.Cost)
	}
	if bill := h.bill(); bill.Calls != 1 || bill.USD != leader.Cost {
		t.Fatalf("sim bill %d calls $%s vs ledger $%s", bill.Calls, bill.USD, leader.Cost)
	}
	// The leader's client retries with its key: the stored result, no new call.
	// The orphaned leader records its row before it settles the claim: wait
	// for the record to be terminal, as the row already is.
	waitFor(t, func() bool {
		op, err := h.Idem.GetByKey(context.Background(), groundhog.LocalTenant, "job-7")
		return err == nil && op.Status.Terminal()
	})
	r, _ := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use", "Idempotency-Key": "job-7"})
	if r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "true" || h.bill().Calls != 1 {
		t.Fatalf("retry: %d replayed=%q bill=%d", r.StatusCode, r.Header.Get("Idempotent-Replayed"), h.bill().Calls)
	}
}
