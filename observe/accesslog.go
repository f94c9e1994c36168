package observe

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// AccessLog writes the access line of each call (AppendLine) without ever
// making the call wait for the writer: a call appends its line to a shared
// buffer of at most queue lines, and one goroutine takes the whole buffer
// and writes it with one Write. A line is a copy under a mutex, no channel
// send and no write(2) of its own: the writer is woken by the first line
// after it took the buffer, waits gather for more, and writes every line
// queued by then at once. When the buffer holds queue lines a new line is
// dropped and counted (Dropped), and a warning says so at most once per
// DropReport. Close writes every queued line.
type AccessLog struct {
	json bool
	warn *slog.Logger
	max  int // lines at most waiting

	mu     sync.Mutex
	buf    []byte // the lines waiting, whole
	lines  int    // how many
	closed bool
	wake   chan struct{} // one pending wake-up at most

	dropped atomic.Uint64
	done    chan struct{}
}

// DropReport is the least time between two warnings about dropped lines.
const DropReport = 10 * time.Second

// gather is how long the writer waits, once woken by a line, for more
// lines to write with it: a line reaches the log about this much later
// (more when the previous write is slow).
const gather = time.Millisecond

// maxKeptBuf keeps one burst of long lines from pinning its buffer.
const maxKeptBuf = 4 << 20

// NewAccessLog starts the writer goroutine: lines go to w (text, or JSON
// when asJSON), queue lines at most wait, and warn (may be nil) says when
// lines were dropped.
func NewAccessLog(w io.Writer, asJSON bool, queue int, warn *slog.Logger) *AccessLog {
	if queue < 1 {
		queue = 1
	}
	a := &AccessLog{json: asJSON, warn: warn, max: queue, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go a.drain(w)
	return a
}

// Record queues the line of e, logged now; when the queue is full the line
// is dropped and counted. It never blocks on the writer.
func (a *AccessLog) Record(e *groundhog.LedgerEntry) { a.RecordAt(e, time.Time{}) }

// RecordAt is Record with the line's time already read (zero: now).
func (a *AccessLog) RecordAt(e *groundhog.LedgerEntry, at time.Time) {
	if at.IsZero() {
		at = time.Now()
	}
	var arr [512]byte // a line is about 330 bytes: encoded on the stack
	line := AppendLine(arr[:0], at, e, a.json)
	a.mu.Lock()
	if a.closed || a.lines >= a.max {
		a.mu.Unlock()
		a.dropped.Add(1)
		return
	}
	a.buf = append(a.buf, line...)
	a.lines++
	first := a.lines == 1
	a.mu.Unlock()
	if first { // the writer has taken every earlier line: wake it
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// Dropped is the number of lines dropped since the start.
func (a *AccessLog) Dropped() uint64 { return a.dropped.Load() }

// Close writes every queued line and stops the writer. Lines recorded
// after Close are dropped. Safe to call more than once.
func (a *AccessLog) Close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default: // a wake-up is pending: the writer sees closed after it
	}
	<-a.done
}

func (a *AccessLog) drain(w io.Writer) {
	defer close(a.done)
	var spare []byte
	var reported uint64
	var lastReport time.Time
	for range a.wake {
		a.mu.Lock()
		closed := a.closed
		a.mu.Unlock()
		if !closed {
			// Let the lines of the next moment join this write: one
			// write(2) and one wake-up per gather at most, however many
			// calls end in it.
			time.Sleep(gather)
		}
		a.mu.Lock()
		b := a.buf
		a.buf, a.lines = spare[:0], 0
		closed = a.closed
		a.mu.Unlock()
		if len(b) > 0 {
			// Whole lines in one Write: lines written to the same
			// file by other loggers cannot land inside one.
			_, _ = w.Write(b)
		}
		spare = b
		if cap(spare) > maxKeptBuf {
			spare = nil
		}
		if closed {
			return
		}
		if d := a.dropped.Load(); d > reported && a.warn != nil && time.Since(lastReport) >= DropReport {
			a.warn.Warn("access log: lines dropped, the writer could not keep up", "dropped_total", d)
			reported, lastReport = d, time.Now()
		}
	}
}
