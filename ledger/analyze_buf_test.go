package ledger

import (
	"math/rand/v2"
	"slices"
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

// Pops come in (timestamp, line) order for inputs of every kind the
// in-order run meets: all in order (the run's compaction included), all
// reversed (the heap alone), ties of timestamps, and runs broken by late
// lines, with pushes and pops interleaved at random; each pop is checked
// against a sorted slice of the items pushed and not yet popped.
func TestReorderBufRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for kind := range 4 {
		var b reorderBuf
		var ref []bufItem // sorted
		pops := 0
		pop := func() {
			c := b.pop()
			if ref[0].t != c.t || ref[0].line != c.line {
				t.Fatalf("kind %d, pop %d: (%d,%d), want (%d,%d)", kind, pops, c.t, c.line, ref[0].t, ref[0].line)
			}
			ref = ref[1:]
			pops++
		}
		for line := int64(1); line <= 20_000; line++ {
			var ts int64
			switch kind {
			case 0:
				ts = line
			case 1:
				ts = -line
			case 2:
				ts = line / 7
			default:
				ts = line * 10
				if rng.IntN(10) == 0 {
					ts -= rng.Int64N(500)
				}
			}
			c := pendingCall{t: ts, line: line}
			b.push(&c)
			it := bufItem{t: ts, line: line}
			k, _ := slices.BinarySearchFunc(ref, it, func(a, b bufItem) int {
				if a.less(b) {
					return -1
				}
				if b.less(a) {
					return 1
				}
				return 0
			})
			ref = slices.Insert(ref, k, it)
			for b.len() > 0 && rng.IntN(3) == 0 {
				pop()
			}
			if b.len() != len(ref) {
				t.Fatalf("kind %d: len %d, want %d", kind, b.len(), len(ref))
			}
		}
		for b.len() > 0 {
			if b.minTime() != ref[0].t {
				t.Fatalf("kind %d: minTime %d, want %d", kind, b.minTime(), ref[0].t)
			}
			pop()
		}
	}
}
