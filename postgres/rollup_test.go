package postgres

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// scanOnly hides the store's rollups: BuildReport scans it through the
// Accumulator, the definition the rollups must reproduce.
type scanOnly struct{ groundhog.LedgerStore }

var rollupDay = time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC)

// randomLedger returns n random rows: most on rollupDay, some on each
// neighbouring day, several tenants and operations, hashes repeating
// within and across operations, ties in time (ordered by ID), unknown
// costs, retries, in-flight, cache-off rows, prompt-cache fields and
// break causes.
func randomLedger(rng *rand.Rand, prefix string, n int) []groundhog.LedgerEntry {
	outcomes := []groundhog.Outcome{groundhog.OutcomeUpstream, groundhog.OutcomeCacheHit, groundhog.OutcomeCoalesced,
		groundhog.OutcomeReplayed, groundhog.OutcomeRejected, groundhog.OutcomeError, groundhog.OutcomePassthrough, groundhog.OutcomeSuspectedDuplicate, groundhog.OutcomeCacheRent}
	causes := []string{"", "", "", "ttl_gap", "tools_reordered", "system_changed"}
	money := func() groundhog.Money {
		if rng.IntN(8) == 0 {
			return groundhog.CostUnknown
		}
		return groundhog.Money(rng.Int64N(5_000_000_000))
	}
	rows := make([]groundhog.LedgerEntry, n)
	for i := range rows {
		day := rollupDay
		switch rng.IntN(10) {
		case 0:
			day = day.Add(-24 * time.Hour)
		case 1:
			day = day.Add(24 * time.Hour)
		}
		// Few distinct instants, so ties in time are common.
		at := day.Add(time.Duration(rng.IntN(40)) * 36 * time.Minute)
		if rng.IntN(3) == 0 {
			at = at.Add(time.Duration(rng.IntN(1000)))
		}
		tenant := "tenant-" + fmt.Sprint(rng.IntN(3))
		e := groundhog.LedgerEntry{
			ID: fmt.Sprintf("%s%04x-%d", prefix, rng.IntN(1<<16), i), Time: at, Tenant: tenant,
			Operation:   "op-" + fmt.Sprint(rng.IntN(4)),
			RequestHash: fmt.Sprintf("sha256:%s-%d", tenant, rng.IntN(12)),
			Shape:       groundhog.ShapeChat, Model: "m", Provider: "sim",
			Outcome: outcomes[rng.IntN(len(outcomes))], Status: 200,
			Usage: groundhog.Usage{InputTokens: rng.Int64N(3000), OutputTokens: rng.Int64N(500)},
			Cost:  money(), Saved: money(), FullCost: money(),
			Attempt: 1 + rng.IntN(3), InFlight: rng.IntN(4) == 0, CacheOn: rng.IntN(2) == 0,
			PromptCacheBreak: causes[rng.IntN(len(causes))],
		}
		if rng.IntN(2) == 0 {
			e.Usage.CachedInputTokens = rng.Int64N(e.Usage.InputTokens + 1)
		}
		if rng.IntN(3) == 0 {
			e.Usage.CacheWriteTokens = rng.Int64N(2000) // may exceed the input: uncached stays ≥ 0
			e.Usage.CacheWrite1hTokens = rng.Int64N(e.Usage.CacheWriteTokens + 1)
		}
		switch rng.IntN(4) {
		case 0:
			e.PromptCacheSaved = groundhog.CostUnknown
		default:
			e.PromptCacheSaved = groundhog.Money(rng.Int64N(2_000_000) - 500_000)
		}
		if e.PromptCacheBreak != "" {
			e.PromptCacheLostTokens = rng.Int64N(4000)
		}
		e.FanOutHeld = rng.IntN(6) == 0
		if rng.IntN(3) == 0 {
			e.ProviderCacheReason = []string{"cache_hit", "input_changed", "tools_changed"}[rng.IntN(3)]
		}
		rows[i] = e
	}
	return rows
}

