// Package groupcommit groups the work of concurrent callers into batches,
// one batch at a time, without a goroutine of its own: the database stores
// commit each batch of writes in one transaction (sqlite's operation
// writes, postgres's group commit), and the cache stores send each batch
// of look-ups in one round trip (redis's reads, postgres's cache
// look-ups). A "write" below is any such piece of work.
//
// The first caller to find no batch running leads. It yields once
// (runtime.Gosched: the callers about to write get to queue behind it; on
// an idle process this costs well under a microsecond), takes every write
// queued so far, its own included, runs them as one batch, and if more
// writes queued meanwhile, hands the lead to the oldest of them before
// returning. The others wait until their batch has run.
package groupcommit

import (
	"runtime"
	"sync"
)

// Waiter is what a write carries for its queue; a write type embeds it
// and makes it with NewWaiter. It is ready for another write as soon as
// Run returns.
type Waiter struct {
	lead bool          // set before done is signalled: run the next batch
	done chan struct{} // buffered (1): the batch ran, or lead
}

// NewWaiter returns a Waiter ready for use.
func NewWaiter() Waiter { return Waiter{done: make(chan struct{}, 1)} }

func (w *Waiter) waiter() *Waiter { return w }

// Write is a pointer to a write type that embeds a Waiter.
type Write interface{ waiter() *Waiter }

// Queue groups writes of type W.
type Queue[W Write] struct {
	mu    sync.Mutex
	queue []W
	spare []W // the previous batch's slice, reused
	busy  bool
}

// Run queues w and returns once the batch holding it has run. The caller
// that leads a batch calls run with every write of it, w first; run may
// reorder the slice. When Run returns, run has set w's results.
func (q *Queue[W]) Run(w W, run func(batch []W)) {
	q.mu.Lock()
	q.queue = append(q.queue, w)
	if q.busy {
		q.mu.Unlock()
		<-w.waiter().done
		if !w.waiter().lead {
			return
		}
		w.waiter().lead = false
		q.mu.Lock() // lead: the queue holds w and whatever came after it
	}
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		runtime.Gosched()
		q.mu.Lock()
	}
	batch := q.queue
	q.queue = q.spare[:0]
	q.mu.Unlock()

	defer q.finish(w.waiter(), batch)
	run(batch)
}

// finish wakes the writes of batch (but the leader's own) and hands the
// lead to the oldest write queued meanwhile, or leaves the queue idle. It
// runs even when run panicked (net/http recovers a handler's panic and the
// process goes on), so the queue never stays busy with no one to lead it.
func (q *Queue[W]) finish(leader *Waiter, batch []W) {
	for _, o := range batch {
		if o.waiter() != leader {
			o.waiter().done <- struct{}{}
		}
	}
	q.mu.Lock()
	clear(batch)
	q.spare = batch
	if len(q.queue) > 0 {
		next := q.queue[0].waiter()
		next.lead = true
		next.done <- struct{}{}
	} else {
		q.busy = false
	}
	q.mu.Unlock()
}

// Queued returns how many writes wait for a batch (not those of the
// batch running).
func (q *Queue[W]) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}
