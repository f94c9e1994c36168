package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

func benchRows(prefix string, n int, start time.Time, step time.Duration) []groundhog.LedgerEntry {
	rows := make([]groundhog.LedgerEntry, n)
	for i := range rows {
		rows[i] = groundhog.LedgerEntry{
			ID: fmt.Sprintf("%s%08d", prefix, i), Time: start.Add(time.Duration(i) * step),
			Tenant: "tenant-" + strconv.Itoa(i%7), Operation: "op-" + strconv.Itoa(i%13),
			RequestHash: fmt.Sprintf("sha256:%064x", i%5000), Shape: groundhog.ShapeChat,
			Model: "sim-small", Provider: "sim", Outcome: groundhog.OutcomeUpstream, Status: 200,
			Usage: groundhog.Usage{InputTokens: 1500, CachedInputTokens: 1024, OutputTokens: 200},
			Cost:  4_000_000_000, FullCost: 4_000_000_000, Latency: 800 * time.Millisecond, Attempt: 1,
		}
	}
	return rows
}

// BenchmarkAppendLedger1000 appends 1,000 rows per op in one transaction.
// Baseline "one-row-statements": the same rows inserted one statement per
// row in one transaction, in the same run.
func BenchmarkAppendLedger1000(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Run("store", func(b *testing.B) {
		db := openTest(b)
		i := 0
		for b.Loop() {
			rows := benchRows(fmt.Sprintf("s%d-", i), 1000, start, time.Millisecond)
			i++
			if err := db.AppendLedger(ctx, rows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-row-statements", func(b *testing.B) {
		db := openTest(b)
		i := 0
		for b.Loop() {
			rows := benchRows(fmt.Sprintf("o%d-", i), 1000, start, time.Millisecond)
			i++
			tx, err := db.w.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			stmt, err := tx.PrepareContext(ctx, qInsertLedgerOne)
			if err != nil {
				b.Fatal(err)
			}
			for j := range rows {
				args, _ := appendLedgerArgs(nil, nil, &rows[j])
				if _, err := stmt.ExecContext(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
			stmt.Close()
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScanLedgerDay scans one day holding every row of a ledger of
// GROUNDHOG_BENCH_LEDGER_ROWS rows (default 100,000; set 1000000 for the
// report-scale figure) plus a day before and after it, as a daily report
// does. Baseline "raw": the same query with every column read as raw bytes
// and no LedgerEntry built, in the same run.
func BenchmarkScanLedgerDay(b *testing.B) {
	n := 100_000
	if v := os.Getenv("GROUNDHOG_BENCH_LEDGER_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	db, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	step := 24 * time.Hour / time.Duration(n)
	for _, d := range []struct {
		prefix string
		start  time.Time
		n      int
	}{{"before", day.Add(-24 * time.Hour), n / 10}, {"day", day, n}, {"after", day.Add(24 * time.Hour), n / 10}} {
		for off := 0; off < d.n; off += 10_000 {
			rows := benchRows(fmt.Sprintf("%s%d-", d.prefix, off), min(10_000, d.n-off), d.start.Add(time.Duration(off)*step), step)
			if err := db.AppendLedger(ctx, rows); err != nil {
				b.Fatal(err)
			}
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
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			// The same blocks read and decoded, no LedgerEntry built and
			// no merge.
			rows, err := db.r.QueryContext(ctx, "SELECT rows FROM ledger_blocks WHERE min_time > ? AND min_time < ? AND max_time >= ?",
				f.From.UnixNano()-blockSpan, f.To.UnixNano(), f.From.UnixNano())
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			var blob sql.RawBytes
			for rows.Next() {
				if err := rows.Scan(&blob); err != nil {
					b.Fatal(err)
				}
				c := blockCursor{dec: blockDecoder{rest: blob}}
				for {
					ok, err := c.next()
					if err != nil {
						b.Fatal(err)
					}
					if !ok {
						break
					}
					if c.t >= f.From.UnixNano() && c.t < f.To.UnixNano() {
						got++
					}
				}
			}
			rows.Close()
			if got != n {
				b.Fatalf("scanned %d rows, want %d", got, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
	})
}
