package idempotency

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// renewConcurrency bounds the renewal writes one round of the renewer has
// in flight at once.
const renewConcurrency = 8

// renewer renews the leases of every held Claim of one Service: one
// goroutine that sleeps until the earliest claim is due (claimed or last
// renewed Lease/3 ago), renews the claims that are due — at most
// renewConcurrency writes at once — and sleeps again. A claim that
// finishes before it is due costs a heap insert and a heap removal: no
// goroutine, timer or channel of its own.
//
// The goroutine runs only while there are claims: it starts with the first
// one and exits when it wakes to find none (so at most Lease/3 after the
// last claim finished). Nothing needs to stop it.
//
// The alarm is a single wall-clock timer, reset in place; with an
// AfterClock (a test's fake clock) it is the channel of the latest After,
// and the loop is woken to wait on the new channel instead.
type renewer struct {
	s     *Service
	every time.Duration // Lease/3

	mu      sync.Mutex
	heap    claimHeap // by Claim.due
	running bool      // the loop goroutine is running
	armed   time.Time
	timer   *time.Timer      // wall-clock alarm (nil with an AfterClock)
	alarm   <-chan time.Time // AfterClock alarm
	wake    chan struct{}    // 1-buffered: the AfterClock alarm was replaced
}

func newRenewer(s *Service) *renewer {
	return &renewer{s: s, every: s.lease / 3, wake: make(chan struct{}, 1)}
}

// add schedules c's first renewal at Lease/3 from now.
func (r *renewer) add(c *Claim) {
	now := r.s.clock.Now()
	r.mu.Lock()
	c.due = now.Add(r.every)
	heap.Push(&r.heap, c)
	switch {
	case !r.running:
		r.running = true
		r.setAlarm(c.due, now)
		go r.loop()
	case !r.armed.IsZero() && !c.due.After(r.armed):
		// Due no later than the alarm (with a wall clock, later claims
		// are due strictly later: only the first of a run gets here).
		r.setAlarm(c.due, now)
	}
	// Armed is zero while the loop renews a round: it sets the alarm
	// from the heap when the round ends.
	r.mu.Unlock()
}

// stop ends c's renewals: it leaves the heap, and if a renewal write of it
// is in flight, stop waits for that write, so that no renewal races with
// the finishing write that follows. It is idempotent.
func (r *renewer) stop(c *Claim) {
	r.mu.Lock()
	c.stopped = true
	if c.idx >= 0 {
		heap.Remove(&r.heap, c.idx)
	}
	inflight := c.inflight
	r.mu.Unlock()
	if inflight != nil {
		<-inflight
	}
}

// setAlarm makes the loop wake at t (now is the clock's time). r.mu held.
func (r *renewer) setAlarm(t, now time.Time) {
	r.armed = t
	d := t.Sub(now)
	if ac, ok := r.s.clock.(AfterClock); ok {
		r.alarm = ac.After(d)
		select {
		case r.wake <- struct{}{}:
		default:
		}
		return
	}
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
}

func (r *renewer) loop() {
	for {
		r.mu.Lock()
		alarm := r.alarm
		if r.timer != nil {
			alarm = r.timer.C
		}
		r.mu.Unlock()
		select {
		case <-alarm:
		case <-r.wake:
			continue // a new alarm channel (AfterClock)
		}
		now := r.s.clock.Now()
		r.mu.Lock()
		r.armed = time.Time{}
		var due []*Claim
		for len(r.heap) > 0 && !r.heap[0].due.After(now) {
			c := heap.Pop(&r.heap).(*Claim)
			c.inflight = make(chan struct{})
			due = append(due, c)
		}
		if len(due) > 0 {
			r.mu.Unlock()
			r.renewAll(due)
			r.mu.Lock()
		}
		if len(r.heap) == 0 {
			r.running = false
			r.armed = time.Time{}
			r.mu.Unlock()
			return
		}
		if head := r.heap[0].due; r.armed.IsZero() || head.Before(r.armed) {
			r.setAlarm(head, r.s.clock.Now())
		}
		r.mu.Unlock()
	}
}

// renewAll renews the claims of one round, renewConcurrency at a time, and
// puts back those still held, due Lease/3 after their renewal.
func (r *renewer) renewAll(due []*Claim) {
	if len(due) == 1 {
		r.renewOne(due[0])
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(due), renewConcurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(due) {
					return
				}
				r.renewOne(due[i])
			}
		})
	}
	wg.Wait()
}

func (r *renewer) renewOne(c *Claim) {
	err := c.renew(context.Background())
	lost := false
	switch groundhog.ErrorCode(err) {
	case "":
	case groundhog.ESTALE:
		r.s.log.Warn("idempotency: lease lost", "tenant", c.op.Tenant, "key", c.op.Key, "token", c.op.FencingToken)
		lost = true
	default:
		// A transient store failure: try again at the next round; if
		// the lease runs out meanwhile, a takeover will tell us.
		r.s.log.Warn("idempotency: lease renewal failed", "tenant", c.op.Tenant, "key", c.op.Key, "err", err)
	}
	now := r.s.clock.Now()
	r.mu.Lock()
	close(c.inflight)
	c.inflight = nil
	if !c.stopped && !lost {
		c.due = now.Add(r.every)
		heap.Push(&r.heap, c)
	}
	r.mu.Unlock()
}

// claimHeap is a container/heap of held claims, earliest due first; each
// claim knows its position (Claim.idx, -1 when out of the heap) so that
// stop can remove it. Used with r.mu held.
type claimHeap []*Claim

func (h claimHeap) Len() int           { return len(h) }
func (h claimHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h claimHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *claimHeap) Push(x any) {
	c := x.(*Claim)
	c.idx = len(*h)
	*h = append(*h, c)
}

func (h *claimHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	c.idx = -1
	return c
}
