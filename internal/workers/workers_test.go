package workers

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goid returns the id of the calling goroutine, from its stack's header.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// waitFor polls cond until it holds or ten seconds pass (not a timing
// assertion: the condition only has to come true).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// blockedWorkers returns how many workers are blocked waiting for their
// next function, read from every goroutine's stack.
func blockedWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		header, _, _ := bytes.Cut(g, []byte("\n"))
		if bytes.Contains(header, []byte("[select")) && bytes.Contains(g, []byte("workers.worker(")) {
			count++
		}
	}
	return count
}

// limits sets the pool's limits for a test, restored after it; workers the
// test starts wait at most d.
func limits(t *testing.T, d time.Duration, most int64) {
	t.Helper()
	d0, m0 := idleTimeout.Load(), maxIdle.Load()
	idleTimeout.Store(int64(d))
	maxIdle.Store(most)
	t.Cleanup(func() { idleTimeout.Store(d0); maxIdle.Store(m0) })
}

// Functions run one after another run on one goroutine: the one whose
// stack grew for the first.
func TestSequentialFunctionsShareAGoroutine(t *testing.T) {
	limits(t, 2*time.Second, MaxIdle)
	waitFor(t, "workers of earlier tests gone", func() bool { return idleWorkers() == 0 })
	ids := map[int64]bool{}
	for range 100 {
		done := make(chan int64)
		Go(func() { done <- goid() })
		ids[<-done] = true
		// Counted idle is not yet waiting: the worker counts itself
		// before it reaches its select, and Go's send succeeds only into
		// a worker blocked there.
		waitFor(t, "the worker waiting again", func() bool { return blockedWorkers() == 1 })
	}
	if len(ids) != 1 {
		t.Fatalf("100 functions run one at a time ran on %d goroutines, want 1", len(ids))
	}
	if ids[goid()] {
		t.Fatal("a function ran on the caller's goroutine")
	}
}

// Go never waits for a busy worker: functions that block all run at once,
// and each runs exactly once.
func TestGoNeverBlocksAndRunsEachOnce(t *testing.T) {
	limits(t, 50*time.Millisecond, MaxIdle)
	const n = 2000
	release := make(chan struct{})
	var running, ran atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / 4 {
				Go(func() {
					running.Add(1)
					<-release
					ran.Add(1)
				})
			}
		}()
	}
	wg.Wait()
	waitFor(t, "every function running at once", func() bool { return running.Load() == n })
	close(release)
	waitFor(t, "every function done", func() bool { return ran.Load() == n })
	time.Sleep(10 * time.Millisecond)
	if got := ran.Load(); got != n {
		t.Fatalf("%d runs, want %d", got, n)
	}
}

// Idle workers are bounded in number and exit after the idle timeout.
func TestIdleWorkersAreBoundedAndExit(t *testing.T) {
	limits(t, 200*time.Millisecond, 4)
	waitFor(t, "workers of earlier tests gone", func() bool { return idleWorkers() == 0 })
	release := make(chan struct{})
	var ran atomic.Int64
	for range 20 {
		Go(func() { <-release; ran.Add(1) })
	}
	close(release)
	waitFor(t, "every function done", func() bool { return ran.Load() == 20 })
	time.Sleep(20 * time.Millisecond)
	if n := idleWorkers(); n > 4 {
		t.Fatalf("%d idle workers, want at most 4", n)
	}
	waitFor(t, "idle workers exiting after the timeout", func() bool { return idleWorkers() == 0 })
}

// deep uses about n KB of stack.
//
//go:noinline
func deep(n int) byte {
	var pad [1000]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return deep(n-1) + pad[n%len(pad)]
}

var sink atomic.Int64

// BenchmarkDeepFunction runs a function that needs about 32 KB of stack,
// on a new goroutine each time (go) and on a worker (Go).
func BenchmarkDeepFunction(b *testing.B) {
	for _, c := range []struct {
		name  string
		spawn func(func())
	}{{"go", func(fn func()) { go fn() }}, {"workers.Go", Go}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan struct{})
			fn := func() { sink.Add(int64(deep(32))); done <- struct{}{} }
			for b.Loop() {
				c.spawn(fn)
				<-done
			}
		})
	}
}
