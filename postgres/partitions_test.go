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
)

var (
	day0 = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	oneD = 24 * time.Hour
)

// scanIDs returns the IDs ScanLedger yields for f.
func scanIDs(t *testing.T, db *DB, f groundhog.LedgerFilter) []string {
	t.Helper()
	var out []string
	if err := db.ScanLedger(ctx, f, func(e *groundhog.LedgerEntry) error { out = append(out, e.ID); return nil }); err != nil {
		t.Fatalf("ScanLedger: %v", err)
	}
	return out
}

func partitions(t *testing.T, db *DB) []string {
	t.Helper()
	days, err := ledgerPartitionDays(ctx, db.pool)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range days {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func TestDayOfAndBounds(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{day0, "ledger_p20260310"},
		{day0.Add(oneD - time.Nanosecond), "ledger_p20260310"},
		{day0.Add(-time.Nanosecond), "ledger_p20260309"},
		{time.Unix(0, -1).UTC(), "ledger_p19691231"},
		{time.Unix(0, 0).UTC(), "ledger_p19700101"},
	} {
		if got := partitionName(dayOf(tc.t.UnixNano())); got != tc.want {
			t.Errorf("partition of %v = %s, want %s", tc.t, got, tc.want)
		}
	}
	// The extreme days of the int64 range get open outer bounds.
	if lo, _ := partitionBounds(dayOf(-1 << 63)); lo != "MINVALUE" {
		t.Errorf("lower bound of the first day = %s, want MINVALUE", lo)
	}
	if _, hi := partitionBounds(dayOf(1<<63 - 1)); hi != "MAXVALUE" {
		t.Errorf("upper bound of the last day = %s, want MAXVALUE", hi)
	}
	lo, hi := partitionBounds(dayOf(day0.UnixNano()))
	if lo != fmt.Sprint(day0.UnixNano()) || hi != fmt.Sprint(day0.Add(oneD).UnixNano()) {
		t.Errorf("bounds of %v = [%s, %s)", day0, lo, hi)
	}
}

// TestMigrationPartitionsExistingLedger applies migrations 0001–0003, fills
// the unpartitioned ledger, then opens the store (which applies 0004): every
// row is still there, unchanged, in a day partition of its own.
func TestMigrationPartitionsExistingLedger(t *testing.T) {
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
	rows := benchRows("old-", 300, day0.Add(-oneD/2), 10*time.Minute) // ~2 days from noon on day -1
	rows = append(rows, benchRows("epoch-", 2, time.Unix(0, -1).UTC(), time.Nanosecond)...)
	rows[7].PromptCacheBreak, rows[7].PromptCacheSaved, rows[7].FanOutHeld = "ttl_gap", -5, true
	insert, args := insertBefore0006(rows)
	if _, err := conn.Exec(ctx, insert, args...); err != nil {
		t.Fatalf("fill the unpartitioned ledger: %v", err)
	}
	var kind string
	if err := conn.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = 'ledger'::regclass").Scan(&kind); err != nil || kind != "r" {
		t.Fatalf("before 0004 the ledger is relkind %q (%v), want a plain table", kind, err)
	}

	db, err := Open(ctx, u)
	if err != nil {
		t.Fatalf("Open (migration 0004): %v", err)
	}
	defer db.Close()
	if err := db.pool.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = 'ledger'::regclass").Scan(&kind); err != nil || kind != "p" {
		t.Fatalf("after 0004 the ledger is relkind %q (%v), want partitioned", kind, err)
	}
	var got []groundhog.LedgerEntry
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error { got = append(got, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(rows)
	slices.SortFunc(want, func(a, b groundhog.LedgerEntry) int { return a.Time.Compare(b.Time) })
	if len(got) != len(want) {
		t.Fatalf("%d rows after the migration, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	names := partitions(t, db)
	for _, d := range []string{"ledger_p19691231", "ledger_p19700101", "ledger_p20260309", "ledger_p20260310", "ledger_p20260311"} {
		if !slices.Contains(names, d) {
			t.Errorf("no partition %s; have %v", d, names)
		}
	}
	var leftover bool
	if err := db.pool.QueryRow(ctx, "SELECT to_regclass('ledger_unpartitioned') IS NOT NULL").Scan(&leftover); err != nil || leftover {
		t.Errorf("ledger_unpartitioned still exists (%v)", err)
	}
	// Replaying a migrated row is still skipped.
	replay := rows[:3]
	replay[0].Model = "replayed"
	if err := db.AppendLedger(ctx, replay); err != nil {
		t.Fatal(err)
	}
	if n := len(scanIDs(t, db, groundhog.LedgerFilter{})); n != len(rows) {
		t.Errorf("%d rows after replaying migrated rows, want %d", n, len(rows))
	}
}

// TestReportReadsOnlyItsDay: the plan of ScanLedger's query for one UTC day
// (what BuildReport asks for) touches that day's partition only.
func TestReportReadsOnlyItsDay(t *testing.T) {
	db := openTest(t)
	for i := range 3 {
		if err := db.AppendLedger(ctx, benchRows(fmt.Sprintf("d%d-", i), 50, day0.Add(time.Duration(i)*oneD), time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []groundhog.LedgerFilter{
		{From: day0.Add(oneD), To: day0.Add(2 * oneD)},
		{Tenant: "tenant-3", From: day0.Add(oneD), To: day0.Add(2 * oneD)},
	} {
		q, args := ledgerQuery(f)
		rows, err := db.pool.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "ledger_p20260311") {
			t.Errorf("plan for %+v does not read the day's partition:\n%s", f, plan)
		}
		for _, other := range []string{"ledger_p20260310", "ledger_p20260312"} {
			if strings.Contains(plan, other) {
				t.Errorf("plan for %+v reads %s too:\n%s", f, other, plan)
			}
		}
		if got := scanIDs(t, db, f); len(got) == 0 || !strings.HasPrefix(got[0], "d1-") {
			t.Errorf("scan of the day = %v", got)
		}
	}
}

// TestMaintainLedgerRetention: partitions are made ahead, whole days older
// than the retention are dropped, and a replica whose cache still names a
// dropped day re-creates it when it appends there.
func TestMaintainLedgerRetention(t *testing.T) {
	a, b := twoReplicas(t)
	now := day0.Add(10*oneD + 6*time.Hour) // 2026-03-20 06:00
	old := []groundhog.LedgerEntry{benchRows("old-", 1, day0, 0)[0]}
	if err := b.AppendLedger(ctx, old); err != nil { // b now knows 2026-03-10
		t.Fatal(err)
	}
	for _, d := range []time.Duration{7, 8, 9, 10} {
		if err := a.AppendLedger(ctx, benchRows(fmt.Sprintf("n%d-", d), 1, day0.Add(d*oneD+time.Hour), 0)); err != nil {
			t.Fatal(err)
		}
	}
	// Retention 2 days at 03-20 06:00: cutoff 03-18 06:00; days ending at or
	// before it (03-17 and earlier) go, 03-18 stays (it ends after the cutoff).
	dropped, err := a.MaintainLedger(ctx, now, 2*oneD)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ledger_p20260310", "ledger_p20260317"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	names := partitions(t, a)
	for _, want := range []string{"ledger_p20260318", "ledger_p20260319", "ledger_p20260320", "ledger_p20260323"} {
		if !slices.Contains(names, want) {
			t.Errorf("no partition %s after maintenance; have %v", want, names)
		}
	}
	if got, want := scanIDs(t, a, groundhog.LedgerFilter{}), []string{"n8-0", "n9-0", "n10-0"}; !slices.Equal(got, want) {
		t.Errorf("rows after retention = %v, want %v", got, want)
	}
	// b still believes 03-10 exists: its append must re-create it, not fail.
	late := benchRows("late-", 1, day0.Add(time.Hour), 0)
	if err := b.AppendLedger(ctx, late); err != nil {
		t.Fatalf("append to a day dropped by another replica: %v", err)
	}
	if got := scanIDs(t, a, groundhog.LedgerFilter{To: day0.Add(oneD)}); !slices.Equal(got, []string{"late-0"}) {
		t.Errorf("rows of the re-created day = %v", got)
	}
	// Without retention nothing is dropped.
	if dropped, err := a.MaintainLedger(ctx, now.Add(100*oneD), 0); err != nil || len(dropped) != 0 {
		t.Errorf("MaintainLedger without retention dropped %v (%v)", dropped, err)
	}
}

// TestPartitionsCreatedDuringAppends: one replica creates the partitions of
// new days (MaintainLedger, day after day) while another appends to an
// existing day with several connections: every append and every creation
// succeeds (creating a day's partitions must not deadlock with appends),
// and the day's report from the rollups still equals the scan.
func TestPartitionsCreatedDuringAppends(t *testing.T) {
	a, b := twoReplicas(t)
	rows := randomLedger(rand.New(rand.NewPCG(5, 5)), "d", 1600)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for w := range 4 {
		part := rows[w*len(rows)/4 : (w+1)*len(rows)/4]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(part) > 0 {
				n := min(len(part), 10)
				if err := a.AppendLedger(ctx, part[:n]); err != nil {
					errs <- fmt.Errorf("append: %w", err)
					return
				}
				part = part[n:]
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for d := range 20 {
			if _, err := b.MaintainLedger(ctx, rollupDay.Add(time.Duration(10+d)*oneD), 0); err != nil {
				errs <- fmt.Errorf("create the partitions of a new day: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if names := partitions(t, a); !slices.Contains(names, "ledger_p20260424") {
		t.Errorf("partitions after maintenance: %v", names)
	}
	sameReports(t, a, scanOnly{b})
}
