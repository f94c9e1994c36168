package ledger

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRecordAtGatewayRate records rows at about a 1 KB cache hit's
// rate in the gateway bench (20 rows a millisecond: 20,000 rows/s, in
// bursts of 20) with the committer's default BatchSize and FlushInterval,
// into a store that discards rows, and reports the whole process's CPU per
// row (cpu-ns/row): Record, the committer's journal work (segment
// creation, mapping, sealing, removal or recycling) and the pacing loop.
// Each op is 20 rows.
func BenchmarkRecordAtGatewayRate(b *testing.B) {
	w, err := OpenWriter(context.Background(), discardStore{}, WriterOptions{JournalDir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	e := testEntry(1)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		<-tick.C
		for range 20 {
			if err := w.Record(e); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(20*b.N), "cpu-ns/row")
}
