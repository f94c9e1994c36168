package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// A worker that claimed an idempotency key and died (kill -9: no response,
// so no ledger row) leaves a running record under an expired lease. The
// call that takes it over books the lost attempt — attempt 1, cost unknown,
// never $0 — before running attempt 2, so the ledger shows both attempts
// and the report counts the retry as duplicate spend.
func TestTakeoverBooksTheLostAttempt(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	body := `{"model":"sim-small","messages":[{"role":"user","content":"a call whose first worker died"}]}`
	hash := hashOf(t, "chat", body)
	lease := h.Cfg.Idempotency.Lease

	// The dead worker: it claimed the key one lease and more ago and never
	// came back.
	_, outcome, err := h.DB.Begin(ctx, groundhog.BeginParams{Tenant: groundhog.LocalTenant, Key: "k-lost", RequestHash: hash,
		Owner: "dead-replica", Lease: lease, Retention: time.Hour, Now: time.Now().Add(-2 * lease)})
	if err != nil || outcome != groundhog.BeginClaimed {
		t.Fatalf("dead worker's claim: %s %v", outcome, err)
	}

	res, b := h.post("/v1/chat/completions", body, map[string]string{"Idempotency-Key": "k-lost"})
	if res.StatusCode != 200 {
		t.Fatalf("takeover call: %d %s", res.StatusCode, b)
	}
	// A replay of the same key afterwards is not an attempt.
	if res, _ := h.post("/v1/chat/completions", body, map[string]string{"Idempotency-Key": "k-lost"}); res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second call not replayed")
	}
	bill := h.bill()

	var attempts []groundhog.LedgerEntry
	for _, r := range h.ledgerRows() {
		if r.RequestHash == hash && r.Outcome == groundhog.OutcomeUpstream {
			attempts = append(attempts, r)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("upstream rows of the key = %d, want 2 (the lost attempt and the takeover): %+v", len(attempts), attempts)
	}
	lost, retry := attempts[0], attempts[1] // (time, id) order
	if lost.Attempt != 1 || lost.Cost != groundhog.CostUnknown || lost.FullCost != groundhog.CostUnknown || lost.Status != 0 || !lost.Idempotent {
		t.Errorf("lost attempt row: attempt %d cost %v full %v status %d idempotent %v; want 1, unknown, unknown, 0, true",
			lost.Attempt, lost.Cost, lost.FullCost, lost.Status, lost.Idempotent)
	}
	if retry.Attempt != 2 || retry.Cost != bill.USD || retry.Status != 200 {
		t.Errorf("takeover row: attempt %d cost %v status %d; want 2, the sim's bill %v, 200", retry.Attempt, retry.Cost, retry.Status, bill.USD)
	}

	// The lost attempt is booked when it began, a minute ago: the day is
	// one in which now is noon, so a run just after midnight UTC does not
	// report the two attempts on two days.
	now := time.Now().UTC()
	midday := time.FixedZone("midday", 12*3600-(now.Hour()*3600+now.Minute()*60+now.Second()))
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: now, Location: midday})
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Total
	spend, _ := tot.Spend.Money()
	retryCost, _ := tot.RetryCost.Money()
	if tot.UpstreamCalls != 2 || tot.Retries != 1 || retryCost != bill.USD || tot.UnknownCostCalls != 1 || spend != bill.USD || tot.Repeats != 2 {
		t.Errorf("report: upstream %d retries %d retry cost %v unknown %d spend %v repeats %d; want 2, 1, %v, 1, %v, 2 (the retry and the replay)",
			tot.UpstreamCalls, tot.Retries, retryCost, tot.UnknownCostCalls, spend, tot.Repeats, bill.USD, bill.USD)
	}
}
