package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Tests of the ledger contract under the shapes a gateway produces: ids
// that carry their row's time (groundhog.NewTimeID), many commit batches
// whose times overlap, several tenants, replays long after.
var ledgerBatchTests = []suiteTest{
	{"Ledger/TimeIDReplays", testLedgerTimeIDReplays},
	{"Ledger/OverlappingBatches", testLedgerOverlappingBatches},
}

func init() { ledgerTests = append(ledgerTests, ledgerBatchTests...) }

// timeID is an id of the form of groundhog.NewTimeID for when, with a
// chosen suffix instead of a random one (16 hex digits).
func timeID(when time.Time, suffix uint64) string {
	return fmt.Sprintf("%016x%016x", uint64(when.UnixNano()), suffix)
}

func testLedgerTimeIDReplays(t *testing.T, s Stores) {
	row := func(id string, when time.Time, tenant string) groundhog.LedgerEntry {
		e := ledgerRow(id, when)
		e.Tenant = tenant
		return e
	}
	// The same instant for several rows, in two tenants, in two batches.
	w1, w2 := at(time.Second), at(2*time.Second)
	a := row(timeID(w1, 1), w1, "t1")
	b := row(timeID(w1, 2), w1, "t2")
	c := row(timeID(w2, 1), w2, "t1")
	// An id of the time-prefixed form that names another time than its
	// row's (the store must not rely on the two agreeing).
	odd := row(timeID(at(2*time.Hour), 9), w1, "t1")
	// An arbitrary id.
	plain := row("plain-id", w2, "t2")
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{a, odd}), "AppendLedger 1")
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{b, plain}), "AppendLedger 2")
	// Much later (other rows in between), each again with other content,
	// some in another tenant: the first stored wins.
	var between []groundhog.LedgerEntry
	for i := range 50 {
		when := at(time.Hour + time.Duration(i)*time.Millisecond)
		between = append(between, row(timeID(when, uint64(i)), when, "t1"))
	}
	must(t, s.AppendLedger(ctx, between), "AppendLedger between")
	changed := func(e groundhog.LedgerEntry, tenant string) groundhog.LedgerEntry {
		e.Model, e.Tenant = "replayed", tenant
		return e
	}
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{changed(a, "t1"), changed(b, "t1"), c}), "AppendLedger replay")
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{changed(odd, "t2")}), "AppendLedger replay 2")
	must(t, s.AppendLedger(ctx, []groundhog.LedgerEntry{changed(plain, "t1"), c, changed(c, "t2")}), "AppendLedger replay 3")
	must(t, s.AppendLedger(ctx, between[10:20]), "AppendLedger replay 4")

	want := append([]groundhog.LedgerEntry{a, b, odd, c, plain}, between...)
	slices.SortFunc(want, func(x, y groundhog.LedgerEntry) int {
		if c := x.Time.Compare(y.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	got := scanAll(t, s, groundhog.LedgerFilter{})
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("ids =\n%v\nwant\n%v", ids(got), ids(want))
	}
	for i := range got {
		if d := entryDiff(got[i], want[i]); d != "" {
			t.Errorf("row %d (%s): %s", i, got[i].ID, d)
		}
	}
}

func testLedgerOverlappingBatches(t *testing.T, s Stores) {
	// 12 batches whose time ranges overlap (arrival times jitter back up to
	// 3 s), 3 tenants and 2 operations, some rows a minute or more before
	// the rest of their batch, a few rows at the same instant.
	var all []groundhog.LedgerEntry
	n := 0
	for batch := range 12 {
		var rows []groundhog.LedgerEntry
		for i := range 40 {
			d := time.Duration(batch)*time.Second + time.Duration(i)*20*time.Millisecond
			switch {
			case i%7 == 3:
				d -= 3 * time.Second
			case i%19 == 5:
				d -= 90 * time.Second
			case i%10 == 9:
				d = time.Duration(batch) * time.Second // same instant as row 0
			}
			when := at(d)
			e := ledgerRow(timeID(when, uint64(n)), when)
			if i%5 == 0 {
				e.ID = fmt.Sprintf("arbitrary-%04d", n)
			}
			e.Tenant = fmt.Sprintf("t%d", n%3)
			e.Operation = []string{"summarize", "extract"}[n%2]
			e.Attempt = n
			n++
			rows = append(rows, e)
		}
		must(t, s.AppendLedger(ctx, rows), "AppendLedger")
		all = append(all, rows...)
	}
	slices.SortFunc(all, func(x, y groundhog.LedgerEntry) int {
		if c := x.Time.Compare(y.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	for _, f := range []groundhog.LedgerFilter{
		{},
		{Tenant: "t1"},
		{Operation: "extract"},
		{Tenant: "t2", Operation: "summarize"},
		{From: at(2 * time.Second), To: at(7*time.Second + 10*time.Millisecond)},
		{Tenant: "t0", From: at(-time.Minute), To: at(3 * time.Second)},
		{From: at(-80 * time.Second), To: at(-70 * time.Second)},
		{From: at(5 * time.Second)},
		{To: at(time.Second)},
	} {
		var want []string
		for _, e := range all {
			if (f.Tenant == "" || e.Tenant == f.Tenant) && (f.Operation == "" || e.Operation == f.Operation) &&
				(f.From.IsZero() || !e.Time.Before(f.From)) && (f.To.IsZero() || e.Time.Before(f.To)) {
				want = append(want, e.ID)
			}
		}
		got := scanAll(t, s, f)
		if !slices.Equal(ids(got), want) {
			t.Errorf("filter %+v: %d rows\n%v\nwant %d\n%v", f, len(got), ids(got), len(want), want)
			continue
		}
		for i := range got {
			if got[i].Attempt < 0 || all[slices.IndexFunc(all, func(e groundhog.LedgerEntry) bool { return e.ID == got[i].ID })].Attempt != got[i].Attempt {
				t.Fatalf("filter %+v: row %s came back with other content", f, got[i].ID)
			}
		}
	}
}
