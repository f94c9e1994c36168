package ledger

// heapBuf is the reorder buffer as it was before its in-order run
// (analyze_buf.go at 480ecec, verbatim but for its name), test-only: the
// baseline of BenchmarkReorderBufAB.
//
// (Was:) Analyze's reorder buffer: the parsed calls not yet
// released, popped in (timestamp, line) order.
//
// It runs on the one goroutine that counts calls in order, which every
// line passes through, so it is kept cheap: the heap orders 24-byte
// (time, line, slot) items, not the ~200-byte calls, and calls live in
// reused slots, so a push neither allocates (container/heap boxes every
// value in an interface) nor moves a call more than once.
type heapBuf struct {
	items []bufItem     // a binary min-heap
	slots []pendingCall // the calls; items point into it
	free  []int32       // unused slots
}

// (bufItem and its less are the live ones: unchanged.)

func (b *heapBuf) len() int { return len(b.items) }

// minTime is the timestamp of the call pop would return; len must be > 0.
func (b *heapBuf) minTime() int64 { return b.items[0].t }

func (b *heapBuf) push(c *pendingCall) {
	var slot int32
	if n := len(b.free); n > 0 {
		slot, b.free = b.free[n-1], b.free[:n-1]
	} else {
		slot = int32(len(b.slots))
		b.slots = append(b.slots, pendingCall{})
	}
	b.slots[slot] = *c
	it := bufItem{t: c.t, line: c.line, slot: slot}
	h := append(b.items, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !it.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = it
	b.items = h
}

// pop removes the earliest call and returns it. The returned pointer is
// valid until the next push.
func (b *heapBuf) pop() *pendingCall {
	h := b.items
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	if n := len(h); n > 0 {
		i := 0
		for {
			l := 2*i + 1
			if l >= n {
				break
			}
			if r := l + 1; r < n && h[r].less(h[l]) {
				l = r
			}
			if !h[l].less(last) {
				break
			}
			h[i] = h[l]
			i = l
		}
		h[i] = last
	}
	b.items = h
	b.free = append(b.free, top.slot)
	return &b.slots[top.slot]
}
