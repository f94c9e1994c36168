package observe

import (
	"bufio"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// AccessLog writes the access line of each call (AppendLine) without ever
// making the call wait for the writer: lines go into a bounded queue that
// one goroutine drains into a buffered writer. When the queue is full the
// line is dropped and counted (Dropped), and a warning says so at most
// once per DropReport. Close writes every queued line and flushes.
type AccessLog struct {
	json bool
	warn *slog.Logger
	ch   chan *[]byte
	pool sync.Pool

	mu     sync.RWMutex // Record holds it shared; Close exclusively
	closed bool

	dropped atomic.Uint64
	done    chan struct{}
}

// DropReport is the least time between two warnings about dropped lines.
const DropReport = 10 * time.Second

// NewAccessLog starts the writer goroutine: lines go to w (text, or JSON
// when asJSON), queue lines at most wait, and warn (may be nil) says when
// lines were dropped.
func NewAccessLog(w io.Writer, asJSON bool, queue int, warn *slog.Logger) *AccessLog {
	if queue < 1 {
		queue = 1
	}
	a := &AccessLog{json: asJSON, warn: warn, ch: make(chan *[]byte, queue), done: make(chan struct{})}
	a.pool.New = func() any { b := make([]byte, 0, 512); return &b }
	go a.drain(w)
	return a
}

// Record queues the line of e, logged now; when the queue is full the line
// is dropped and counted. It never blocks on the writer.
func (a *AccessLog) Record(e *groundhog.LedgerEntry) {
	now := time.Now()
	bp := a.pool.Get().(*[]byte)
	*bp = AppendLine((*bp)[:0], now, e, a.json)
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		a.dropped.Add(1)
		a.pool.Put(bp)
		return
	}
	select {
	case a.ch <- bp:
	default:
		a.dropped.Add(1)
		a.pool.Put(bp)
	}
	a.mu.RUnlock()
}

// Dropped is the number of lines dropped since the start.
func (a *AccessLog) Dropped() uint64 { return a.dropped.Load() }

// Close writes every queued line, flushes, and stops the writer. Lines
// recorded after Close are dropped. Safe to call more than once.
func (a *AccessLog) Close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	<-a.done
}

func (a *AccessLog) drain(w io.Writer) {
	defer close(a.done)
	bw := bufio.NewWriterSize(w, 64<<10)
	var reported uint64
	var lastReport time.Time
	for bp := range a.ch {
		// A line is never split across two writes, so lines written
		// to the same file by other loggers cannot land inside it.
		if len(*bp) > bw.Available() && bw.Buffered() > 0 {
			_ = bw.Flush()
		}
		_, _ = bw.Write(*bp)
		if cap(*bp) <= 4<<10 {
			a.pool.Put(bp)
		}
		if len(a.ch) > 0 {
			continue
		}
		_ = bw.Flush() // the queue is empty: the lines reach w now
		if d := a.dropped.Load(); d > reported && a.warn != nil && time.Since(lastReport) >= DropReport {
			a.warn.Warn("access log: lines dropped, the writer could not keep up", "dropped_total", d)
			reported, lastReport = d, time.Now()
		}
	}
	_ = bw.Flush()
}
