package ledger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// TestReplayCountedOnce (issue 10 item 9): two calls with one
// Idempotency-Key and the cache off — the second is a replayed repeat. Its
// avoided cost is in saved, not also in shadow saved, so the projection
// counts it once.
func TestReplayCountedOnce(t *testing.T) {
	cost := 58 * groundhog.Microdollar
	first := row(1, time.Minute, "op", "h", cost)
	first.FullCost = cost
	replay := row(2, 2*time.Minute, "op", "h", 0)
	replay.Outcome, replay.Saved, replay.FullCost = groundhog.OutcomeReplayed, cost, cost
	acc := NewAccumulator("")
	acc.Add(&first)
	acc.Add(&replay)
	tot := acc.Report("2025-03-14").Total
	if tot.Saved != cost || tot.ShadowSaved != 0 {
		t.Fatalf("saved %s shadow %s, want saved %s and shadow 0", tot.Saved, tot.ShadowSaved, cost)
	}
	if got, want := tot.Projected30d.String(), "0.001740"; got != want {
		t.Fatalf("projected_30d = %s, want %s", got, want)
	}
}

// TestWithPendingMergesOnce: journal rows join the store's in (Time, ID)
// order, filtered like the store's, and a row in both counts once.
func TestWithPendingMergesOnce(t *testing.T) {
	db := openDB(t)
	stored := []groundhog.LedgerEntry{row(1, time.Minute, "a", "x", 0), row(3, 3*time.Minute, "a", "y", 0)}
	appendRows(t, db, stored)
	other := row(5, 2*time.Minute, "a", "z", 0)
	other.Tenant = "globex"
	pending := []groundhog.LedgerEntry{row(4, 4*time.Minute, "a", "x", 0), stored[1], row(2, 2*time.Minute, "b", "x", 0), other}
	var got []string
	err := WithPending(db, pending).ScanLedger(context.Background(), groundhog.LedgerFilter{Tenant: "acme"}, func(e *groundhog.LedgerEntry) error {
		got = append(got, e.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "00000001 00000002 00000003 00000004"; strings.Join(got, " ") != want {
		t.Fatalf("scan = %v, want %s", got, want)
	}
}