// appendShuffled appends rows in random order, in batches of random size,
// replaying one batch.
func appendShuffled(t *testing.T, rng *rand.Rand, db *DB, rows []groundhog.LedgerEntry) {
	t.Helper()
	rows = slices.Clone(rows)
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	var batches [][]groundhog.LedgerEntry
	for len(rows) > 0 {
		n := min(len(rows), 1+rng.IntN(60))
		batches = append(batches, rows[:n])
		rows = rows[n:]
	}
	if len(batches) > 1 {
		batches = append(batches, batches[rng.IntN(len(batches))]) // a journal replay
	}
	for _, b := range batches {
		if err := db.AppendLedger(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
}

// rollupFilters are the report parameters compared: no filter, a tenant,
// an operation, both, and filters matching nothing.
func rollupFilters() []ledger.ReportParams {
	var ps []ledger.ReportParams
	for _, tenant := range []string{"", "tenant-1", "nobody"} {
		for _, op := range []string{"", "op-2", "op-none"} {
			ps = append(ps, ledger.ReportParams{Day: rollupDay.Add(5 * time.Hour), Tenant: tenant, Operation: op})
		}
	}
	return ps
}

// sameReports fails unless BuildReport over store (rollups) equals
// BuildReport over the scan, for every filter (rollupFilters when none).
func sameReports(t *testing.T, agg, scan groundhog.LedgerStore, filters ...ledger.ReportParams) {
	t.Helper()
	if len(filters) == 0 {
		filters = rollupFilters()
	}
	for _, p := range filters {
		want, err := ledger.BuildReport(ctx, scan, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ledger.BuildReport(ctx, agg, p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tenant %q, operation %q: report from the rollups\n%+v\nwant (scan)\n%+v", p.Tenant, p.Operation, got, want)
		}
	}
}

// TestRollupReportEqualsScan: random workloads appended out of order, in
// batches, one replayed; the report from the rollups deep-equals the
// Accumulator's report from a scan, for every filter, and with pending
// journal rows (some already stored, some not, some earlier than stored
// first rows).
func TestRollupReportEqualsScan(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			db := openTest(t)
			rows := randomLedger(rng, "r", 400+rng.IntN(400))
			stored, held := rows[:len(rows)*3/4], rows[len(rows)*3/4:]
			appendShuffled(t, rng, db, stored)
			if rep, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay}); err != nil || rep.Total.Repeats == 0 || rep.Total.Calls == 0 {
				t.Fatalf("workload without repeats (%v): %+v", err, rep)
			}
			sameReports(t, db, scanOnly{db})

			// Pending rows: the held ones plus some already stored.
			pending := append(slices.Clone(held), stored[:20]...)
			sameReports(t, ledger.WithPending(db, pending), ledger.WithPending(scanOnly{db}, pending))
			// Pending rows are never kept.
			var n int
			if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM ledger").Scan(&n); err != nil || n != len(stored) {
				t.Fatalf("%d ledger rows after a report with pending rows (%v), want %d", n, err, len(stored))
			}
			// Then storing them gives the same figures.
			appendShuffled(t, rng, db, held)
			sameReports(t, db, scanOnly{db})
		})
	}
}

// TestRollupLateFirstRow: a row appended after a repeat of its hash but
// earlier in time becomes the first row: the repeat moves, also across
// operations.
func TestRollupLateFirstRow(t *testing.T) {
	db := openTest(t)
	at := rollupDay.Add(time.Hour)
	row := func(id string, d time.Duration, op string, full groundhog.Money) groundhog.LedgerEntry {
		return groundhog.LedgerEntry{ID: id, Time: at.Add(d), Tenant: "t", Operation: op, RequestHash: "h",
			Outcome: groundhog.OutcomeUpstream, Cost: full, FullCost: full, Attempt: 1}
	}
	if err := db.AppendLedger(ctx, []groundhog.LedgerEntry{row("b", time.Minute, "op-b", 7)}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendLedger(ctx, []groundhog.LedgerEntry{row("a", 0, "op-a", 5)}); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Operations) != 2 || rep.Operations[0].Repeats != 0 || rep.Operations[1].Repeats != 1 ||
		rep.Operations[1].RepeatCost != groundhog.TotalOf(7) || rep.Total.Distinct != 1 || rep.Operations[1].Distinct != 1 {
		t.Fatalf("report after a late first row: %+v", rep)
	}
	sameReports(t, db, scanOnly{db})
}

