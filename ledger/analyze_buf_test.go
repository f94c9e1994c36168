package ledger

import (
	"math/rand/v2"
	"testing"
)

// The reorder buffer pops calls in (timestamp, line) order whatever the
// push order, interleaving pushes and pops as Analyze does, and reuses
// slots without mixing calls up.
func TestReorderBufOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b reorderBuf
	var last bufItem
	popped, pushed := 0, 0
	check := func() {
		c := b.pop()
		it := bufItem{t: c.t, line: c.line}
		if popped > 0 && it.less(last) {
			t.Fatalf("pop %d: (%d,%d) after (%d,%d)", popped, it.t, it.line, last.t, last.line)
		}
		if c.operation != opName(c.line) {
			t.Fatalf("pop %d: line %d carries operation %q", popped, c.line, c.operation)
		}
		last = it
		popped++
	}
	for line := int64(1); line <= 5000; line++ {
		// Timestamps rise with jitter, ties included, like a shuffled log.
		c := pendingCall{t: line/3*10 + rng.Int64N(40), line: line, operation: opName(line)}
		b.push(&c)
		pushed++
		// Release what no later line can precede (the window is 40).
		for b.len() > 0 && b.minTime() <= line/3*10-40 {
			check()
		}
	}
	for b.len() > 0 {
		check()
	}
	if popped != pushed {
		t.Fatalf("popped %d of %d", popped, pushed)
	}
	if len(b.slots) > 200 {
		t.Errorf("%d slots for a window of about 12 calls: slots are not reused", len(b.slots))
	}
}

func opName(line int64) string { return string(rune('a' + line%26)) }
