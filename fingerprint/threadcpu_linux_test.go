//go:build linux

package fingerprint

import (
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"crypto/sha256"

	"github.com/groundhog-ai/groundhog"
)

// threadCPU is the CPU time of the calling OS thread: unlike the wall
// clock it does not count the time the thread waits for a core, so on a
// machine shared with other work two alternating measurements keep their
// ratio.
func threadCPU() time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// BenchmarkRatioCPU200KB is BenchmarkRatio200KB timed in thread CPU time
// ("x-sha256-cpu"): the figure to trust when the machine is busy.
func BenchmarkRatioCPU200KB(b *testing.B) { benchRatioCPU(b, body200KB) }
func BenchmarkRatioCPU1KB(b *testing.B)   { benchRatioCPU(b, body1KB) }

func benchRatioCPU(b *testing.B, body []byte) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := Params{Shape: groundhog.ShapeChat, Tenant: "acme", Versions: "schema=3"}
	reps := max(1, 64<<10/len(body))
	var fp, sh time.Duration
	for b.Loop() {
		t0 := threadCPU()
		for range reps {
			r, err := Compute(p, body)
			if err != nil {
				b.Fatal(err)
			}
			benchSink = r
		}
		t1 := threadCPU()
		for range reps {
			benchSink = sha256.Sum256(body)
		}
		t2 := threadCPU()
		fp += t1 - t0
		sh += t2 - t1
	}
	b.ReportMetric(float64(fp)/float64(sh), "x-sha256-cpu")
	calls := float64(b.N * reps)
	b.ReportMetric(float64(fp)/calls, "fp-cpu-ns/op")
	b.ReportMetric(float64(sh)/calls, "sha-cpu-ns/op")
}
