// Package gctune keeps the garbage collector from running over and over on a
// small heap.
//
// With GOGC=100 the collector runs whenever the heap has grown by its live
// size. A gateway's live heap is small (a few MB: the stores hold the data)
// while it allocates a few KB per request, so at 13,000 cache hits a second
// it ran about ten collections a second, each one marking the whole live
// heap: about a tenth of the process's CPU on the 1 KB hit path
// (docs/design/0008-gc-heap-floor.md). MinHeap raises GOGC while the live heap is small,
// so that a collection starts only once the heap has reached a floor; past
// the floor's half, GOGC is 100 again.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// maxPercent bounds the GOGC MinHeap sets.
const maxPercent = 2000

// basePercent is the GOGC in force where the floor does not matter.
const basePercent = 100

// MinHeap makes the collector let the heap grow to about floor bytes before
// it collects, while the live heap is below floor/2: after each collection
// GOGC is set to floor/live − 1 (at most 2000%, and at most what keeps the
// runtime's own minimum target, 4 MiB × GOGC/100, within floor), and to 100
// once that is less. It costs memory, up to about floor bytes of heap, and saves the
// collections (and their CPU) that a smaller heap would have run.
//
// It does nothing when the GOGC environment variable is set (the operator's
// choice wins) or floor is 0. A memory limit (GOMEMLIMIT,
// debug.SetMemoryLimit) still applies: the runtime collects earlier as the
// heap nears it. The returned stop restores GOGC 100 and ends the tuning.
func MinHeap(floor uint64) (stop func()) {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	t := &tuner{floor: floor, percent: -1}
	t.tune()
	t.arm()
	return func() {
		t.stopped.Store(true)
		debug.SetGCPercent(basePercent)
	}
}

type tuner struct {
	floor   uint64
	percent int // the GOGC last set; read and written only by tune
	stopped atomic.Bool
}

// sentinel is allocated for each cycle; its cleanup runs after the
// collection that found it unreachable, once per cycle.
type sentinel struct{ _ *int } // a pointer: never a tiny allocation shared with others

// arm attaches the next cycle's tuning to a fresh sentinel.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
		if afterTune != nil {
			afterTune()
		}
	}, t)
}

// afterTune, when set (by tests), is called after each cycle's tuning.
var afterTune func()

// tune sets GOGC from the live heap of the last collection.
func (t *tuner) tune() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	p := percentFor(t.floor, s[0].Value.Uint64())
	// Set only on a change of more than a tenth: SetGCPercent takes the
	// heap lock.
	if t.percent < 0 || p*10 < t.percent*9 || p*10 > t.percent*11 {
		debug.SetGCPercent(p)
		t.percent = p
	}
}

// runtimeHeapMinimum is the runtime's smallest collection target at GOGC
// 100; it scales with GOGC (4 MiB × GOGC/100), so a GOGC above
// floor/runtimeHeapMinimum × 100 would keep the heap above the floor even
// when almost nothing is live.
const runtimeHeapMinimum = 4 << 20

// percentFor returns the GOGC under which a heap of live bytes grows to
// floor before the next collection, between basePercent and maxPercent, and
// never so high that the runtime's scaled minimum target passes floor.
func percentFor(floor, live uint64) int {
	top := min(maxPercent, max(basePercent, int(floor*100/runtimeHeapMinimum)))
	if live == 0 {
		return top
	}
	if live >= floor/2 {
		return basePercent
	}
	p := floor*100/live - 100
	if p > uint64(top) {
		return top
	}
	return max(int(p), basePercent)
}
