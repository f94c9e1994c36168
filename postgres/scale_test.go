package postgres

import (
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// TestReportAtScale is opt-in (GROUNDHOG_BENCH_PG_ROWS=10000000): it COPYs
// that many rows into one UTC day of a partitioned ledger (plus a day on each
// side, 1% as many rows each, that the report must not read), then builds
// that day's report with ledger.BuildReport — what `groundhog report` does —
// and logs how long the report took: from the rollups (after
// RebuildLedgerRollup, COPY bypassing AppendLedger) and by scanning the rows
// (skip that with GROUNDHOG_BENCH_PG_SCAN=0), which must give the same report. The figure is a measurement, not an
// assertion (a shared machine's timing is no pass/fail criterion); the test
// does assert that the report counted exactly the day's rows.
func TestReportAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GROUNDHOG_BENCH_PG_ROWS"))
	if n <= 0 {
		t.Skip("set GROUNDHOG_BENCH_PG_ROWS (e.g. 10000000) to measure the report over that many PostgreSQL ledger rows")
	}
	db := openTest(t)
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	side := max(n/100, 1)

	start := time.Now()
	copyRows(t, db, "before-", side, day.Add(-24*time.Hour))
	copyRows(t, db, "day-", n, day)
	copyRows(t, db, "after-", side, day.Add(24*time.Hour))
	if _, err := db.pool.Exec(ctx, "ANALYZE ledger"); err != nil {
		t.Fatal(err)
	}
	t.Logf("COPY of %d rows (+%d on each side) and ANALYZE: %v (%.0f rows/s)", n, side,
		time.Since(start).Round(time.Millisecond), float64(n+2*side)/time.Since(start).Seconds())

	// COPY bypasses AppendLedger: build the day's rollups as migration 0005
	// does for existing rows.
	start = time.Now()
	if err := db.RebuildLedgerRollup(ctx, day); err != nil {
		t.Fatal(err)
	}
	t.Logf("rollup rebuild of the day (%d rows): %v (%.0f rows/s)", n, time.Since(start).Round(time.Millisecond),
		float64(n)/time.Since(start).Seconds())

	for _, tenant := range []string{"", "tenant-3"} {
		p := ledger.ReportParams{Day: day, Tenant: tenant}
		start = time.Now()
		rep, err := ledger.BuildReport(ctx, db, p) // from the rollups
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		want := int64(n)
		if tenant != "" {
			if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM ledger WHERE tenant = $1 AND time >= $2 AND time < $3",
				tenant, day.UnixNano(), day.Add(24*time.Hour).UnixNano()).Scan(&want); err != nil {
				t.Fatal(err)
			}
		}
		if rep.Total.Calls != want {
			t.Fatalf("report (tenant %q) counted %d calls, want %d", tenant, rep.Total.Calls, want)
		}
		t.Logf("report of one day from the rollups, tenant %q: %d rows in %v (goal for 10M rows: < 5 s)",
			tenant, rep.Total.Calls, took.Round(time.Microsecond))
		if os.Getenv("GROUNDHOG_BENCH_PG_SCAN") == "0" {
			continue
		}
		start = time.Now()
		scan, err := ledger.BuildReport(ctx, scanOnly{db}, p) // the day's rows through the Accumulator
		if err != nil {
			t.Fatal(err)
		}
		scanTook := time.Since(start)
		if !reflect.DeepEqual(rep, scan) {
			t.Fatalf("report from the rollups\n%+v\ndiffers from the scan's\n%+v", rep, scan)
		}
		t.Logf("same report by scanning the day's rows: %v (%.0f ns/row); scan / rollup = %.0f×",
			scanTook.Round(time.Millisecond), float64(scanTook.Nanoseconds())/float64(scan.Total.Calls),
			float64(scanTook)/float64(took))
	}
}

// copyRows COPYs n rows spread evenly over the UTC day from day, generated
// as COPY consumes them (never all in memory).
func copyRows(t *testing.T, db *DB, prefix string, n int, day time.Time) {
	t.Helper()
	if err := db.ensureLedgerDays(ctx, []int64{dayOf(day.UnixNano())}); err != nil {
		t.Fatal(err)
	}
	step := 24 * time.Hour / time.Duration(n)
	const chunk = 10_000
	var (
		buf  []groundhog.LedgerEntry
		next int
		row  []any
	)
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if next == n {
			return nil, nil
		}
		if next%chunk == 0 {
			buf = benchRows(prefix+strconv.Itoa(next)+"-", min(chunk, n-next), day.Add(time.Duration(next)*step), step)
		}
		e := &buf[next%chunk]
		next++
		row = append(row[:0], e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, e.RequestHash, string(e.Shape), e.Model,
			e.Provider, string(e.Outcome), int32(e.Status), e.Usage.InputTokens, e.Usage.CachedInputTokens,
			e.Usage.CacheWriteTokens, e.Usage.OutputTokens, int64(e.Cost), int64(e.Saved), int64(e.FullCost),
			int64(e.Latency), int32(e.Attempt), e.InFlight, e.CacheOn, e.Idempotent, e.Stream,
			e.Usage.CacheWrite1hTokens, int64(e.PromptCacheSaved), e.PromptCacheBreak, e.PromptCacheLostTokens, e.FanOutHeld)
		return row, nil
	})
	cols := []string{"id", "time", "tenant", "operation", "request_hash", "shape", "model", "provider", "outcome", "status",
		"input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "cost", "saved", "full_cost",
		"latency", "attempt", "in_flight", "cache_on", "idempotent", "stream",
		"cache_write_1h_tokens", "prompt_cache_saved", "prompt_cache_break", "prompt_cache_lost_tokens", "fan_out_held"}
	got, err := db.pool.CopyFrom(ctx, pgx.Identifier{"ledger"}, cols, src)
	if err != nil {
		t.Fatalf("COPY: %v", err)
	}
	if got != int64(n) {
		t.Fatalf("COPY stored %d rows, want %d", got, n)
	}
}
