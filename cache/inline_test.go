package cache

import (
	"context"
	"fmt"
	"runtime/metrics"
	"testing"
	"time"
)

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Memory-tier hits run the tier's maintenance on the caller's goroutine
// (runInline): 20 000 hits start no goroutine for it, where otter's default
// executor starts one per drain of its read buffers (about one per thousand hits here). The
// bound allows a few goroutines of the runtime or the test framework; the
// test never asserts a time.
func TestMemoryHitsStartNoGoroutine(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCache(t, 0, newFakeClock())
	hashes := make([]string, 64)
	for i := range hashes {
		hashes[i] = fmt.Sprintf("sha256:%064x", i)
		if err := c.Put(ctx, entry("t1", hashes[i], "x", time.Time{})); err != nil {
			t.Fatal(err)
		}
	}
	before := goroutinesCreated()
	for i := range 200000 {
		if _, err := c.Get(ctx, "t1", hashes[i%len(hashes)]); err != nil {
			t.Fatal(err)
		}
	}
	if n := goroutinesCreated() - before; n > 10 {
		t.Fatalf("200000 memory hits started %d goroutines, want (about) none", n)
	}
	for _, h := range hashes { // maintenance evicted nothing it should not have
		mustGet(t, c, "t1", h, "x")
	}
	// That maintenance still runs (inline) is TestSizeBoundEvicts's: its
	// evictions happen in maintenance.
}
