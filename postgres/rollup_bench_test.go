package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// BenchmarkAppendLedgerRollup appends batches of 512 rows (what the gateway's
// Writer sends at most per 200 ms by default in serve: BatchSize 512) through
// AppendLedger, which keeps the rollups. Baseline "plain": the same rows
// through the insert alone (AppendLedger before the rollups: BEGIN, the
// unnest INSERT, COMMIT), in the same run. Hashes repeat (5,000 per 7
// tenants), so most appends find their hashes' first rows stored.
func BenchmarkAppendLedgerRollup(b *testing.B) {
	const batch = 512
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for _, mode := range []string{"rollup", "plain"} {
		b.Run(mode, func(b *testing.B) {
			db := openTest(b)
			if err := db.ensureLedgerDays(ctx, []int64{dayOf(day.UnixNano())}); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				rows := benchRows(fmt.Sprintf("%s%d-", mode, i), batch, day.Add(time.Duration(i)*batch*time.Millisecond), time.Millisecond)
				i++
				var err error
				if mode == "rollup" {
					err = db.AppendLedger(ctx, rows)
				} else {
					err = plainAppend(ctx, db, rows)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// plainAppend is AppendLedger without rollups (as before migration 0005).
func plainAppend(ctx context.Context, db *DB, rows []groundhog.LedgerEntry) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, qAppendLedger, ledgerArrays(rows)...); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
