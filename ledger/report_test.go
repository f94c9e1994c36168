package ledger

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests need zones on machines without zoneinfo

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// openDB opens a fresh SQLite store in the test's temp dir.
func openDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func appendRows(t testing.TB, db groundhog.LedgerStore, rows []groundhog.LedgerEntry) {
	t.Helper()
	for len(rows) > 0 {
		n := min(len(rows), 5000)
		if err := db.AppendLedger(context.Background(), rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
}

var day0 = time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)

// row builds an upstream ledger row of operation op for request hash h at
// day0+at, costing cost.
func row(id int, at time.Duration, op, h string, cost groundhog.Money) groundhog.LedgerEntry {
	return groundhog.LedgerEntry{
		ID: fmt.Sprintf("%08d", id), Time: day0.Add(at), Tenant: "acme", Operation: op,
		RequestHash: "sha256:" + h, Outcome: groundhog.OutcomeUpstream, Status: 200,
		Cost: cost, FullCost: cost,
	}
}

// workedExample returns calls rows of which repeats re-send an earlier
// request, each costing $0.004, all on day0 with the cache off.
func workedExample(calls, repeats int) []groundhog.LedgerEntry {
	price := 4 * groundhog.Dollar / 1000
	rows := make([]groundhog.LedgerEntry, 0, calls)
	for i := range calls {
		h := fmt.Sprintf("distinct-%d", i)
		if i >= calls-repeats {
			h = fmt.Sprintf("distinct-%d", i-(calls-repeats)) // repeats one of the first calls
		}
		rows = append(rows, row(i, time.Duration(i)*time.Second, "summarize", h, price))
	}
	return rows
}

func TestWorkedExample(t *testing.T) {
	// docs/measure.md's worked example: 40,000 calls, 6,000 repeats -> 15 %; at $0.004 a call
	// that is $24 a day, $720 in 30 days. Exactly, at full scale through
	// the Accumulator and scaled 4,000/600 through SQLite.
	for _, c := range []struct {
		name                     string
		calls, repeats           int
		viaStore                 bool
		repeatCost, projected30d string
	}{
		{"accumulator 40000/6000", 40_000, 6_000, false, "24.000000", "720.000000"},
		{"sqlite 4000/600", 4_000, 600, true, "2.400000", "72.000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := workedExample(c.calls, c.repeats)
			var rep *Report
			if c.viaStore {
				db := openDB(t)
				appendRows(t, db, rows)
				var err error
				rep, err = BuildReport(context.Background(), db, ReportParams{Day: day0.Add(5 * time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				acc := NewAccumulator("")
				for i := range rows {
					acc.Add(&rows[i])
				}
				rep = acc.Report("2025-03-14")
			}
			tot := rep.Total
			if tot.Calls != int64(c.calls) || tot.Repeats != int64(c.repeats) || tot.Distinct != int64(c.calls-c.repeats) {
				t.Fatalf("calls/repeats/distinct = %d/%d/%d", tot.Calls, tot.Repeats, tot.Distinct)
			}
			if tot.RepeatShare != 0.15 {
				t.Errorf("repeat share = %v, want 0.15", tot.RepeatShare)
			}
			if got := tot.RepeatCost.String(); got != c.repeatCost {
				t.Errorf("repeat cost = %s, want %s", got, c.repeatCost)
			}
			if got := tot.ShadowSaved.String(); got != c.repeatCost {
				t.Errorf("shadow saved = %s, want %s (cache off)", got, c.repeatCost)
			}
			if got := tot.Projected30d.String(); got != c.projected30d {
				t.Errorf("projected 30d = %s, want %s", got, c.projected30d)
			}
			if len(rep.Operations) != 1 || !reflect.DeepEqual(rep.Operations[0].RepeatCost, tot.RepeatCost) {
				t.Errorf("operations = %+v", rep.Operations)
			}
			var js bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"repeat_share": 0.1500`, `"repeat_cost_usd": ` + c.repeatCost, `"projected_30d_usd": ` + c.projected30d} {
				if !strings.Contains(js.String(), want) {
					t.Errorf("JSON lacks %s:\n%s", want, js.String())
				}
			}
		})
	}
}

func TestRowDefinitions(t *testing.T) {
	p := 1 * groundhog.Dollar
	mk := func(id int, op, h string, o groundhog.Outcome, cost, saved, full groundhog.Money, inFlight, cacheOn bool) groundhog.LedgerEntry {
		r := row(id, time.Duration(id)*time.Minute, op, h, cost)
		r.Outcome, r.Saved, r.FullCost, r.InFlight, r.CacheOn = o, saved, full, inFlight, cacheOn
		return r
	}
	unknown := groundhog.CostUnknown
	rows := []groundhog.LedgerEntry{
		mk(1, "a", "x", groundhog.OutcomeUpstream, p, 0, p, false, true),              // first x
		mk(2, "a", "x", groundhog.OutcomeCoalesced, 0, p, p, true, true),              // concurrent repeat, coalesced
		mk(3, "a", "x", groundhog.OutcomeCacheHit, 0, p, p, false, true),              // sequential repeat, cache hit
		mk(4, "b", "x", groundhog.OutcomeUpstream, 2*p, 0, 2*p, false, false),         // repeat of a's hash in b, cache off: shadow
		mk(5, "b", "y", groundhog.OutcomeUpstream, unknown, 0, unknown, false, false), // unknown model
		mk(6, "b", "y", groundhog.OutcomeUpstream, unknown, 0, unknown, true, false),  // repeat, unknown cost
		mk(7, "b", "z", groundhog.OutcomeReplayed, 0, p, p, false, false),             // idempotent replay, first z
		mk(8, "b", "z", groundhog.OutcomeError, 0, 0, 0, false, false),                // failed repeat
		mk(9, "a", "w", groundhog.OutcomeRejected, 0, 0, 0, false, true),
	}
	// Another tenant's identical hash is a different request.
	other := mk(10, "a", "w", groundhog.OutcomeUpstream, p, 0, p, false, true)
	other.Tenant = "globex"
	rows = append(rows, other)

	acc := NewAccumulator("")
	for i := range rows {
		acc.Add(&rows[i])
	}
	rep := acc.Report("2025-03-14")
	want := Report{Day: "2025-03-14", Operations: []Row{
		{Operation: "a", Calls: 5, Distinct: 2 + 1, Repeats: 2, RepeatShare: 0.4, RepeatCost: groundhog.TotalOf(2 * p),
			ConcurrentIdentical: 1, CacheHits: 1, Coalesced: 1, UpstreamCalls: 2, Spend: groundhog.TotalOf(2 * p), Saved: groundhog.TotalOf(2 * p),
			Projected30d: groundhog.TotalOf(60 * p)},
		{Operation: "b", Calls: 5, Distinct: 3, Repeats: 3, RepeatShare: 0.6, RepeatCost: groundhog.TotalOf(2 * p),
			ConcurrentIdentical: 1, Replayed: 1, UpstreamCalls: 3, Spend: groundhog.TotalOf(2 * p), Saved: groundhog.TotalOf(p), ShadowSaved: groundhog.TotalOf(2 * p),
			Projected30d: groundhog.TotalOf(90 * p), UnknownCostCalls: 2},
	}, Total: Row{Calls: 10, Distinct: 5, Repeats: 5, RepeatShare: 0.5, RepeatCost: groundhog.TotalOf(4 * p), ConcurrentIdentical: 2,
		CacheHits: 1, Coalesced: 1, Replayed: 1, UpstreamCalls: 5, Spend: groundhog.TotalOf(4 * p), Saved: groundhog.TotalOf(3 * p), ShadowSaved: groundhog.TotalOf(2 * p),
		Projected30d: groundhog.TotalOf(150 * p), UnknownCostCalls: 2}}
	if !reflect.DeepEqual(*rep, want) {
		t.Fatalf("report\n got %+v\nwant %+v", *rep, want)
	}

	// Filtering on b gives b's row exactly as in the full report: its
	// first call repeats a hash first seen in a.
	db := openDB(t)
	appendRows(t, db, rows)
	only, err := BuildReport(context.Background(), db, ReportParams{Day: day0, Operation: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(only.Operations) != 1 || !reflect.DeepEqual(only.Operations[0], want.Operations[1]) {
		t.Fatalf("filtered operations = %+v", only.Operations)
	}
	wantTotal := want.Operations[1]
	wantTotal.Operation = ""
	if !reflect.DeepEqual(only.Total, wantTotal) {
		t.Fatalf("filtered total = %+v, want %+v", only.Total, wantTotal)
	}
	// The tenant filter: globex has one call, no repeat.
	g, err := BuildReport(context.Background(), db, ReportParams{Day: day0, Tenant: "globex"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Total.Calls != 1 || g.Total.Repeats != 0 || g.Total.Spend != groundhog.TotalOf(p) {
		t.Fatalf("globex total = %+v", g.Total)
	}
}

func TestRepeatsAreSameDayOnly(t *testing.T) {
	// A call repeating yesterday's request is not a repeat today; the day
	// boundary is midnight in the report's zone.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	p := groundhog.Dollar
	// day0 is 2025-03-14 00:00 UTC = 2025-03-13 20:00 in New York (EDT).
	rows := []groundhog.LedgerEntry{
		row(1, -1*time.Hour, "op", "x", p),                // 03-13 23:00 UTC, 19:00 NY
		row(2, 1*time.Hour, "op", "x", p),                 // 03-14 01:00 UTC, 21:00 NY (03-13)
		row(3, 5*time.Hour, "op", "x", p),                 // 03-14 05:00 UTC, 01:00 NY (03-14)
		row(4, 23*time.Hour+59*time.Minute, "op", "x", p), // 03-14 23:59 UTC, 19:59 NY
	}
	db := openDB(t)
	appendRows(t, db, rows)
	for _, c := range []struct {
		loc         *time.Location
		day         string
		calls, reps int64
	}{
		{time.UTC, "2025-03-13", 1, 0},
		{time.UTC, "2025-03-14", 3, 2}, // rows 2,3,4: 2 is the first that day
		{ny, "2025-03-13", 2, 1},       // rows 1,2
		{ny, "2025-03-14", 2, 1},       // rows 3,4: 3 is not a repeat of 2
	} {
		d, err := ParseDay(c.day, c.loc, day0)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := BuildReport(context.Background(), db, ReportParams{Day: d, Location: c.loc})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Day != c.day || rep.Total.Calls != c.calls || rep.Total.Repeats != c.reps {
			t.Errorf("%s %s: day %s calls %d repeats %d, want %d %d", c.loc, c.day, rep.Day, rep.Total.Calls, rep.Total.Repeats, c.calls, c.reps)
		}
	}
}

func TestParseDay(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 2025-03-09 is the DST change in New York: a 23-hour day.
	now := time.Date(2025, 3, 10, 3, 0, 0, 0, time.UTC) // 03-09 23:00 EDT
	for _, c := range []struct {
		in      string
		loc     *time.Location
		want    time.Time
		wantErr bool
	}{
		{"2025-03-14", nil, time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC), false},
		{"today", time.UTC, time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC), false},
		{"yesterday", time.UTC, time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC), false},
		{"today", ny, time.Date(2025, 3, 9, 0, 0, 0, 0, ny), false},
		{"Yesterday", ny, time.Date(2025, 3, 8, 0, 0, 0, 0, ny), false},
		{"2025-03-09", ny, time.Date(2025, 3, 9, 0, 0, 0, 0, ny), false},
		{"2025-3-9", nil, time.Time{}, true},
		{"2025-02-30", nil, time.Time{}, true},
		{"tomorrow", nil, time.Time{}, true},
	} {
		got, err := ParseDay(c.in, c.loc, now)
		if c.wantErr {
			if groundhog.ErrorCode(err) != groundhog.EINVALID {
				t.Errorf("ParseDay(%q) err = %v, want EINVALID", c.in, err)
			}
			continue
		}
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseDay(%q, %v) = %v, %v; want %v", c.in, c.loc, got, err, c.want)
		}
	}
	start, end := DayBounds(time.Date(2025, 3, 9, 12, 0, 0, 0, ny), ny)
	if end.Sub(start) != 23*time.Hour {
		t.Errorf("DST day is %v long, want 23h", end.Sub(start))
	}
}

func TestOutputs(t *testing.T) {
	p := groundhog.Dollar / 250 // $0.004
	rows := []groundhog.LedgerEntry{row(1, 0, "summarize", "x", p), row(2, time.Second, "summarize", "x", p), row(3, 2*time.Second, "extract", "y", groundhog.CostUnknown)}
	acc := NewAccumulator("")
	for i := range rows {
		acc.Add(&rows[i])
	}
	rep := acc.Report("2025-03-14")

	t.Run("json keys", func(t *testing.T) {
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if got := sortedKeys(doc); got != "day,operations,retry_attempts,retry_cost_usd,tool_total,tools,total,unknown_cost_calls,unknown_rent_days" {
			t.Fatalf("top-level keys = %s", got)
		}
		rowKeys := "calls,concurrent_identical,distinct,projected_30d_usd,repeat_cost_usd,repeat_share,repeats,replayed,saved_usd,shadow_saved_usd,spend_usd,cache_rent_usd,upstream_calls,cache_hits,coalesced" +
			",cached_read_tokens,cache_write_tokens,cache_write_1h_tokens,uncached_input_tokens,prompt_cache_hit_ratio,prompt_cache_saved_usd,prompt_cache_unknown_calls,prompt_cache_breaks,prompt_cache_agreement,fan_out_held,fan_out_write_tokens_avoided"
		want := sortKeyList(rowKeys)
		var total map[string]json.RawMessage
		json.Unmarshal(doc["total"], &total)
		if got := sortedKeys(total); got != want {
			t.Errorf("total keys = %s, want %s", got, want)
		}
		var ops []map[string]json.RawMessage
		json.Unmarshal(doc["operations"], &ops)
		if len(ops) != 2 {
			t.Fatalf("operations = %d", len(ops))
		}
		if got := sortedKeys(ops[0]); got != sortKeyList(rowKeys+",operation") {
			t.Errorf("operation keys = %s", got)
		}
		if string(ops[1]["operation"]) != `"summarize"` || string(ops[1]["spend_usd"]) != "0.008000" || string(ops[1]["repeat_share"]) != "0.5000" {
			t.Errorf("summarize = %s %s %s", ops[1]["operation"], ops[1]["spend_usd"], ops[1]["repeat_share"])
		}
		if string(doc["unknown_cost_calls"]) != "1" || string(doc["day"]) != `"2025-03-14"` {
			t.Errorf("unknown_cost_calls = %s, day = %s", doc["unknown_cost_calls"], doc["day"])
		}
	})
	t.Run("csv", func(t *testing.T) {
		var b bytes.Buffer
		if err := rep.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(csvHeader, ",") {
			t.Fatalf("csv = %v", recs)
		}
		last := recs[3]
		if last[1] != "total" || last[2] != "3" || last[4] != "1" || last[16] != "1" || last[12] != "0.008000" || last[17] != "0" || last[18] != "0.000000" {
			t.Errorf("total line = %v", last)
		}
	})
	t.Run("table", func(t *testing.T) {
		var b bytes.Buffer
		if err := rep.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"2025-03-14", "summarize", "extract", "total", "33.33%", "0.008000", "note: 1 call(s) have an unknown cost"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		// Aligned: the header and data lines of the table have one width.
		if len(lines[2]) != len(lines[3]) || len(lines[3]) != len(lines[5]) {
			t.Errorf("table not aligned:\n%s", out)
		}
	})
}

func sortedKeys(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return sortKeyList(strings.Join(keys, ","))
}

func sortKeyList(s string) string {
	keys := strings.Split(s, ",")
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return strings.Join(keys, ",")
}

func TestEmptyDay(t *testing.T) {
	db := openDB(t)
	rep, err := BuildReport(context.Background(), db, ReportParams{Day: day0})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"operations": []`) || rep.Total.RepeatShare != 0 {
		t.Fatalf("empty report = %s", b.String())
	}
}

// An idempotent operation re-run after a lost lease (attempt 2) is counted
// as a retry with its cost, apart from the first attempt.
func TestRetriesAreVisible(t *testing.T) {
	a := NewAccumulator("")
	at := time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC)
	for i, attempt := range []int{1, 2} {
		a.Add(&groundhog.LedgerEntry{ID: fmt.Sprint(i), Time: at.Add(time.Duration(i) * time.Minute), Tenant: "t", Operation: "pay",
			RequestHash: "sha256:x", Outcome: groundhog.OutcomeUpstream, Attempt: attempt,
			Cost: 3 * groundhog.Microdollar, FullCost: 3 * groundhog.Microdollar, Idempotent: true})
	}
	rep := a.Report("2025-03-14")
	if rep.Total.Retries != 1 || rep.Total.RetryCost != groundhog.TotalOf(3*groundhog.Microdollar) || rep.Operations[0].Retries != 1 {
		t.Fatalf("retries %d cost %s", rep.Total.Retries, rep.Total.RetryCost)
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"retry_attempts": 1`) || !strings.Contains(b.String(), `"retry_cost_usd": 0.000003`) {
		t.Fatalf("json: %s", b.String())
	}
	b.Reset()
	_ = rep.WriteTable(&b)
	if !strings.Contains(b.String(), "1 upstream attempt(s) re-ran an idempotent operation") {
		t.Fatalf("table: %s", b.String())
	}
}

// TestReportCacheRent: the rows of outcome cache_rent are no calls. A
// report with them equals the report of the calls alone in every figure
// but Spend, CacheRent and UnknownRentDays: their known sum is in Spend
// and is CacheRent, per operation and in total; an unknown rent is left
// out of both and counted in UnknownRentDays, not in UnknownCostCalls. An
// operation with only rent on the day is a row of 0 calls.
func TestReportCacheRent(t *testing.T) {
	at := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	calls := []groundhog.LedgerEntry{
		{ID: "1", Time: at, Tenant: "t", Operation: "docs", RequestHash: "h1", Outcome: groundhog.OutcomeUpstream, Cost: 7, Saved: 0, FullCost: 7},
		{ID: "3", Time: at.Add(2 * time.Second), Tenant: "t", Operation: "docs", RequestHash: "h1", Outcome: groundhog.OutcomeCacheHit, Cost: 0, Saved: 7, FullCost: 7},
		{ID: "5", Time: at.Add(4 * time.Second), Tenant: "t", Operation: "docs", RequestHash: "h2", Outcome: groundhog.OutcomeUpstream, Cost: 11, Saved: 0, FullCost: 11},
	}
	rent := []groundhog.LedgerEntry{
		{ID: "2", Time: at.Add(time.Second), Tenant: "t", Operation: "docs", RequestHash: "r1", Outcome: groundhog.OutcomeCacheRent, Status: 200, Cost: 5, FullCost: 5},
		{ID: "4", Time: at.Add(3 * time.Second), Tenant: "t", Operation: "chat", RequestHash: "r2", Outcome: groundhog.OutcomeCacheRent, Status: 200, Cost: 3, FullCost: 3},
		{ID: "6", Time: at.Add(5 * time.Second), Tenant: "t", Operation: "chat", RequestHash: "r3", Outcome: groundhog.OutcomeCacheRent, Status: 200, Cost: groundhog.CostUnknown, FullCost: groundhog.CostUnknown},
	}
	onlyCalls, withRent := openDB(t), openDB(t)
	appendRows(t, onlyCalls, calls)
	appendRows(t, withRent, append(slices.Clone(calls), rent...))
	report := func(db groundhog.LedgerStore, op string) *Report {
		t.Helper()
		rep, err := BuildReport(context.Background(), db, ReportParams{Day: at, Operation: op})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	money := func(m groundhog.Money) groundhog.Total { return groundhog.Total{}.Add(m) }

	base, rep := report(onlyCalls, ""), report(withRent, "")
	if base.Total.Calls != 3 || base.Total.Distinct != 2 || base.Total.Repeats != 1 {
		t.Fatalf("calls alone: %+v", base.Total)
	}
	want := base.Total
	want.Spend, want.CacheRent, want.UnknownRentDays = money(7+11+5+3), money(5+3), 1
	if !reflect.DeepEqual(rep.Total, want) {
		t.Errorf("total\n%+v\nwant\n%+v", rep.Total, want)
	}
	if len(rep.Operations) != 2 {
		t.Fatalf("operations %+v", rep.Operations)
	}
	chat, docs := rep.Operations[0], rep.Operations[1]
	wantDocs := base.Operations[0]
	wantDocs.Spend, wantDocs.CacheRent = money(7+11+5), money(5)
	if !reflect.DeepEqual(docs, wantDocs) {
		t.Errorf("docs\n%+v\nwant\n%+v", docs, wantDocs)
	}
	if wantChat := (Row{Operation: "chat", Spend: money(3), CacheRent: money(3), UnknownRentDays: 1}); !reflect.DeepEqual(chat, wantChat) {
		t.Errorf("chat\n%+v\nwant\n%+v", chat, wantChat)
	}
	// Filtered to the operation with only rent: no call, its rent.
	if got := report(withRent, "chat"); got.Total.Calls != 0 || got.Total.Distinct != 0 || got.Total.CacheRent.String() != money(3).String() || got.Total.UnknownRentDays != 1 || len(got.Operations) != 1 {
		t.Errorf("chat only: %+v", got)
	}

	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"storage rent of explicit caches (included in spend): " + money(8).Format(6),
		"note: 1 day(s) of explicit-cache storage rent have an unknown cost"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
	if strings.Contains(b.String(), "call(s) have an unknown cost") {
		t.Errorf("table counts the unknown rent as a call:\n%s", b.String())
	}
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		UnknownCostCalls int64 `json:"unknown_cost_calls"`
		UnknownRentDays  int64 `json:"unknown_rent_days"`
		Total            struct {
			Calls    int64           `json:"calls"`
			Distinct int64           `json:"distinct"`
			Rent     json.RawMessage `json:"cache_rent_usd"`
		} `json:"total"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.UnknownCostCalls != 0 || doc.UnknownRentDays != 1 || doc.Total.Calls != 3 || doc.Total.Distinct != 2 || string(doc.Total.Rent) != money(8).Format(6) {
		t.Errorf("json: %s", b.String())
	}
	b.Reset()
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(recs[0], name) }
	total := recs[len(recs)-1]
	if total[col("calls")] != "3" || total[col("unknown_cost_calls")] != "0" || total[col("unknown_rent_days")] != "1" || total[col("cache_rent_usd")] != money(8).Format(6) {
		t.Errorf("csv total line %v", total)
	}
}
