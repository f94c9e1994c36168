package groundhog

import (
	"encoding/binary"
	"encoding/hex"
	"sync"
	"testing"
	"time"
)

// TestNewTimeID: 32 hex digits, the first 16 the time's unix nanoseconds
// (so ids sort by time), and ids drawn for one instant by many goroutines
// all distinct.
func TestNewTimeID(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 123, time.UTC)
	id := NewTimeID(t0)
	b, err := hex.DecodeString(id)
	if err != nil || len(id) != 32 {
		t.Fatalf("id %q: not 32 hex digits (%v)", id, err)
	}
	if got := int64(binary.BigEndian.Uint64(b[:8])); got != t0.UnixNano() {
		t.Fatalf("time half %d, want %d", got, t0.UnixNano())
	}
	if later := NewTimeID(t0.Add(time.Nanosecond)); later <= id {
		t.Fatalf("%q (1 ns later) does not sort after %q", later, id)
	}
	const workers, each = 8, 20000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], NewTimeID(t0))
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, l := range ids {
		for _, id := range l {
			if seen[id] {
				t.Fatalf("id %q drawn twice", id)
			}
			seen[id] = true
		}
	}
}
