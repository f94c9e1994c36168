package observe_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/observe"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every recorded line is written, in order, once Close returns: a graceful
// stop loses no line.
func TestAccessLogCloseWritesEveryLine(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var out lockedBuffer
		a := observe.NewAccessLog(&out, asJSON, 100000, nil)
		const n = 5000
		for i := range n {
			e := benchEntry()
			e.Tenant = fmt.Sprintf("t%d", i)
			a.Record(&e)
		}
		a.Close()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("json=%v: %d lines written, want %d (dropped %d)", asJSON, len(lines), n, a.Dropped())
		}
		for i, l := range lines {
			want := fmt.Sprintf(`tenant=t%d `, i)
			if asJSON {
				want = fmt.Sprintf(`"tenant":"t%d",`, i)
			}
			if !strings.Contains(l, want) {
				t.Fatalf("json=%v line %d = %q, want it to contain %q", asJSON, i, l, want)
			}
		}
		e := benchEntry()
		a.Record(&e) // after Close: dropped, no panic
		if a.Dropped() != 1 {
			t.Errorf("dropped after Close = %d, want 1", a.Dropped())
		}
	}
}

// Calls recording at once each get their line written whole, exactly once.
func TestAccessLogConcurrentLinesWhole(t *testing.T) {
	var out lockedBuffer
	a := observe.NewAccessLog(&out, false, 100000, nil)
	const workers, per = 8, 500
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				e := benchEntry()
				e.Tenant = fmt.Sprintf("w%d-%d", g, i)
				a.Record(&e)
			}
		}()
	}
	wg.Wait()
	a.Close()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "time=") || !strings.HasSuffix(l, " stream=false") {
			t.Fatalf("line not whole: %q", l)
		}
		_, rest, _ := strings.Cut(l, " tenant=")
		tenant, _, _ := strings.Cut(rest, " ")
		if seen[tenant] {
			t.Fatalf("line of %s written twice", tenant)
		}
		seen[tenant] = true
	}
	if len(seen) != workers*per || a.Dropped() != 0 {
		t.Fatalf("%d distinct lines written, %d dropped; want %d and 0", len(seen), a.Dropped(), workers*per)
	}
}

// stuckWriter blocks every write until released: a log destination that
// cannot keep up (a full pipe, a stalled terminal).
type stuckWriter struct {
	release chan struct{}
	out     lockedBuffer
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	<-s.release
	return s.out.Write(p)
}

// A writer that blocks never blocks a call: Record returns, the lines that
// do not fit in the queue are counted as dropped, and the rest are written
// once the writer moves again.
func TestAccessLogFullQueueDropsWithoutBlocking(t *testing.T) {
	w := &stuckWriter{release: make(chan struct{})}
	a := observe.NewAccessLog(w, false, 8, nil)
	const n = 1000
	for range n {
		e := benchEntry()
		a.Record(&e) // would hang here if a full queue blocked the caller
	}
	dropped := a.Dropped()
	if dropped == 0 || dropped >= n {
		t.Fatalf("dropped %d of %d with a queue of 8 and a stuck writer", dropped, n)
	}
	close(w.release)
	a.Close()
	written := uint64(strings.Count(w.out.String(), "\n"))
	if written+dropped != n {
		t.Errorf("written %d + dropped %d != %d recorded", written, dropped, n)
	}
}

func BenchmarkAccessLogRecord(b *testing.B) {
	a := observe.NewAccessLog(discard{}, false, 4096, nil)
	defer a.Close()
	e := benchEntry()
	b.ReportAllocs()
	for b.Loop() {
		a.Record(&e)
	}
	b.ReportMetric(float64(a.Dropped()), "dropped")
}

// A line recorded with the time its row was completed carries that time,
// not the time it was queued: the gateway passes the reading it already
// made for the row's latency.
func TestAccessLogRecordAtKeepsTheGivenTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	for _, asJSON := range []bool{false, true} {
		var out lockedBuffer
		a := observe.NewAccessLog(&out, asJSON, 16, nil)
		e := benchEntry()
		rec := &observe.Recorder{Access: a}
		if err := rec.RecordAt(e, nil, at); err != nil {
			t.Fatal(err)
		}
		a.RecordAt(&e, time.Time{}) // zero: now
		a.Close()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("json=%v: %d lines, want 2: %q", asJSON, len(lines), out.String())
		}
		if want := string(observe.AppendLine(nil, at, &e, asJSON)); lines[0]+"\n" != want && lines[0] != want {
			t.Errorf("json=%v: line %q, want %q", asJSON, lines[0], want)
		}
		if lines[1] == lines[0] {
			t.Errorf("json=%v: a line recorded without a time carries the given one of another: %q", asJSON, lines[1])
		}
	}
}
