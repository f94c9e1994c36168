package ledger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// syscw is the process's count of write-like system calls so far (Linux
// /proc/self/io), or -1 where it is not available.
func syscw() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("syscw: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// BenchmarkRecordParallel is Record with the journal under parallel callers
// (b.SetParallelism(p): p×GOMAXPROCS goroutines; the gateway bench drives
// 32 connections), reporting the write system calls per row (writes/row:
// 1 without group commit; the committer's store is discardStore, so almost
// all of them are journal writes).
func BenchmarkRecordParallel(b *testing.B) {
	for _, p := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("p%d", p), func(b *testing.B) {
			w, err := OpenWriter(context.Background(), discardStore{}, WriterOptions{JournalDir: b.TempDir(), Logger: quiet, MaxBufferedRows: 1 << 22})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close(context.Background())
			e := testEntry(1)
			e.RequestHash = "sha256:" + fmt.Sprintf("%064x", 12345)
			b.SetParallelism(p)
			b.ReportAllocs()
			start := syscw()
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := w.Record(e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			reportCPU(b, cpu0)
			if start >= 0 {
				b.ReportMetric(float64(syscw()-start)/float64(b.N), "writes/row")
			}
		})
	}
}
