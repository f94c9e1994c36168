//go:build linux

package promptcache

import (
	"context"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// threadCPU is the calling OS thread's CPU time (the caller locks it): on a
// busy machine it leaves out the time the thread waits for a core.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkStageVsFingerprint is the miss path's prompt-cache stage
// (Stage.Before + After, as the gateway runs it) against fingerprint.Compute
// on the same body, interleaved call by call and timed in thread CPU time:
// warm (the same conversation seen before, as `groundhog bench`'s miss
// scenario sends it) and cold (a chain seen for the first time). Bodies: the
// gateway bench's chat bodies (internal/benchbody, 1 KB and 200 KB) and the
// 200 KB Anthropic agent request with breakpoint injection.
func BenchmarkStageVsFingerprint(b *testing.B) {
	type tc struct {
		name   string
		shape  groundhog.Shape
		body   []byte
		inject bool
	}
	for _, c := range []tc{
		{"chat1KB", chat, benchbody.Chat(1<<10, benchbody.Options{Model: "sim-small"}), false},
		{"chat200KB", chat, benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small"}), false},
		{"agent200KB", messages, agentBody(200<<10, 300), true},
	} {
		for _, warm := range []bool{true, false} {
			name := c.name + "/cold"
			if warm {
				name = c.name + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ctx := context.Background()
				req := &Request{Tenant: "t", Operation: "bench", Shape: c.shape, Body: c.body, Breakpoints: c.inject}
				st := &Stage{Tracker: NewTracker(Config{})}
				stage := func() {
					if !warm {
						st.Tracker = NewTracker(Config{})
					}
					runStage(ctx, st, req)
				}
				stage() // warms the chain (and the code)
				var fp, sg time.Duration
				var ratios []float64
				for b.Loop() {
					t0 := threadCPU()
					if _, err := fingerprint.Compute(fingerprint.Params{Shape: c.shape, Tenant: "t"}, c.body); err != nil {
						b.Fatal(err)
					}
					t1 := threadCPU()
					stage()
					t2 := threadCPU()
					fp += t1 - t0
					sg += t2 - t1
					if t1 > t0 {
						ratios = append(ratios, float64(t2-t1)/float64(t1-t0))
					}
				}
				sort.Float64s(ratios)
				if len(ratios) > 0 {
					b.ReportMetric(ratios[len(ratios)/2], "median-x-fingerprint")
				}
				b.ReportMetric(float64(sg)/float64(max(fp, 1)), "total-x-fingerprint")
				b.ReportMetric(float64(sg.Microseconds())/float64(b.N), "stage-µs")
				b.ReportMetric(float64(fp.Microseconds())/float64(b.N), "fingerprint-µs")
			})
		}
	}
}
