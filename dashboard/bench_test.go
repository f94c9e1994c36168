package dashboard

import (
	"context"
	"net/http"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// BenchmarkDashboard100k measures the dashboard (DefaultDays BuildReport
// calls) over a SQLite ledger of about 100,000 rows spread over those days,
// against two baselines from the same run: the report endpoint for one day
// and one ScanLedger pass over every row of the tenant.
//
//	go test ./dashboard -run '^$' -bench Dashboard100k -benchtime 10x
func BenchmarkDashboard100k(b *testing.B) {
	db := openStore(b)
	ws := []workload{
		{tenant: "acme", op: "summarize", perDay: 5000, pool: 3500, price: 4000},
		{tenant: "acme", op: "extract", perDay: 3000, pool: 1500, cacheOn: true, price: 12500},
		{tenant: "acme", op: "classify", perDay: 2600, pool: 2000, cacheOn: true, price: 350},
		{tenant: "beta", op: "other", perDay: 300, pool: 200, price: 1000},
	}
	rows := genRows(ws, testNow, DefaultDays, 7)
	fill(b, db, rows)
	b.Logf("%d ledger rows over %d days", len(rows), DefaultDays)
	d := New(Options{Logger: quietLog, Store: db, Auth: testAuth, Clock: fakeClock{testNow}})

	b.Run("report-1day", func(b *testing.B) {
		h := d.ReportHandler()
		for b.Loop() {
			if w := get(b, h, http.MethodGet, ReportPath+"?day=today", keyAcme); w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
	b.Run("scan-all-rows", func(b *testing.B) {
		for b.Loop() {
			n := 0
			err := db.ScanLedger(context.Background(), groundhog.LedgerFilter{Tenant: "acme"}, func(*groundhog.LedgerEntry) error { n++; return nil })
			if err != nil || n == 0 {
				b.Fatal(err, n)
			}
		}
	})
	b.Run("dashboard-14days", func(b *testing.B) {
		h := d.Handler()
		for b.Loop() {
			if w := get(b, h, http.MethodGet, "/groundhog/", keyAcme); w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
}
