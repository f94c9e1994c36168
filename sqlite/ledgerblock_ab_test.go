//go:build linux

package sqlite

import (
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/groundhog-ai/groundhog"
)

// threadCPU is the CPU time of the calling OS thread (not the time it
// waits for a core): two alternating measurements keep their ratio on a
// busy machine.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// hitRows are 2048 rows as the gateway's 1 KB cache hits write them: one
// tenant and request hash, time-keyed ids 50 µs apart.
func hitRows(t0 time.Time) []groundhog.LedgerEntry {
	rows := make([]groundhog.LedgerEntry, 2048)
	for i := range rows {
		at := t0.Add(time.Duration(i) * 50 * time.Microsecond)
		rows[i] = groundhog.LedgerEntry{ID: groundhog.NewTimeID(at), Time: at, Tenant: "local",
			RequestHash: "sha256:" + strings.Repeat("7f", 32), Shape: "chat", Model: "sim-small", Provider: "sim",
			Outcome: groundhog.OutcomeCacheHit, Status: 200, Latency: time.Duration(20000 + i%977), CacheOn: true}
	}
	return rows
}

// BenchmarkABBlockRows is a same-process A/B of the per-row work this
// branch changed in an append (keyTime and the block encoder) over the
// gateway's hit rows: each op is 25 rounds, each round the old and then the
// new code (the order swapped every other round) over 2048 rows, timed in
// thread CPU. It reports the median old ÷ new and its range, and the
// median ns a row of each.
func BenchmarkABBlockRows(b *testing.B) {
	runtime.LockOSThread() // thread CPU times one thread
	defer runtime.UnlockOSThread()
	rows := hitRows(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var enc blockEncoder
	var old blockEncoderOld
	var sink int64
	runOld := func() time.Duration {
		t0 := threadCPU()
		old.reset()
		for i := range rows {
			k, _ := keyTimeOld(rows[i].ID)
			sink += k
			old.add(&rows[i])
		}
		return threadCPU() - t0
	}
	runNew := func() time.Duration {
		t0 := threadCPU()
		enc.reset()
		for i := range rows {
			k, _ := keyTime(rows[i].ID)
			sink += k
			enc.add(&rows[i])
		}
		return threadCPU() - t0
	}
	var ratios, olds, news []float64
	for b.Loop() {
		for r := range 25 {
			var o, n time.Duration
			if r%2 == 0 {
				o, n = runOld(), runNew()
			} else {
				n, o = runNew(), runOld()
			}
			ratios = append(ratios, float64(o)/float64(n))
			olds = append(olds, float64(o.Nanoseconds())/float64(len(rows)))
			news = append(news, float64(n.Nanoseconds())/float64(len(rows)))
		}
	}
	med := func(x []float64) float64 { x = slices.Clone(x); slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(ratios), "old/new")
	b.ReportMetric(slices.Min(ratios), "old/new-min")
	b.ReportMetric(slices.Max(ratios), "old/new-max")
	b.ReportMetric(med(olds), "old-ns/row")
	b.ReportMetric(med(news), "new-ns/row")
	if sink == 42 {
		b.Log(sink)
	}
}
