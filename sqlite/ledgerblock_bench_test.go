package sqlite

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// cpuNow is the CPU time (user + system) this process has used.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendLedgerBatch appends gateway-shaped rows (time-prefixed ids
// from groundhog.NewTimeID, one tenant, times a few µs apart, a little out
// of order as concurrent requests are) in batches of 64 and 512 rows, as
// the journal's committer does, into a ledger that already holds rows.
// cpu-ns/row is the CPU of the whole process per row (the figure that
// competes with the request path); ns/row the wall time.
func BenchmarkAppendLedgerBatch(b *testing.B) {
	for _, n := range []int{64, 512, 2048} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := openTest(b)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			// One set of rows, given new times and ids per batch: the
			// benchmark allocates next to nothing of its own, so the
			// process's CPU is the store's.
			rows := benchRows("", n, now, 0)
			for i := range rows {
				rows[i].Tenant = "tenant-1"
			}
			mk := func() []groundhog.LedgerEntry {
				for i := range rows {
					// Arrival times 100 µs apart, every 8th row arrived
					// earlier than its neighbours (a slower request).
					t := now.Add(time.Duration(i) * 100 * time.Microsecond)
					if i%8 == 7 {
						t = t.Add(-3 * time.Millisecond)
					}
					rows[i].Time, rows[i].ID = t, groundhog.NewTimeID(t)
				}
				now = now.Add(time.Duration(n) * 100 * time.Microsecond)
				return rows
			}
			benchAppend(b, db, mk, n)
		})
	}
}

// BenchmarkAppendLedgerHitRows appends the gateway's 1 KB cache-hit rows
// (hitRows: one tenant and hash, time-keyed ids in order) 2048 a call, as
// the journal's committer does at that load, into a ledger that already
// holds rows; cpu-ns/row is the process's CPU a row.
func BenchmarkAppendLedgerHitRows(b *testing.B) {
	db := openTest(b)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := hitRows(now)
	mk := func() []groundhog.LedgerEntry {
		for i := range rows {
			t := now.Add(time.Duration(i) * 50 * time.Microsecond)
			rows[i].Time, rows[i].ID = t, groundhog.NewTimeID(t)
		}
		now = now.Add(time.Duration(len(rows)) * 50 * time.Microsecond)
		return rows
	}
	benchAppend(b, db, mk, len(rows))
}

// benchAppend appends 20 batches of mk (a ledger that is not empty), then
// measures AppendLedger of one batch of n rows a loop: cpu-ns/row is the
// process's CPU a row, ns/row the wall time.
func benchAppend(b *testing.B, db *DB, mk func() []groundhog.LedgerEntry, n int) {
	for range 20 {
		if err := db.AppendLedger(ctx, mk()); err != nil {
			b.Fatal(err)
		}
	}
	var cpu time.Duration
	for b.Loop() {
		rows := mk()
		c0 := cpuNow(b)
		if err := db.AppendLedger(ctx, rows); err != nil {
			b.Fatal(err)
		}
		cpu += cpuNow(b) - c0
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/row")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
}
