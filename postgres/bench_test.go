package postgres

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

func benchRows(prefix string, n int, start time.Time, step time.Duration) []groundhog.LedgerEntry {
	rows := make([]groundhog.LedgerEntry, n)
	for i := range rows {
		rows[i] = groundhog.LedgerEntry{
			ID: prefix + strconv.Itoa(i), Time: start.Add(time.Duration(i) * step),
			Tenant: "tenant-" + strconv.Itoa(i%7), Operation: "op-" + strconv.Itoa(i%13),
			RequestHash: fmt.Sprintf("sha256:%064x", i%5000), Shape: groundhog.ShapeChat,
			Model: "sim-small", Provider: "sim", Outcome: groundhog.OutcomeUpstream, Status: 200,
			Usage: groundhog.Usage{InputTokens: 1500, CachedInputTokens: 1024, OutputTokens: 200},
			Cost:  4_000_000_000, FullCost: 4_000_000_000, Latency: 800 * time.Millisecond, Attempt: 1,
		}
	}
	return rows
}

// BenchmarkAppendLedger1000 appends 1,000 rows per op in one transaction
// (one unnest statement). Baseline "one-row-statements": the same rows as
// 1,000 single-row INSERTs in one transaction, in the same run.
func BenchmarkAppendLedger1000(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Run("store", func(b *testing.B) {
		db := openTest(b)
		i := 0
		for b.Loop() {
			i++
			if err := db.AppendLedger(ctx, benchRows(fmt.Sprintf("s%d-", i), 1000, start, time.Millisecond)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-row-statements", func(b *testing.B) {
		db := openTest(b)
		i := 0
		for b.Loop() {
			i++
			rows := benchRows(fmt.Sprintf("o%d-", i), 1000, start, time.Millisecond)
			tx, err := db.pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for j := range rows {
				if _, err := tx.Exec(ctx, qAppendLedger, ledgerArrays(rows[j:j+1])...); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScanLedgerDay scans a day of 100,000 rows. Baseline "raw": the
// same query read with rows.RawValues (no decoding), in the same run.
func BenchmarkScanLedgerDay(b *testing.B) {
	const n = 100_000
	db := openTest(b)
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	step := 24 * time.Hour / n
	for off := 0; off < n; off += 10_000 {
		if err := db.AppendLedger(ctx, benchRows(fmt.Sprintf("d%d-", off), 10_000, day.Add(time.Duration(off)*step), step)); err != nil {
			b.Fatal(err)
		}
	}
	f := groundhog.LedgerFilter{From: day, To: day.Add(24 * time.Hour)}
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			got := 0
			if err := db.ScanLedger(ctx, f, func(*groundhog.LedgerEntry) error { got++; return nil }); err != nil {
				b.Fatal(err)
			}
			if got != n {
				b.Fatalf("scanned %d rows, want %d", got, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			rows, err := db.pool.Query(ctx, "SELECT "+ledgerColumns+" FROM ledger WHERE time >= $1 AND time < $2 ORDER BY time, id",
				f.From.UnixNano(), f.To.UnixNano())
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for rows.Next() {
				_ = rows.RawValues()
				got++
			}
			rows.Close()
			if err := rows.Err(); err != nil || got != n {
				b.Fatalf("scanned %d rows (%v), want %d", got, err, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
	})
}
