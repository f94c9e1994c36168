// Package workers runs functions on goroutines that outlive them, so a
// goroutine's stack, once grown, serves the next function too.
//
// Why: a new goroutine starts with a small stack (the runtime's average
// need) and grows it by copying when a call chain goes deeper — every
// frame of the chain moved and adjusted, each time it doubles. A gateway
// miss runs its upstream call on a goroutine of its own (the flight, so
// that followers can share it and it can outlive its client), and that
// goroutine goes deep: the prompt-cache stage's parse of the request, the
// HTTP client, the stream's reading. Started afresh for every miss, its
// stack grew two or three times per call; on a streamed Anthropic Messages
// miss of 1 KB that was 6 % of the gateway's CPU (runtime.newstack).
//
// Go hands fn to a worker waiting for work, or starts a new one; a worker
// waits at most IdleTimeout for its next function, and at most MaxIdle
// workers wait at once (a burst's extra workers exit when it ends). The
// runtime still shrinks an idle worker's stack at garbage collections, so a
// pool that waits holds little memory.
package workers

import (
	"sync/atomic"
	"time"
)

// Defaults of the package-level pool.
const (
	IdleTimeout = 10 * time.Second
	MaxIdle     = 1024
)

var (
	work = make(chan func()) // unbuffered: a send succeeds only into a waiting worker
	idle atomic.Int64        // workers waiting on work

	// The pool's limits (IdleTimeout and MaxIdle; tests change them).
	idleTimeout, maxIdle atomic.Int64
)

func init() {
	idleTimeout.Store(int64(IdleTimeout))
	maxIdle.Store(MaxIdle)
}

// Go runs fn on a worker goroutine: one waiting for work, else a new one.
// It never blocks. As with a go statement, a panic in fn that fn does not
// recover ends the process.
func Go(fn func()) {
	select {
	case work <- fn:
	default:
		go worker(fn)
	}
}

// worker runs fn, then the functions Go hands it, until it has waited the
// idle timeout for one or the most idle workers are waiting already.
func worker(fn func()) {
	fn()
	t := time.NewTimer(time.Duration(idleTimeout.Load()))
	defer t.Stop()
	for {
		if idle.Add(1) > maxIdle.Load() {
			idle.Add(-1)
			return
		}
		select {
		case fn = <-work:
			idle.Add(-1)
			fn()
			t.Reset(time.Duration(idleTimeout.Load()))
		case <-t.C:
			idle.Add(-1)
			return
		}
	}
}

// idleWorkers returns how many workers are waiting for work.
func idleWorkers() int { return int(idle.Load()) }
