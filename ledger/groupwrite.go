package ledger

import (
	"sync"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
)

// Group commit of journal writes.
//
// Concurrent Record calls share one journal append (one copy into the
// mapped segment, or one pwrite(2) where it is not mapped). A caller that
// finds the Writer's lock free appends its own row at once: a lone caller
// waits for nothing (no timer, no wait for company). A caller that finds an
// append in progress joins the open group, or opens one and leads it: its
// encoded record goes into the group's buffer. The leader takes the lock
// (waiting for the append in progress), closes the group to joiners,
// appends the whole buffer, queues the rows and wakes the members. Every
// member returns only once the append that carries its row has completed,
// so the guarantee of Record is unchanged: when it returns nil the row is in
// the page cache.
//
// A kill -9 in the middle of a group's append can leave a torn record at the
// tail: replay cuts it off by its CRC, as for an OS crash. No member of that
// group had returned.

// group is one shared journal write.
type group struct {
	buf  []byte                  // the framed records, in order
	rows []groundhog.LedgerEntry // the same rows, for the in-memory queue
	wg   sync.WaitGroup          // done once the write has completed
	err  error                   // the write's result, for every member
	refs atomic.Int32            // members that have not read err yet
}

// maxPooledGroupBuf bounds the buffer a group keeps when it is recycled.
const maxPooledGroupBuf = 256 << 10

var groupPool = sync.Pool{New: func() any { return &group{buf: make([]byte, 0, 4096)} }}

// appendShared writes rec (the framed record of e) to the active journal
// segment, sharing the write(2) with concurrent callers, and queues e.
func (w *Writer) appendShared(e *groundhog.LedgerEntry, rec []byte) error {
	w.gmu.Lock()
	g := w.open
	lead := g == nil
	if lead {
		g = groupPool.Get().(*group)
		g.wg.Add(1)
		w.open = g
	}
	g.buf = append(g.buf, rec...)
	g.rows = append(g.rows, *e)
	g.refs.Add(1)
	w.gmu.Unlock()

	if lead {
		w.mu.Lock() // waits for the write in progress
		w.gmu.Lock()
		w.open = nil // later callers open the next group
		w.gmu.Unlock()
		full, err := w.writeGroupLocked(g)
		w.mu.Unlock()
		g.err = err
		g.wg.Done()
		if full {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	} else {
		g.wg.Wait()
	}
	err := g.err
	if g.refs.Add(-1) == 0 {
		clear(g.rows)
		g.rows = g.rows[:0]
		if cap(g.buf) > maxPooledGroupBuf {
			g.buf = nil
		} else {
			g.buf = g.buf[:0]
		}
		g.err = nil
		groupPool.Put(g)
	}
	return err
}

// writeGroupLocked appends g's records to the journal at once and queues
// its rows.
// It reports whether the active segment reached rotateAt. w.mu is held.
func (w *Writer) writeGroupLocked(g *group) (bool, error) {
	if w.closed {
		return false, ErrClosed
	}
	seg := w.active
	if err := seg.writeRecords(g.buf); err != nil {
		return false, err
	}
	w.writes++
	for i := range g.rows {
		w.queueLocked(seg, &g.rows[i])
	}
	return seg.n >= w.rotateAt, nil
}
