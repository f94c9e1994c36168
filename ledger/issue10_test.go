package ledger

import (
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
