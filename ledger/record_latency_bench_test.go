package ledger

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkRecordLatency records rows at about a gateway's rate (4
// goroutines, each pausing 400 µs between rows: ≈ 10,000 rows/s) into a
// real SQLite store and reports the latency of Record itself: p50, p99,
// p99.9 and the maximum (µs). It shows stalls a throughput figure hides
// (segment rotation, the committer's work, page faults).
func BenchmarkRecordLatency(b *testing.B) {
	db := openDB(b)
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	const goroutines, perG = 4, 5000
	lat := make([][]time.Duration, goroutines)
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perG {
					e := testEntry(g*perG + i)
					e.ID = fmt.Sprintf("%d-%d-%d", b.N, g, i)
					t0 := time.Now()
					if err := w.Record(e); err != nil {
						b.Error(err)
						return
					}
					lat[g] = append(lat[g], time.Since(t0))
					time.Sleep(400 * time.Microsecond)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e3 }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(0.999), "p99.9-µs")
	b.ReportMetric(q(1), "max-µs")
}
