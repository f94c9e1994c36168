package ledger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger/ledgertest"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// discardStore accepts every row and keeps none: the Record benchmarks
// measure the request path, not the store.
type discardStore struct{}

func (discardStore) AppendLedger(context.Context, []groundhog.LedgerEntry) error { return nil }
func (discardStore) ScanLedger(context.Context, groundhog.LedgerFilter, func(*groundhog.LedgerEntry) error) error {
	return nil
}

func benchRecord(b *testing.B, journal bool) {
	// The recording goroutines can outrun the committer on a busy
	// machine (it waits for a free core); without a journal that would hit
	// the memory bound, so both variants get a large one.
	o := WriterOptions{Logger: quiet, MaxBufferedRows: 1 << 22}
	if journal {
		o.JournalDir = b.TempDir()
	}
	w, err := OpenWriter(context.Background(), discardStore{}, o)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	e := testEntry(1)
	e.RequestHash = "sha256:" + fmt.Sprintf("%064x", 12345)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.Record(e); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// reportCPU reports the CPU seconds per op used since start (all
// goroutines: the scan, the GC, the committer).
func reportCPU(b *testing.B, start time.Duration) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(d.Seconds()/float64(b.N), "cpu-s/op")
	}
}

// BenchmarkRecord is the gateway's per-call cost of the ledger: one
// journal write(2) plus the queue. Compare with BenchmarkRecordNoJournal
// (the queue alone) in the same run.
func BenchmarkRecord(b *testing.B)          { benchRecord(b, true) }
func BenchmarkRecordNoJournal(b *testing.B) { benchRecord(b, false) }

// benchCalls is the workload size of the report and analyze benchmarks;
// GROUNDHOG_LEDGER_BENCH_CALLS overrides the default of 1,000,000.
func benchCalls(b *testing.B) int {
	if s := os.Getenv("GROUNDHOG_LEDGER_BENCH_CALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return 1_000_000
}

// benchWorkload is one day of calls, all on 2025-03-14 UTC.
func benchWorkload(n int) ledgertest.Options {
	return ledgertest.Options{Calls: n, Seed: 11, Start: day0, Span: 24*time.Hour - time.Minute}
}

// benchFile returns a cached file under the temp dir, building it with
// build the first time: a million-row workload takes a while to make and
// need not be made again for every benchmark run.
func benchFile(b *testing.B, name string, build func(path string) error) string {
	path := filepath.Join(os.TempDir(), name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	if err := build(tmp); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReport measures BuildReport over one day of N ledger rows in
// SQLite (goal: under 2 s for 1,000,000), against the bare ScanLedger of
// the same rows.
func BenchmarkReport(b *testing.B) {
	n := benchCalls(b)
	path := benchFile(b, fmt.Sprintf("groundhog-ledger-bench-%d.db", n), func(path string) error {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			return err
		}
		defer db.Close()
		return ledgertest.LedgerRows(benchWorkload(n), pricing.Default(), 10_000, func(rows []groundhog.LedgerEntry) error {
			return db.AppendLedger(context.Background(), rows)
		})
	})
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	b.Run("scan-only", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			rows := 0
			if err := db.ScanLedger(ctx, groundhog.LedgerFilter{From: day0, To: day0.Add(24 * time.Hour)}, func(*groundhog.LedgerEntry) error {
				rows++
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if rows != n {
				b.Fatalf("scanned %d rows, want %d", rows, n)
			}
		}
	})
	b.Run("report", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			rep, err := BuildReport(ctx, db, ReportParams{Day: day0})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Total.Calls != int64(n) {
				b.Fatalf("report of %d calls, want %d", rep.Total.Calls, n)
			}
		}
	})
}

// BenchmarkAnalyze measures Analyze on the N-line request log in lines/s
// and MB/s, against reading the same file line by line.
func BenchmarkAnalyze(b *testing.B) {
	n := benchCalls(b)
	path := benchFile(b, fmt.Sprintf("groundhog-ledger-bench-%d.jsonl", n), func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := ledgertest.WriteJSONL(f, benchWorkload(n)); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B) {
		sec := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(n)/sec, "lines/s")
		b.ReportMetric(float64(st.Size())/1e6/sec, "MB/s")
	}
	b.Run("read-lines", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			f, _ := os.Open(path)
			br := bufio.NewReaderSize(f, 1<<20)
			lines := 0
			for {
				_, err := br.ReadSlice('\n')
				if err == io.EOF {
					break
				}
				lines++
			}
			f.Close()
			if lines != n {
				b.Fatalf("%d lines", lines)
			}
		}
		report(b)
	})
	b.Run("analyze", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			f, _ := os.Open(path)
			_, stats, err := Analyze(context.Background(), f, AnalyzeOptions{})
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			if stats.Calls != int64(n) {
				b.Fatalf("%d calls", stats.Calls)
			}
		}
		report(b)
	})
}

// BenchmarkAccumulator is the report's own share of BenchmarkReport: the
// same rows, already in memory, through the Accumulator.
func BenchmarkAccumulator(b *testing.B) {
	n := benchCalls(b)
	rows := make([]groundhog.LedgerEntry, 0, n)
	if err := ledgertest.LedgerRows(benchWorkload(n), pricing.Default(), 10_000, func(rs []groundhog.LedgerEntry) error {
		rows = append(rows, rs...)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		acc := NewAccumulator("")
		for i := range rows {
			acc.Add(&rows[i])
		}
		if rep := acc.Report("2025-03-14"); rep.Total.Calls != int64(n) {
			b.Fatal(rep.Total.Calls)
		}
	}
	b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "rows/s")
}
