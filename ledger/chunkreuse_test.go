package ledger

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// gatedStore copies the rows it is given once its gate opens (so a chunk
// reused too early would show up as other rows); it stores nothing.
type gatedStore struct {
	groundhog.LedgerStore
	gate    chan struct{} // nil: open
	entered chan struct{}
	mu      sync.Mutex
	rows    []groundhog.LedgerEntry
}

func (s *gatedStore) AppendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		s.entered <- struct{}{}
		<-gate
	}
	s.mu.Lock()
	s.rows = append(s.rows, rows...)
	s.mu.Unlock()
	return nil
}

func chunkRow(i int) groundhog.LedgerEntry {
	return groundhog.LedgerEntry{
		ID: fmt.Sprintf("row-%06d", i), Time: time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC),
		Tenant: "t", Operation: fmt.Sprintf("op-%d", i%7), RequestHash: fmt.Sprintf("sha256:%d", i),
		Shape: groundhog.ShapeChat, Model: "m", Provider: "p", Outcome: groundhog.OutcomeCacheHit, Status: 200,
		Saved: groundhog.Money(i), FullCost: groundhog.Money(i),
	}
}

// Committed chunks are reused by later segments (the active segment's first
// chunk is one a committed segment had), and every row reaches the store
// exactly as recorded, also when rows are recorded while a commit is in the
// store (a chunk reused before its commit ended would hand the store other
// rows).
func TestCommittedChunksReused(t *testing.T) {
	ctx := context.Background()
	const batch = 8
	st := &gatedStore{}
	w, err := OpenWriter(ctx, st, WriterOptions{JournalDir: t.TempDir(), BatchSize: batch, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	var want []groundhog.LedgerEntry
	record := func(n int) {
		for range n {
			e := chunkRow(len(want))
			if err := w.Record(e); err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
		}
	}
	firstChunk := func() *groundhog.LedgerEntry {
		w.mu.Lock()
		defer w.mu.Unlock()
		return &w.active.chunks[0][:1][0]
	}

	// Rows recorded while the first segment's commit is held in the store.
	// The gate is closed first: the committer may start that commit on its
	// own (the rows reach the batch) before the Flush below asks for it, and
	// it must be held either way.
	st.mu.Lock()
	st.gate, st.entered = make(chan struct{}), make(chan struct{}, 1)
	st.mu.Unlock()
	record(batch + 3) // two chunks
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush(ctx) }()
	<-st.entered
	record(2*batch + 5) // the next segment: three chunks, none of them reusable yet
	st.mu.Lock()
	close(st.gate)
	st.gate = nil
	st.mu.Unlock()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Steady traffic: each segment's chunk is a committed one.
	reused := 0
	for range 5 {
		record(1)
		seen := map[*groundhog.LedgerEntry]bool{firstChunk(): true}
		record(batch - 1)
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		record(1)
		if seen[firstChunk()] {
			reused++
		}
		record(batch - 1)
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if reused == 0 {
		t.Error("no segment reused a committed chunk")
	}
	st.mu.Lock()
	got := st.rows
	st.mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("store holds %d rows, want %d; row %d is %s, want %s", len(got), len(want), i, got[i].ID, want[i].ID)
			}
		}
		t.Fatalf("store holds %d rows, want %d", len(got), len(want))
	}
}

// A committed chunk kept for reuse holds no row of its last use (its
// strings must be free for the GC), over its whole capacity, and at most
// maxFreeChunks are kept.
func TestFreeChunksCleared(t *testing.T) {
	ctx := context.Background()
	const batch = 8
	w, err := OpenWriter(ctx, &gatedStore{}, WriterOptions{JournalDir: t.TempDir(), BatchSize: batch, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	n := 0
	for round := range 4 {
		for range (round + 1) * batch { // 1 to 4 full chunks a segment
			if err := w.Record(chunkRow(n)); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		free := append([][]groundhog.LedgerEntry(nil), w.freeChunks...)
		w.mu.Unlock()
		if len(free) == 0 || len(free) > maxFreeChunks {
			t.Fatalf("round %d: %d free chunks, want 1 to %d", round, len(free), maxFreeChunks)
		}
		for i, c := range free {
			if len(c) != 0 || cap(c) != batch {
				t.Fatalf("round %d: free chunk %d has len %d cap %d, want 0 and %d", round, i, len(c), cap(c), batch)
			}
			for j, e := range c[:cap(c)] {
				if !reflect.DeepEqual(e, groundhog.LedgerEntry{}) {
					t.Fatalf("round %d: free chunk %d still holds row %s at %d", round, i, e.ID, j)
				}
			}
		}
	}
}
