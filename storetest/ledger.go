package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

var ledgerTests = []suiteTest{
	{"Ledger/RoundTrip", testLedgerRoundTrip},
	{"Ledger/DuplicateIDs", testLedgerDuplicates},
	{"Ledger/Filter", testLedgerFilter},
	{"Ledger/Order", testLedgerOrder},
	{"Ledger/StopOnError", testLedgerStop},
	{"Ledger/Bulk", testLedgerBulk},
}

// ledgerRow is a row with every field set to a value distinct from its
// zero value and from the other fields.
func ledgerRow(id string, when time.Time) groundhog.LedgerEntry {
	return groundhog.LedgerEntry{
		ID:          id,
		Time:        when,
		Tenant:      "tenant-1",
		Operation:   "summarize",
		RequestHash: "sha256:" + id,
		Shape:       groundhog.ShapeMessages,
		Model:       "claude-haiku-4-5",
		Provider:    "anthropic",
		Outcome:     groundhog.OutcomeCacheHit,
		Status:      201,
		Usage: groundhog.Usage{InputTokens: 5000, CachedInputTokens: 4096, CacheWriteTokens: 512,
			CacheWrite1hTokens: 384, OutputTokens: 321},
		Cost:       12_345_678,
		Saved:      9_876_543_210,
		FullCost:   9_876_543_211,
		Latency:    1234567891 * time.Nanosecond,
		Attempt:    3,
		InFlight:   true,
		CacheOn:    true,
		Idempotent: true,
		Stream:     true,

		PromptCacheSaved:      -3_210_987_654, // negative: caching lost money
		PromptCacheBreak:      "volatile_in_prefix",
		PromptCacheLostTokens: 2_047,
		FanOutHeld:            true,
		ProviderCacheReason:   "input_changed",
		Session:               "run-42.sub:1",
		ParentSession:         "run-42",
		ResultBytes:           1_234_567,
	}
}

// scanAll collects the rows matching f.
func scanAll(t *testing.T, s Stores, f groundhog.LedgerFilter) []groundhog.LedgerEntry {
	t.Helper()
	var out []groundhog.LedgerEntry
	must(t, s.ScanLedger(ctx, f, func(e *groundhog.LedgerEntry) error {
		out = append(out, *e)
		return nil
	}), "ScanLedger")
	return out
}

func ids(rows []groundhog.LedgerEntry) []string {
	out := make([]string, len(rows))
	for i := range rows {
		out[i] = rows[i].ID
	}
	return out
}

// entryDiff compares rows field by field; times compare as instants.
func entryDiff(got, want groundhog.LedgerEntry) string {
	if !got.Time.Equal(want.Time) {
		return fmt.Sprintf("Time = %v, want %v", got.Time, want.Time)
	}
	got.Time, want.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("row = %+v, want %+v", got, want)
	}
	return ""
}

func testLedgerRoundTrip(t *testing.T, s Stores) {
	full := ledgerRow("a1", t0)
	other := groundhog.LedgerEntry{ // mostly zero values, unknown cost
		ID: "b2", Time: at(time.Nanosecond), Tenant: "tenant-2", Shape: groundhog.ShapeChat,
		Outcome: groundhog.OutcomeUpstream, Status: 200, Cost: groundhog.CostUnknown, FullCost: groundhog.CostUnknown, Attempt: 1,
		PromptCacheSaved: groundhog.CostUnknown,
		ResultBytes:      4096, // without the agent-run fields
	}
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{full, other}), "AppendLedger")
	got := scanAll(t, s, groundhog.LedgerFilter{})
	if len(got) != 2 {
		t.Fatalf("scanned %d rows, want 2", len(got))
	}
	for i, want := range []groundhog.LedgerEntry{full, other} {
		if d := entryDiff(got[i], want); d != "" {
			t.Errorf("row %d: %s", i, d)
		}
	}
	must(t, s.AppendLedger(ctx, nil), "AppendLedger(nil)")
}

func testLedgerDuplicates(t *testing.T, s Stores) {
	a, b, c := ledgerRow("a", at(1)), ledgerRow("b", at(2)), ledgerRow("c", at(3))
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{a, b}), "AppendLedger 1")
	// A replayed journal: b and a again (a with other content: the first
	// stored version wins), plus c, plus a duplicate inside the batch.
	a2 := a
	a2.Model = "changed"
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{b, c, a2, c}), "AppendLedger 2")
	got := scanAll(t, s, groundhog.LedgerFilter{})
	if want := []string{"a", "b", "c"}; !slices.Equal(ids(got), want) {
		t.Fatalf("ids = %v, want %v", ids(got), want)
	}
	if d := entryDiff(got[0], a); d != "" {
		t.Errorf("replayed row overwrote the stored one: %s", d)
	}
}

