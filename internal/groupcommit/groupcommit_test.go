package groupcommit

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type testWrite struct {
	id  int
	ran bool // set by the batch that holds it
	Waiter
}

// Writes of concurrent callers run in batches, one at a time: each write
// in exactly one batch, led by the caller whose write comes first in it,
// and each caller returns only after its write's batch ran.
func TestEveryWriteRunsOnceInOneBatchAtATime(t *testing.T) {
	var q Queue[*testWrite]
	const n = 2000
	var running, batches atomic.Int64
	seen := make([]atomic.Int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &testWrite{id: i, Waiter: NewWaiter()}
			q.Run(w, func(batch []*testWrite) {
				if running.Add(1) != 1 {
					t.Error("two batches ran at once")
				}
				if batch[0] != w {
					t.Error("the leader's write is not first in its batch")
				}
				for _, b := range batch {
					seen[b.id].Add(1)
					b.ran = true
				}
				batches.Add(1)
				running.Add(-1)
			})
			if !w.ran {
				t.Error("a caller returned before its write's batch ran")
			}
		}()
	}
	wg.Wait()
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("write %d ran in %d batches", i, c)
		}
	}
	t.Logf("%d writes in %d batches", n, batches.Load())
	if q.Queued() != 0 {
		t.Errorf("%d writes left queued", q.Queued())
	}
}

// A batch whose run panics (a handler's panic, which net/http recovers)
// leaves the queue working: the writes queued behind it still run, and a
// later write leads a batch of its own.
func TestAPanickingBatchDoesNotStopTheQueue(t *testing.T) {
	var q Queue[*testWrite]
	inRun, release := make(chan struct{}), make(chan struct{})
	go func() {
		defer func() { _ = recover() }()
		q.Run(&testWrite{Waiter: NewWaiter()}, func([]*testWrite) {
			close(inRun)
			<-release
			panic("the batch failed")
		})
	}()
	<-inRun
	queued := &testWrite{id: 1, Waiter: NewWaiter()}
	done := make(chan struct{})
	go func() {
		q.Run(queued, func(batch []*testWrite) {
			for _, w := range batch {
				w.ran = true
			}
		})
		close(done)
	}()
	for q.Queued() != 1 {
		runtime.Gosched()
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the write queued behind a panicking batch never ran")
	}
	if !queued.ran {
		t.Error("the write queued behind a panicking batch returned without running")
	}
	later := &testWrite{id: 2, Waiter: NewWaiter()}
	ran := make(chan struct{})
	go func() {
		q.Run(later, func(batch []*testWrite) { batch[0].ran = true })
		close(ran)
	}()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a write after a panicking batch never ran")
	}
}