// TestRollupConcurrentReplicas: two replicas (two *DB on one schema) append
// overlapping rows (the same hashes, some of the same rows) at once.
func TestRollupConcurrentReplicas(t *testing.T) {
	u := freshSchema(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	rng := rand.New(rand.NewPCG(42, 1))
	rows := randomLedger(rng, "c", 1200)
	var wg sync.WaitGroup
	errs := make(chan error, 2*8)
	for r := range dbs {
		// Each replica appends two thirds of the rows (the middle third is
		// appended by both), in its own order and batches.
		mine := slices.Clone(rows[r*len(rows)/3 : r*len(rows)/3+2*len(rows)/3])
		rng := rand.New(rand.NewPCG(uint64(r), 2))
		rng.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
		for w := range 4 {
			part := mine[w*len(mine)/4 : (w+1)*len(mine)/4]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for len(part) > 0 {
					n := min(len(part), 25)
					if err := dbs[r].AppendLedger(ctx, part[:n]); err != nil {
						errs <- err
						return
					}
					part = part[n:]
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sameReports(t, dbs[0], scanOnly{dbs[1]})
}

// TestRollupRetention: dropping a day's ledger partition drops its rollups;
// an append to that day afterwards re-creates both.
func TestRollupRetention(t *testing.T) {
	db := openTest(t)
	rng := rand.New(rand.NewPCG(7, 7))
	appendShuffled(t, rng, db, randomLedger(rng, "k", 300))
	now := rollupDay.Add(2*24*time.Hour + 6*time.Hour) // retention 1 day at 04-04 06:00: 04-01 and 04-02 go, 04-03 stays
	if _, err := db.MaintainLedger(ctx, now, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	var names []string
	rows, err := db.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent IN ('ledger_rollup'::regclass, 'ledger_rollup_hash'::regclass, 'ledger_rollup_break'::regclass)`)
	if err != nil {
		t.Fatal(err)
	}
	names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, "_p20260401") || strings.HasSuffix(n, "_p20260402") {
			t.Errorf("rollup partition %s kept after its day was dropped", n)
		}
	}
	if !slices.Contains(names, "ledger_rollup_p20260403") {
		t.Errorf("no rollup partition of the day kept: %v", names)
	}
	rep, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay})
	if err != nil || rep.Total.Calls != 0 {
		t.Fatalf("report of a dropped day: %+v (%v)", rep, err)
	}
	appendShuffled(t, rng, db, randomLedger(rng, "late", 100))
	sameReports(t, db, scanOnly{db})
}

// TestMigrationBackfillsRollups: a ledger filled before migration 0005
// (0001–0003 era) has rollups equal to the scan once the store is opened.
func TestMigrationBackfillsRollups(t *testing.T) {
	u := freshSchema(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer NOT NULL PRIMARY KEY,
		name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range migs {
		if m.Version >= 4 {
			break
		}
		if err := applyMigration(ctx, conn, m); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 3))
	rows := randomLedger(rng, "m", 600)
	for i := range rows {
		rows[i].ProviderCacheReason = "" // no such column before 0006
	}
	insert, args := insertBefore0006(rows)
	if _, err := conn.Exec(ctx, insert, args...); err != nil {
		t.Fatalf("fill the old ledger: %v", err)
	}
	db, err := Open(ctx, u)
	if err != nil {
		t.Fatalf("Open (migrations 0004, 0005): %v", err)
	}
	defer db.Close()
	var n int
	if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM ledger_rollup_hash").Scan(&n); err != nil || n == 0 {
		t.Fatalf("no rollups after the migration (%v)", err)
	}
	sameReports(t, db, scanOnly{db})
	// Later appends build on the backfilled rollups.
	appendShuffled(t, rng, db, randomLedger(rng, "after", 200))
	sameReports(t, db, scanOnly{db})
	// A rebuild gives the same rollups.
	if err := db.RebuildLedgerRollup(ctx, rollupDay); err != nil {
		t.Fatal(err)
	}
	sameReports(t, db, scanOnly{db})
}

// TestRollupFreshWriter: a report through Writer.Fresh from the rollups
// includes the rows recorded but not yet committed (Fresh flushes first).
func TestRollupFreshWriter(t *testing.T) {
	db := openTest(t)
	w, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: t.TempDir(), FlushInterval: time.Hour, BatchSize: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	rng := rand.New(rand.NewPCG(5, 5))
	rows := randomLedger(rng, "w", 300)
	for _, e := range rows {
		if err := w.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ledger.BuildReport(ctx, w.Fresh(db), ledger.ReportParams{Day: rollupDay})
	if err != nil {
		t.Fatal(err)
	}
	want := 0 // the day's calls: its rows but those of cache rent
	for _, e := range rows {
		if e.Time.Sub(rollupDay) >= 0 && e.Time.Sub(rollupDay) < 24*time.Hour && e.Outcome != groundhog.OutcomeCacheRent {
			want++
		}
	}
	if rep.Total.Calls != int64(want) {
		t.Fatalf("report through Fresh counted %d calls, want %d", rep.Total.Calls, want)
	}
	sameReports(t, w.Fresh(db), w.Fresh(scanOnly{db}))
}

// TestRollupOtherTimeZone: a day that is not a UTC day is scanned (the
// rollups hold UTC days); a zone that is UTC under another name uses them.
func TestRollupOtherTimeZone(t *testing.T) {
	db := openTest(t)
	rng := rand.New(rand.NewPCG(8, 8))
	appendShuffled(t, rng, db, randomLedger(rng, "z", 300))
	for _, loc := range []*time.Location{time.FixedZone("UTC+5", 5*3600), time.FixedZone("Z", 0)} {
		p := ledger.ReportParams{Day: rollupDay.Add(12 * time.Hour), Location: loc}
		got, err := ledger.BuildReport(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ledger.BuildReport(ctx, scanOnly{db}, p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("zone %s: report\n%+v\nwant\n%+v", loc, got, want)
		}
	}
}

// TestRebuildIgnoresStatementTimeout: the gateway runs with a
// statement_timeout (10 s by default); a rebuild (and migration 0005's
// backfill, the same function) reads a whole day in one statement and must
// not be cut by it.
func TestRebuildIgnoresStatementTimeout(t *testing.T) {
	db, err := Open(ctx, freshSchema(t)+"&statement_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var before, after string
	if err := tx.QueryRow(ctx, "SHOW statement_timeout").Scan(&before); err != nil || before != "5s" {
		t.Fatalf("statement_timeout before = %q (%v), want 5s", before, err)
	}
	if err := rebuildRollupDay(ctx, tx, dayOf(rollupDay.UnixNano())); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, "SHOW statement_timeout").Scan(&after); err != nil || after != "0" {
		t.Fatalf("statement_timeout during the rebuild = %q (%v), want 0", after, err)
	}
}

// TestRollupCacheRentIsNoCall: the storage rent rows of explicit caches,
// as the gateway writes them (one per cache and day, a hash of their own,
// some of unknown price, an operation and a tenant with only rent), are
// no calls in the report from the rollups either: its calls and every
// per-call figure are those of the calls alone, its spend includes the
// known rent, and it deep-equals the scan's report for every filter, after
// appends, with the rent pending, and after a rebuild.
func TestRollupCacheRentIsNoCall(t *testing.T) {
	db := openTest(t)
	calls := randomLedger(rand.New(rand.NewPCG(21, 9)), "c", 300)
	calls = slices.DeleteFunc(calls, func(e groundhog.LedgerEntry) bool { return e.Outcome == groundhog.OutcomeCacheRent })
	var rent []groundhog.LedgerEntry
	known := groundhog.Total{}
	for i, c := range []struct {
		tenant, op string
		cost       groundhog.Money
	}{
		{"tenant-1", "op-2", 1_250_000}, {"tenant-1", "op-2", groundhog.CostUnknown}, {"tenant-0", "op-rent", 30_000},
		{"tenant-rent", "op-rent", 7_000_000}, {"tenant-rent", "op-rent", groundhog.CostUnknown},
	} {
		from := rollupDay.Add(time.Duration(i) * time.Hour)
		name := fmt.Sprintf("cachedContents/c%d", i)
		rent = append(rent, groundhog.LedgerEntry{ID: groundhog.OnceRowID(c.tenant, name, from), Time: from, Tenant: c.tenant,
			Operation: c.op, RequestHash: "sha256:rent-" + name, Shape: groundhog.ShapeGemini, Model: "gemini-2.5-flash",
			Provider: "sim", Outcome: groundhog.OutcomeCacheRent, Status: 200, Cost: c.cost, FullCost: c.cost})
		if c.cost.Known() {
			known = known.Add(c.cost)
		}
	}
	appendShuffled(t, rand.New(rand.NewPCG(21, 10)), db, calls)
	base, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay})
	if err != nil {
		t.Fatal(err)
	}
	filters := []ledger.ReportParams{}
	for _, tenant := range []string{"", "tenant-1", "tenant-rent"} {
		for _, op := range []string{"", "op-2", "op-rent"} {
			filters = append(filters, ledger.ReportParams{Day: rollupDay, Tenant: tenant, Operation: op})
		}
	}
	sameReports(t, ledger.WithPending(db, rent), ledger.WithPending(scanOnly{db}, rent), filters...)
	if err := db.AppendLedger(ctx, rent); err != nil {
		t.Fatal(err)
	}
	sameReports(t, db, scanOnly{db}, filters...)
	rep, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay})
	if err != nil {
		t.Fatal(err)
	}
	want := base.Total
	want.Spend, want.CacheRent, want.UnknownRentDays = base.Total.Spend.Plus(known), known, base.Total.UnknownRentDays+2
	if !reflect.DeepEqual(rep.Total, want) {
		t.Fatalf("total with rent\n%+v\nwant\n%+v", rep.Total, want)
	}
	onlyRent, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay, Tenant: "tenant-rent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(onlyRent.Operations) != 1 || onlyRent.Total.Calls != 0 || onlyRent.Total.Distinct != 0 ||
		onlyRent.Total.CacheRent.String() != groundhog.TotalOf(7_000_000).String() || onlyRent.Total.UnknownRentDays != 1 {
		t.Fatalf("tenant with only rent: %+v", onlyRent)
	}
	if err := db.RebuildLedgerRollup(ctx, rollupDay); err != nil {
		t.Fatal(err)
	}
	sameReports(t, db, scanOnly{db}, filters...)
}
