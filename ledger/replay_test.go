package ledger

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// TestReplayCountedOnce: two calls with one
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
	if tot.Saved != groundhog.TotalOf(cost) || tot.ShadowSaved.Sign() != 0 {
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

// TestAnalyzeLargeAmountsExact: three identical lines
// costing $200,000 each — the projection (30 × $400,000 of shadow savings)
// is past int64 picodollars, and must be exact, not wrapped negative.
func TestAnalyzeLargeAmountsExact(t *testing.T) {
	var lines []string
	for i := range 3 {
		lines = append(lines, logLine(fmt.Sprintf("2025-03-14T10:00:0%dZ", i), "op", "a", `,"duration_ms":10,"cost_usd":200000`))
	}
	reps, _ := analyze(t, strings.Join(lines, "\n"), AnalyzeOptions{})
	tot := reps[0].Total
	for _, c := range []struct {
		name string
		got  groundhog.Total
		want string
	}{
		{"spend", tot.Spend, "600000.000000"},
		{"shadow", tot.ShadowSaved, "400000.000000"},
		{"repeat cost", tot.RepeatCost, "400000.000000"},
		{"projected", tot.Projected30d, "12000000.000000"},
	} {
		if s := c.got.String(); s != c.want {
			t.Errorf("%s = %s, want %s", c.name, s, c.want)
		}
	}
	var js strings.Builder
	if err := reps[0].WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"projected_30d_usd": 12000000.000000`) {
		t.Fatalf("JSON:\n%s", js.String())
	}
}

// TestReportOverflowIsAnError: a figure past the exact range is an error
// from the report, never a number.
func TestReportOverflowIsAnError(t *testing.T) {
	huge := groundhog.TotalOf(1 << 62).Times(1 << 62).Times(1 << 3) // 2^127: out of range
	if !huge.Overflow() {
		t.Fatal("test premise: 2^127 overflows")
	}
	rep := &Report{Day: "2025-03-14", Total: Row{Projected30d: huge}}
	if err := rep.Err(); err == nil {
		t.Fatal("an overflowed figure is not an error")
	}
	var js strings.Builder
	if err := rep.WriteJSON(&js); err == nil {
		t.Fatalf("overflowed figure written as JSON: %s", js.String())
	}
}
