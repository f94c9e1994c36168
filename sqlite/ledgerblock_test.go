package sqlite

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// A block decodes to exactly the packed rows of its entries, whatever
// repeats or changes from one row to the next.
func TestBlockCodecRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	base := groundhog.LedgerEntry{ID: groundhog.NewTimeID(t0), Time: t0, Tenant: "acme", Operation: "summarize",
		RequestHash: "sha256:" + strings.Repeat("0f", 32), Shape: groundhog.ShapeChat, Model: "m", Provider: "sim",
		Outcome: groundhog.OutcomeCacheHit, Status: 200, Usage: groundhog.Usage{InputTokens: 10, OutputTokens: 3},
		Cost: 7, FullCost: 7, Attempt: 1, PromptCacheSaved: groundhog.CostUnknown}
	var rows []groundhog.LedgerEntry
	add := func(f func(e *groundhog.LedgerEntry)) {
		e := base
		if len(rows) > 0 {
			e = rows[len(rows)-1]
		}
		f(&e)
		rows = append(rows, e)
	}
	add(func(e *groundhog.LedgerEntry) {})
	add(func(e *groundhog.LedgerEntry) {
		e.ID = groundhog.NewTimeID(e.Time.Add(time.Microsecond))
		e.Time = e.Time.Add(time.Microsecond)
	})
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "not-hex", e.Time.Add(-time.Hour) })       // back in time
	add(func(e *groundhog.LedgerEntry) { e.ID, e.RequestHash = "ABCDEF01", "sha256:ABCD" })        // upper case: kept as text
	add(func(e *groundhog.LedgerEntry) { e.ID, e.RequestHash = "abc", "sha256:abc" })              // odd length
	add(func(e *groundhog.LedgerEntry) { e.ID, e.RequestHash = "", "" })                           // empty
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "00", time.Unix(0, math.MinInt64).UTC() }) // extreme times
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "01", time.Unix(0, math.MaxInt64).UTC() }) // delta wraps
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "02", time.Unix(0, -5).UTC() })
	add(func(e *groundhog.LedgerEntry) {
		e.ID, e.Tenant, e.Operation, e.Model, e.Shape, e.Provider, e.Outcome = "03", "other", "", "ü", groundhog.ShapeMessages, "anthropic", groundhog.OutcomeUpstream
		e.Status, e.Usage, e.Cost, e.Saved, e.FullCost = 499, groundhog.Usage{InputTokens: 1, CachedInputTokens: 2, CacheWriteTokens: 3, OutputTokens: 4, CacheWrite1hTokens: 5}, -1, 1<<62, math.MinInt64
		e.Latency, e.Attempt, e.InFlight, e.CacheOn, e.Idempotent, e.Stream = time.Second, 9, true, true, true, true
		e.PromptCacheSaved, e.PromptCacheBreak, e.PromptCacheLostTokens, e.FanOutHeld = -3, "ttl_gap", 77, true
		e.ProviderCacheReason = "system_changed"
	})
	add(func(e *groundhog.LedgerEntry) { e.ID = "04" }) // everything else the same
	// Agent-run fields: present after absent, the same again, one changed,
	// absent again, then present once more.
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Session = "05", "run-1" })
	add(func(e *groundhog.LedgerEntry) { e.ID = "06" })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Session, e.ParentSession = "07", "run-1.a", "run-1" })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Session, e.ParentSession = "08", "", "" })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.ParentSession = "09", "run-1" })
	// A tool call's result bytes: after the agent-run fields, without
	// them, the same again, changed, absent again.
	add(func(e *groundhog.LedgerEntry) { e.ID, e.ResultBytes = "0a", 512 })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Session, e.ParentSession, e.ResultBytes = "0b", "", "", 512 })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.ResultBytes = "0c", 512 })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.ResultBytes = "0d", 1<<40 })
	add(func(e *groundhog.LedgerEntry) { e.ID, e.ResultBytes = "0e", 0 })
	add(func(e *groundhog.LedgerEntry) {
		e.ID, e.RequestHash = strings.Repeat("ab", 40), "sha256:"+strings.Repeat("cd", 40)
	})

	var w blockEncoder
	w.reset()
	for i := range rows {
		w.add(&rows[i])
	}
	d := blockDecoder{rest: w.out}
	for i := range rows {
		got, err := d.next()
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if want := packLedger(&rows[i]); !bytes.Equal(got, want) {
			t.Fatalf("row %d: decoded\n%q\nwant\n%q", i, got, want)
		}
	}
	if got, err := d.next(); got != nil || err != nil {
		t.Fatalf("after the last row: %q, %v", got, err)
	}
	if packed := func() (n int) {
		for i := range rows {
			n += len(packLedger(&rows[i]))
		}
		return n
	}(); len(w.out) >= packed {
		t.Errorf("block of %d bytes, not smaller than the %d bytes of its packed rows", len(w.out), packed)
	}
}

