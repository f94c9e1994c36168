package ledger

// reorderBuf is Analyze's reorder buffer: the parsed calls not yet
// released, popped in (timestamp, line) order.
//
// It runs on the one goroutine that counts calls in order, which every
// line passes through, so it is kept cheap: the heap orders 24-byte
// (time, line, slot) items, not the ~200-byte calls, and calls live in
// reused slots, so a push neither allocates (container/heap boxes every
// value in an interface) nor moves a call more than once.
//
// Most lines come in order, so the items are in two parts: run, a queue of
// items in ascending order (a pushed item not before the last of run joins
// its end), and the heap for the others. pop takes the earlier of run's
// head and the heap's top: the same (timestamp, line) order as one heap,
// since no two items are equal, without a heap's sift for the lines in
// order.
type reorderBuf struct {
	items []bufItem     // a binary min-heap of the items out of order
	run   []bufItem     // the items in order, ascending, from run[head]
	head  int           // run[:head] are popped
	slots []pendingCall // the calls; items point into it
	free  []int32       // unused slots
}

type bufItem struct {
	t, line int64
	slot    int32
}

func (a bufItem) less(b bufItem) bool { return a.t < b.t || (a.t == b.t && a.line < b.line) }

func (b *reorderBuf) len() int { return len(b.items) + len(b.run) - b.head }

// fromRun says whether the next item pop returns is run's head.
func (b *reorderBuf) fromRun() bool {
	if b.head == len(b.run) {
		return false
	}
	return len(b.items) == 0 || b.run[b.head].less(b.items[0])
}

// minTime is the timestamp of the call pop would return; len must be > 0.
func (b *reorderBuf) minTime() int64 {
	if b.fromRun() {
		return b.run[b.head].t
	}
	return b.items[0].t
}

func (b *reorderBuf) push(c *pendingCall) {
	var slot int32
	if n := len(b.free); n > 0 {
		slot, b.free = b.free[n-1], b.free[:n-1]
	} else {
		slot = int32(len(b.slots))
		b.slots = append(b.slots, pendingCall{})
	}
	b.slots[slot] = *c
	it := bufItem{t: c.t, line: c.line, slot: slot}
	if b.head == len(b.run) {
		b.run, b.head = b.run[:0], 0
	}
	if n := len(b.run); n == b.head || !it.less(b.run[n-1]) {
		if b.head >= 1024 && 2*b.head >= n { // popped half: move the rest down
			b.run, b.head = b.run[:copy(b.run, b.run[b.head:])], 0
		}
		b.run = append(b.run, it)
		return
	}
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
func (b *reorderBuf) pop() *pendingCall {
	if b.fromRun() {
		top := b.run[b.head]
		b.head++
		b.free = append(b.free, top.slot)
		return &b.slots[top.slot]
	}
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
