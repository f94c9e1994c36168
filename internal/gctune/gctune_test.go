package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		floor, live uint64
		want        int
	}{
		{64 * mb, 0, 1600},              // the runtime's minimum target, 4 MB × 16, is the floor
		{64 * mb, 1 * mb, 1600},         // 6300 % capped so
		{64 * mb, 4 * mb, 1500},         // 4 MB grows to 64 MB
		{24 * mb, 0, 600},               // 4 MB × 6 = 24 MB
		{24 * mb, 2 * mb, 600},          // 1100 % capped
		{24 * mb, 6 * mb, 300},          // 6 MB grows to 24 MB
		{1024 * mb, 1 * mb, maxPercent}, // 102300 % capped at maxPercent
		{64 * mb, 16 * mb, 300},
		{64 * mb, 31 * mb, 106},
		{64 * mb, 32 * mb, basePercent}, // from half the floor on: GOGC 100
		{64 * mb, 500 * mb, basePercent},
	} {
		if got := percentFor(c.floor, c.live); got != c.want {
			t.Errorf("percentFor(%d MB, %d MB) = %d, want %d", c.floor/mb, c.live/mb, got, c.want)
		}
	}
}

func gcPercent() int {
	p := debug.SetGCPercent(basePercent)
	debug.SetGCPercent(p)
	return p
}

// MinHeap raises GOGC while the live heap is small, lowers it back to 100
// after a collection finds a live heap of more than half the floor, and
// stop restores 100.
func TestMinHeap(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: MinHeap leaves it alone")
	}
	tuned := make(chan struct{}, 16)
	afterTune = func() {
		select {
		case tuned <- struct{}{}:
		default:
		}
	}
	defer func() { afterTune = nil }()
	runtime.GC()
	stop := MinHeap(64 << 20)
	defer stop()
	if p := gcPercent(); p <= basePercent {
		t.Fatalf("GOGC after MinHeap with a small live heap: %d, want more than %d", p, basePercent)
	}
	live := make([][]byte, 48) // 48 MB live: more than half the floor
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	deadline := time.After(20 * time.Second) // bounds a hang only
	for gcPercent() != basePercent {
		runtime.GC()
		select {
		case <-tuned:
		case <-deadline:
			t.Fatalf("GOGC with a 48 MB live heap: %d, want %d", gcPercent(), basePercent)
		}
	}
	runtime.KeepAlive(live)
	stop()
	if p := gcPercent(); p != basePercent {
		t.Fatalf("GOGC after stop: %d, want %d", p, basePercent)
	}
}