func TestKeyTime(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC)
	for _, tc := range []struct {
		id   string
		want int64
		ok   bool
	}{
		{groundhog.NewTimeID(at), at.UnixNano(), true},
		{"0000000000000001" + strings.Repeat("f", 16), 1, true},
		{"8000000000000000" + strings.Repeat("0", 16), 0, false}, // negative
		{strings.ToUpper(groundhog.NewTimeID(at)), 0, false},
		{groundhog.NewTimeID(at)[:31], 0, false},
		{"bulk-00001", 0, false},
	} {
		got, ok := keyTime(tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("keyTime(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if p := keyPrefix(at.UnixNano()); p != groundhog.NewTimeID(at)[:16] {
		t.Errorf("keyPrefix = %q, want the id's prefix %q", p, groundhog.NewTimeID(at)[:16])
	}
}

// The SQLite store dedupes by id alone, also when a replay carries another
// time than the stored row (PostgreSQL dedupes by (time, id)). Each case
// takes another path of appendBlocks: a time-keyed id replayed at another
// time (checked in ledger_ids, and in the blocks of its key time); an id
// naming another time than its row's, replayed alone at the time it names
// (found through ledger_ids by its prefix only); an arbitrary id.
func TestLedgerDedupeByIDAcrossTimes(t *testing.T) {
	db := openTest(t)
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	row := func(id string, when time.Time) groundhog.LedgerEntry {
		return groundhog.LedgerEntry{ID: id, Time: when, Tenant: "t", Operation: "op", Model: "first"}
	}
	keyed := row(groundhog.NewTimeID(t0), t0)
	far := t0.Add(3 * time.Hour)
	odd := row(groundhog.NewTimeID(far), t0.Add(time.Second))
	plain := row("plain", t0.Add(2*time.Second))
	for _, batch := range [][]groundhog.LedgerEntry{{keyed}, {odd}, {plain}} {
		if err := db.AppendLedger(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	replay := func(e groundhog.LedgerEntry, when time.Time) []groundhog.LedgerEntry {
		e.Time, e.Model = when, "replayed"
		return []groundhog.LedgerEntry{e}
	}
	for _, batch := range [][]groundhog.LedgerEntry{
		replay(keyed, t0.Add(time.Hour)),
		replay(odd, far),
		replay(plain, t0.Add(-time.Hour)),
	} {
		if err := db.AppendLedger(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		got = append(got, e.ID+"@"+e.Time.Sub(t0).String()+"/"+e.Model)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{keyed.ID + "@0s/first", odd.ID + "@1s/first", "plain@2s/first"}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
}

// Rows of the per-row table of 0001 (a database written by an earlier
// version, or by one still running) are read by every scan, and moved into
// blocks when the store opens; a row stored in both is kept once.
func TestLegacyLedgerMovedAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var want []groundhog.LedgerEntry
	for i := range moveChunk + 10 { // more than one chunk
		when := t0.Add(time.Duration(i) * time.Millisecond)
		e := groundhog.LedgerEntry{ID: groundhog.NewTimeID(when), Time: when, Tenant: fmt.Sprintf("t%d", i%2), Operation: "op", Attempt: i}
		if i%3 == 0 {
			e.ID = fmt.Sprintf("legacy-%05d", i)
		}
		want = append(want, e)
	}
	// Two rows are also in blocks already (appended by this version).
	if err := db.AppendLedger(ctx, []groundhog.LedgerEntry{want[3], want[4]}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		args, _ := appendLedgerArgs(nil, nil, &want[i])
		if _, err := tx.ExecContext(ctx, qInsertLedgerOne, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	scan := func(db *DB, f groundhog.LedgerFilter) []groundhog.LedgerEntry {
		t.Helper()
		var got []groundhog.LedgerEntry
		if err := db.ScanLedger(ctx, f, func(e *groundhog.LedgerEntry) error {
			got = append(got, *e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(db *DB) {
		t.Helper()
		got := scan(db, groundhog.LedgerFilter{})
		if len(got) != len(want) {
			t.Fatalf("scanned %d rows, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("row %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		if got := scan(db, groundhog.LedgerFilter{Tenant: "t1", From: want[100].Time, To: want[200].Time}); len(got) != 50 || got[0] != want[101] {
			t.Fatalf("tenant t1, rows 100 to 199: %d rows", len(got))
		}
	}
	check(db) // read from both tables
	db.Close()

	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var legacy int
	if err := db.r.QueryRowContext(ctx, "SELECT count(*) FROM ledger").Scan(&legacy); err != nil {
		t.Fatal(err)
	}
	if legacy != 0 {
		t.Errorf("%d rows left in the per-row table after Open", legacy)
	}
	check(db) // from blocks only
	// Replaying the moved rows changes nothing.
	if err := db.AppendLedger(ctx, want); err != nil {
		t.Fatal(err)
	}
	check(db)
}

// Rows at the ends of the int64 nanosecond range, in one batch: cut into
// separate blocks (their difference overflows int64), all read back in
// order, by every filter.
func TestLedgerBlocksExtremeTimes(t *testing.T) {
	db := openTest(t)
	times := []time.Time{time.Unix(0, math.MinInt64).UTC(), time.Unix(0, -1).UTC(), time.Unix(0, 0).UTC(), time.Unix(0, math.MaxInt64).UTC()}
	var rows []groundhog.LedgerEntry
	for i, when := range times {
		rows = append(rows, groundhog.LedgerEntry{ID: fmt.Sprintf("r%d", i), Time: when, Tenant: "t"})
	}
	if err := db.AppendLedger(ctx, []groundhog.LedgerEntry{rows[3], rows[0], rows[2], rows[1]}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    groundhog.LedgerFilter
		want []string
	}{
		{groundhog.LedgerFilter{}, []string{"r0", "r1", "r2", "r3"}},
		{groundhog.LedgerFilter{Tenant: "t", To: times[2]}, []string{"r0", "r1"}},
		{groundhog.LedgerFilter{From: times[2]}, []string{"r2", "r3"}},
		{groundhog.LedgerFilter{From: times[0], To: times[1]}, []string{"r0"}},
	} {
		var got []string
		if err := db.ScanLedger(ctx, tc.f, func(e *groundhog.LedgerEntry) error {
			got = append(got, e.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("filter %+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}
