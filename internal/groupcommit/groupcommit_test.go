package groupcommit

import (
	"sync"
	"sync/atomic"
	"testing"
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