func testLedgerFilter(t *testing.T, s Stores) {
	row := func(id, tenant, op string, d time.Duration) groundhog.LedgerEntry {
		e := ledgerRow(id, at(d))
		e.Tenant, e.Operation = tenant, op
		return e
	}
	day := 24 * time.Hour
	rows := []groundhog.LedgerEntry{
		row("r1", "t1", "summarize", 0),
		row("r2", "t1", "extract", time.Hour),
		row("r3", "t2", "summarize", 2*time.Hour),
		row("r4", "t1", "summarize", day-time.Nanosecond),
		row("r5", "t1", "summarize", day), // first instant of the next window
		row("r6", "t2", "extract", day+time.Hour),
		row("r7", "t1", "", -time.Nanosecond),
	}
	must(t, s.AppendLedger(ctx, rows), "AppendLedger")
	for _, tc := range []struct {
		name string
		f    groundhog.LedgerFilter
		want []string
	}{
		{"all", groundhog.LedgerFilter{}, []string{"r7", "r1", "r2", "r3", "r4", "r5", "r6"}},
		{"tenant", groundhog.LedgerFilter{Tenant: "t1"}, []string{"r7", "r1", "r2", "r4", "r5"}},
		{"operation", groundhog.LedgerFilter{Operation: "summarize"}, []string{"r1", "r3", "r4", "r5"}},
		{"tenant and operation", groundhog.LedgerFilter{Tenant: "t2", Operation: "extract"}, []string{"r6"}},
		{"day: From inclusive, To exclusive", groundhog.LedgerFilter{From: t0, To: at(day)}, []string{"r1", "r2", "r3", "r4"}},
		{"next day", groundhog.LedgerFilter{From: at(day), To: at(2 * day)}, []string{"r5", "r6"}},
		{"tenant day", groundhog.LedgerFilter{Tenant: "t1", From: t0, To: at(day)}, []string{"r1", "r2", "r4"}},
		{"everything", groundhog.LedgerFilter{Tenant: "t1", Operation: "summarize", From: t0, To: at(2 * day)}, []string{"r1", "r4", "r5"}},
		{"open start", groundhog.LedgerFilter{To: t0}, []string{"r7"}},
		{"open end", groundhog.LedgerFilter{From: at(day)}, []string{"r5", "r6"}},
		{"empty range", groundhog.LedgerFilter{From: at(time.Minute), To: at(time.Minute)}, nil},
		{"unknown tenant", groundhog.LedgerFilter{Tenant: "t3"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(scanAll(t, s, tc.f)); !slices.Equal(got, tc.want) {
				t.Errorf("ids = %v, want %v", got, tc.want)
			}
		})
	}
}

func testLedgerOrder(t *testing.T, s Stores) {
	// Appended out of order, several per instant: scanned by (Time, ID).
	rows := []groundhog.LedgerEntry{
		ledgerRow("c", at(2*time.Second)),
		ledgerRow("b", at(time.Second)),
		ledgerRow("z", at(time.Second)),
		ledgerRow("a", at(2*time.Second)),
		ledgerRow("m", at(time.Second)),
		ledgerRow("y", t0),
	}
	must(t, s.AppendLedger(ctx, rows[:3]), "AppendLedger 1")
	must(t, s.AppendLedger(ctx, rows[3:]), "AppendLedger 2")
	if got, want := ids(scanAll(t, s, groundhog.LedgerFilter{})), []string{"y", "b", "m", "z", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("ids = %v, want %v", got, want)
	}
}

func testLedgerStop(t *testing.T, s Stores) {
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{ledgerRow("1", t0), ledgerRow("2", at(1)), ledgerRow("3", at(2))}), "AppendLedger")
	stop := errors.New("stop here")
	var seen []string
	err := s.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		seen = append(seen, e.ID)
		if e.ID == "2" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("ScanLedger = %v, want fn's error", err)
	}
	if want := []string{"1", "2"}; !slices.Equal(seen, want) {
		t.Errorf("fn saw %v, want %v", seen, want)
	}
	// The store is still usable after an interrupted scan.
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{ledgerRow("4", at(3))}), "AppendLedger after stop")
}

func testLedgerBulk(t *testing.T, s Stores) {
	// 1,003 rows in one call: not a multiple of any plausible batch size.
	const n = 1003
	rows := make([]groundhog.LedgerEntry, n)
	for i := range rows {
		rows[i] = ledgerRow(fmt.Sprintf("bulk-%05d", i), at(time.Duration(i)*time.Millisecond))
		rows[i].Attempt = i
	}
	must(t, s.AppendLedger(ctx, rows), "AppendLedger")
	// A replay of the second half with other content changes nothing.
	replay := slices.Clone(rows[500:])
	for i := range replay {
		replay[i].Model = "replayed"
	}
	must(t, s.AppendLedger(ctx, replay), "AppendLedger replay")
	got := scanAll(t, s, groundhog.LedgerFilter{})
	if len(got) != n {
		t.Fatalf("scanned %d rows, want %d", len(got), n)
	}
	for i := range got {
		if d := entryDiff(got[i], rows[i]); d != "" {
			t.Fatalf("row %d: %s", i, d)
		}
	}
}
