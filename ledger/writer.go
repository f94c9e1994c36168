package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// WriterOptions configure a Writer. Zero values take the defaults.
type WriterOptions struct {
	// JournalDir is the directory of the append-only journal (created if
	// missing; one process at a time, enforced with a lock file). Empty
	// disables the journal: rows then live only in memory until committed,
	// so a kill -9 loses up to BatchSize rows or FlushInterval of traffic.
	// Use that only where such a loss is acceptable (tests, benchmarks).
	JournalDir string
	// BatchSize is the most rows one AppendLedger call carries and the
	// number of queued rows that triggers a commit before FlushInterval.
	// Default 2048 (fewer, larger commits: the commit of a SQLite transaction
	// cost about a third as much as its inserts at 512, docs/design/0003-ledger-journal.md).
	BatchSize int
	// FlushInterval is the longest a recorded row waits before a commit is
	// attempted. Default 200ms.
	FlushInterval time.Duration
	// Logger receives store failures, retries and journal recovery. Default
	// slog.Default().
	Logger *slog.Logger
	// MaxBufferedRows bounds the uncommitted rows kept in memory (default
	// 65,536, about 20 MB). Past it, rows are still journaled but no longer
	// kept in memory: they are read back from their segment file when the
	// store accepts them again. Without a journal it is a hard limit: Record
	// fails with ErrBacklogFull.
	MaxBufferedRows int
}

const (
	defaultBatchSize       = 2048
	defaultFlushInterval   = 200 * time.Millisecond
	defaultMaxBufferedRows = 65536
	// outageSegmentRows is the segment size while the store is failing:
	// segments are then cut by size instead of at every attempt, so an outage
	// of hours leaves a few large files rather than thousands of small ones.
	outageSegmentRows = 65536
	maxBackoff        = 30 * time.Second
	// storeTimeout bounds one background commit attempt, so a hung store
	// turns into a retry instead of a stuck committer.
	storeTimeout = 30 * time.Second
)

var (
	// ErrClosed is returned by Record and Flush after Close.
	ErrClosed = errors.New("ledger: writer closed")
	// ErrBacklogFull is returned by Record when the journal is disabled and
	// MaxBufferedRows rows are waiting for the store.
	ErrBacklogFull = errors.New("ledger: backlog full and no journal to spill to")
)

// segment is one journal file and the rows written to it. The committer
// seals the active segment (a new one takes its place) and commits sealed
// segments in order; a segment's file is deleted once all its rows are in
// the store.
type segment struct {
	seq  uint64
	f    *os.File // nil without a journal, and once sealed
	m    []byte   // the file mapped shared, nil if unmapped (journal_map.go)
	size int64    // bytes written, to cut off a failed partial write
	n    int      // rows written
	// chunks hold the rows in memory in slices of at most BatchSize rows,
	// each one AppendLedger call: growing never copies rows already held.
	chunks  [][]groundhog.LedgerEntry
	spilled bool // rows were dropped from memory: read the file to commit
	sent    int  // leading chunks already accepted by the store
}

// Writer is the ledger's commit path: it makes every recorded row durable
// against a crash of the gateway process without an fsync or a store write on
// the request path, and commits rows to the LedgerStore in batches.
//
// # Commit path
//
// Record encodes the row and appends it to the active journal segment — a
// copy into the segment file's shared mapping (journal_map.go), or one
// pwrite(2) where the file cannot be mapped — then queues it in memory, and
// returns. Concurrent calls that find an append in progress share the next
// one (group commit, groupwrite.go): each still returns only once the append
// carrying its own row has completed.
// The gateway calls Record before it sends the response, so once a client
// has an answer its row is in the kernel's page cache: a kill -9 of the
// gateway cannot lose it (only an OS crash or power loss before writeback
// can, the same guarantee SQLite gives with synchronous=NORMAL). No fsync is
// ever issued; that is what keeps Record at a few microseconds.
//
// A background committer group-commits: when BatchSize rows are queued, when
// FlushInterval has passed, or on Flush, it seals the active segment (opens
// the next one and swaps it in under the lock, so Record never waits for a
// file creation), writes the sealed segment's rows to the store with
// AppendLedger in batches of at most BatchSize, and deletes the segment file.
// Segments are committed strictly in order.
//
// On OpenWriter, segments left by a previous process (killed, or closed
// with the store down) are replayed into the store before the Writer
// accepts anything: AppendLedger skips IDs already stored, so rows committed
// just before the kill are not duplicated. A torn tail (OS crash) is cut at
// the first record whose length or CRC does not check out; the file is kept
// with a ".corrupt" suffix.
//
// # Store failures
//
// When AppendLedger fails, the segment stays on disk and in memory and the
// committer retries with exponential backoff (FlushInterval doubling up to
// 30 s); Flush forces an immediate attempt. Record keeps working throughout:
// each row is still appended to the journal. The bound: memory holds at most
// MaxBufferedRows uncommitted rows (the rest are read back from the journal
// when the store recovers); disk is not bounded by the Writer — the journal
// grows by about 150–300 bytes a row until the store accepts rows again or
// the disk fills, at which point Record returns the write error.
//
// Record, Flush and Stats are safe for concurrent use.
type Writer struct {
	store       groundhog.LedgerStore
	log         *slog.Logger
	dir         string // "" without a journal
	lock        *os.File
	batch       int
	interval    time.Duration
	maxBuffered int

	mu        sync.Mutex
	active    *segment
	pending   []*segment // sealed, uncommitted, in seq order
	buffered  int        // rows held in memory (active + pending)
	backlog   int64      // uncommitted rows (in memory or spilled)
	rotateAt  int        // active rows that trigger a commit (or a cut during an outage)
	closed    bool
	committed uint64        // every segment with seq <= committed is in the store
	progress  chan struct{} // closed and replaced whenever committed advances
	lastErr   error         // last store error, nil after a successful attempt
	writes    uint64        // journal write(2) calls of Record
	recycled  uint64        // segments that reused a committed one's file (journal_recycle.go)

	freeChunks [][]groundhog.LedgerEntry // committed row chunks kept for reuse (chunkreuse.go)

	// Group commit of journal writes (groupwrite.go). gmu is taken after
	// mu, never before it.
	gmu  sync.Mutex
	open *group // accepting rows; its leader is waiting for mu

	// Owned by the committer goroutine.
	nextSeq      uint64
	backoff      time.Duration
	backoffUntil time.Time
	// Recycling (journal_recycle.go): spare is a committed segment kept
	// open, mapped and cleared for newSegment; held counts the sealed
	// segments kept mapped until they are committed (at most one).
	spare *segment
	held  int

	kick   chan struct{} // cap 1: the active segment reached rotateAt
	reqs   chan flushRequest
	ctx    context.Context // cancelled by Close to abort a background attempt
	cancel context.CancelFunc
	done   chan struct{} // closed when the committer exits
}

type flushRequest struct {
	ctx   context.Context
	reply chan error
}

// bufPool holds encode buffers so Record does not allocate per call.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// OpenWriter opens the journal in o.JournalDir, replays any segments left
// there into store (failing if the store refuses them: nothing new is
// accepted before old rows are safe), and starts the committer.
func OpenWriter(ctx context.Context, store groundhog.LedgerStore, o WriterOptions) (*Writer, error) {
	if store == nil {
		return nil, errors.New("ledger: nil store")
	}
	w := &Writer{
		store:       store,
		log:         o.Logger,
		dir:         o.JournalDir,
		batch:       o.BatchSize,
		interval:    o.FlushInterval,
		maxBuffered: o.MaxBufferedRows,
		progress:    make(chan struct{}),
		kick:        make(chan struct{}, 1),
		reqs:        make(chan flushRequest),
		done:        make(chan struct{}),
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.batch <= 0 {
		w.batch = defaultBatchSize
	}
	if w.interval <= 0 {
		w.interval = defaultFlushInterval
	}
	if w.maxBuffered <= 0 {
		w.maxBuffered = defaultMaxBufferedRows
	}
	w.rotateAt = w.batch
	w.nextSeq = 1
	if w.dir != "" {
		if err := os.MkdirAll(w.dir, 0o700); err != nil {
			return nil, fmt.Errorf("ledger: journal: %w", err)
		}
		lock, err := lockDir(w.dir)
		if err != nil {
			return nil, fmt.Errorf("ledger: journal: %w", err)
		}
		w.lock = lock
		// A spare segment (journal_recycle.go) left by a killed process:
		// cleared, no rows.
		if err := os.Remove(filepath.Join(w.dir, spareName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			unlockDir(lock)
			return nil, fmt.Errorf("ledger: journal: %w", err)
		}
		last, err := w.replay(ctx)
		if err != nil {
			unlockDir(lock)
			return nil, err
		}
		w.nextSeq = last + 1
	}
	seg, err := w.newSegment(0)
	if err != nil {
		if w.lock != nil {
			unlockDir(w.lock)
		}
		return nil, fmt.Errorf("ledger: journal: %w", err)
	}
	w.active = seg
	w.committed = seg.seq - 1
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.run()
	return w, nil
}

// replay commits every segment found in the journal directory, deleting each
// once it is in the store, and returns the highest sequence number seen.
func (w *Writer) replay(ctx context.Context) (uint64, error) {
	seqs, err := listSegments(w.dir)
	if err != nil {
		return 0, fmt.Errorf("ledger: journal: %w", err)
	}
	var last uint64
	for _, seq := range seqs {
		last = seq
		path := filepath.Join(w.dir, segmentName(seq))
		n, err := w.commitFile(ctx, path)
		switch {
		case errors.Is(err, errCorrupt):
			w.log.Error("ledger: journal segment has a damaged tail; replayed the rows before it and kept the file",
				"segment", path, "rows", n, "err", err)
			if rerr := os.Rename(path, path+".corrupt"); rerr != nil {
				return 0, fmt.Errorf("ledger: journal: %w", rerr)
			}
			continue
		case err != nil:
			return 0, fmt.Errorf("ledger: replay journal segment %s: %w", path, err)
		}
		if n > 0 {
			w.log.Info("ledger: replayed journal segment", "segment", path, "rows", n)
		}
		if err := os.Remove(path); err != nil {
			return 0, fmt.Errorf("ledger: journal: %w", err)
		}
	}
	return last, nil
}

// commitFile streams the rows of a segment file into the store in batches
// and returns how many it committed. A damaged record ends the file: the rows
// before it are committed and the error wraps errCorrupt.
func (w *Writer) commitFile(ctx context.Context, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sr, err := newSegmentReader(f)
	if err == io.EOF {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	rows := make([]groundhog.LedgerEntry, 0, w.batch)
	total := 0
	var readErr error
	for {
		var e groundhog.LedgerEntry
		err := sr.next(&e)
		if err == nil {
			rows = append(rows, e)
		} else if err != io.EOF {
			readErr = err
		}
		if len(rows) == w.batch || (err != nil && len(rows) > 0) {
			if aerr := w.store.AppendLedger(ctx, rows); aerr != nil {
				return total, aerr
			}
			total += len(rows)
			rows = rows[:0]
		}
		if err != nil {
			return total, readErr
		}
	}
}

// newSegment creates the next segment (a journal file unless the journal is
// disabled); prev is the size of the segment it follows (0 for the first),
// to prefault about as much of the new one. Only OpenWriter and the
// committer call it.
func (w *Writer) newSegment(prev int64) (*segment, error) {
	if seg := w.reuseSpare(w.nextSeq); seg != nil {
		w.nextSeq++
		w.mu.Lock()
		w.recycled++
		w.mu.Unlock()
		return seg, nil
	}
	seg := &segment{seq: w.nextSeq}
	if w.dir != "" {
		f, err := createSegment(w.dir, seg.seq)
		if err != nil {
			return nil, err
		}
		seg.f = f
		seg.size = int64(len(segMagic))
		seg.m = mapNewSegment(f, w.rotateAt, prev)
	}
	w.nextSeq++
	return seg, nil
}

// Record adds e to the ledger. When it returns nil, e is in the journal
// (in the page cache, no fsync): it survives a kill -9 of this process. It is
// committed to the store later, in a batch; Flush waits for that. An empty
// e.ID is replaced by a fresh groundhog.NewTimeID(e.Time) (an ID that names
// its row's time, which stores dedupe cheaply); a zero e.Time is an error.
//
// Record fails only if the journal write fails (disk full, I/O error), after
// Close (ErrClosed), without a journal when the backlog is full, or for a row
// larger than the journal's record limit (1 MiB; callers bound their
// strings far below it).
func (w *Writer) Record(e groundhog.LedgerEntry) error {
	if e.Time.IsZero() {
		return errors.New("ledger: entry has no time")
	}
	if e.ID == "" {
		e.ID = groundhog.NewTimeID(e.Time)
	}
	bp := bufPool.Get().(*[]byte)
	b := appendRecord((*bp)[:0], &e)
	if len(b)-recHeaderSize > maxRecordSize {
		// Replay would take a longer record for a torn tail and drop it
		// with everything after it: refuse it here instead.
		*bp = b
		bufPool.Put(bp)
		return fmt.Errorf("ledger: row of %d bytes is over the journal's %d-byte record limit", len(b)-recHeaderSize, maxRecordSize)
	}
	var err error
	switch {
	case w.dir == "":
		err = w.append(&e, b)
	case w.mu.TryLock():
		// No write in progress: write this row alone, at once.
		err = w.appendLocked(&e, b)
	default:
		err = w.appendShared(&e, b)
	}
	*bp = b
	bufPool.Put(bp)
	return err
}

func (w *Writer) append(e *groundhog.LedgerEntry, rec []byte) error {
	w.mu.Lock()
	return w.appendLocked(e, rec)
}

// appendLocked is append with w.mu held; it unlocks it.
func (w *Writer) appendLocked(e *groundhog.LedgerEntry, rec []byte) error {
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	seg := w.active
	if seg.f == nil && w.buffered >= w.maxBuffered {
		w.mu.Unlock()
		return ErrBacklogFull
	}
	if seg.f != nil {
		if err := seg.writeRecords(rec); err != nil {
			w.mu.Unlock()
			return err
		}
		w.writes++
	}
	w.queueLocked(seg, e)
	full := seg.n >= w.rotateAt
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// queueLocked counts a row written to seg and keeps it in memory unless the
// memory bound is reached. w.mu is held.
func (w *Writer) queueLocked(seg *segment, e *groundhog.LedgerEntry) {
	seg.n++
	w.backlog++
	if !seg.spilled {
		if w.buffered >= w.maxBuffered {
			// Past the memory bound the journal is the only copy; the
			// committer reads this segment back from its file.
			w.buffered -= seg.n - 1
			seg.chunks, seg.spilled = nil, true
		} else {
			if len(seg.chunks) == 0 || len(seg.chunks[len(seg.chunks)-1]) == w.batch {
				seg.chunks = append(seg.chunks, w.newChunkLocked())
			}
			last := &seg.chunks[len(seg.chunks)-1]
			*last = append(*last, *e)
			w.buffered++
		}
	}
}

// Flush returns when every row recorded before the call is in the store. It
// makes the committer attempt a commit at once (even while backing off after
// a store failure) and returns that attempt's error: the rows then stay in
// the journal and are retried in the background.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	target := w.active.seq
	if w.active.n == 0 {
		target--
	}
	done := w.committed >= target
	w.mu.Unlock()
	if done {
		return nil
	}
	return w.request(ctx)
}

// request asks the committer for an immediate attempt and waits for it.
func (w *Writer) request(ctx context.Context) error {
	req := flushRequest{ctx: ctx, reply: make(chan error, 1)}
	select {
	case w.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return ErrClosed
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting rows, commits everything recorded (retrying with
// backoff while ctx allows) and removes the journal's segment files. If ctx
// ends first, the uncommitted rows stay in the journal for the next
// OpenWriter and Close returns an error. Close is not safe to call twice
// concurrently; a second call after the first returned is a no-op.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()

	var err error
	for {
		err = w.request(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		w.mu.Lock()
		wait := w.backoff
		w.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	w.cancel()
	<-w.done

	// The committer has exited: its state is ours now.
	if err == nil && w.active.f != nil {
		name := filepath.Join(w.dir, segmentName(w.active.seq)) // f.Name() is stale once recycled
		w.active.sealFile()
		if rerr := os.Remove(name); rerr != nil {
			err = fmt.Errorf("ledger: journal: %w", rerr)
		}
	} else if w.active.f != nil {
		if serr := w.active.sealFile(); serr != nil {
			w.log.Warn("ledger: seal journal segment", "err", serr)
		}
	}
	for _, s := range w.pending {
		if s.f != nil {
			if serr := s.sealFile(); serr != nil { // kept mapped for recycling
				w.log.Warn("ledger: seal journal segment", "err", serr)
			}
		}
	}
	if w.spare != nil {
		w.dropSpare(w.spare, filepath.Join(w.dir, spareName))
		w.spare = nil
	}
	if w.lock != nil {
		if err == nil {
			// Best effort: the directory goes only if nothing else is in it.
			os.Remove(w.lock.Name())
			os.Remove(w.dir)
		}
		unlockDir(w.lock)
	}
	switch {
	case err != nil && w.dir == "":
		return fmt.Errorf("ledger: close: %d rows not committed and lost (no journal): %w", w.backlog, err)
	case err != nil:
		return fmt.Errorf("ledger: close: %d rows left in the journal for the next start: %w", w.backlog, err)
	}
	return nil
}

// WriterStats is a snapshot of a Writer's backlog.
type WriterStats struct {
	Backlog   int64 // rows recorded but not yet in the store
	Buffered  int   // of those, rows held in memory
	Segments  int   // journal segments not yet committed (including the active one)
	LastError error // the last store error, nil once an attempt succeeds
	// JournalWrites counts the journal write(2) calls of Record since
	// OpenWriter: fewer than the rows recorded when concurrent calls
	// shared a write.
	JournalWrites uint64
}

// Stats returns the Writer's backlog, for metrics and health checks.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WriterStats{Backlog: w.backlog, Buffered: w.buffered, Segments: len(w.pending) + 1, LastError: w.lastErr, JournalWrites: w.writes}
}

// run is the committer goroutine.
func (w *Writer) run() {
	defer close(w.done)
	timer := time.NewTimer(w.interval)
	defer timer.Stop()
	for {
		var req *flushRequest
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-timer.C:
		case r := <-w.reqs:
			req = &r
		}
		if req == nil && time.Now().Before(w.backoffUntil) {
			// Backing off: only cut the active segment if it reached the
			// outage size, so memory can spill and files stay few.
			w.mu.Lock()
			cut := w.active.n >= w.rotateAt
			w.mu.Unlock()
			if cut {
				w.rotate()
			}
			resetTimer(timer, time.Until(w.backoffUntil))
			continue
		}
		// Every attempt is bounded by storeTimeout and ends with the
		// Writer (Close's deadline); a Flush's attempt also ends with the
		// Flush caller's context.
		ctx, cancel := context.WithTimeout(w.ctx, storeTimeout)
		if req != nil {
			stop := context.AfterFunc(req.ctx, cancel)
			cancelTimeout := cancel
			cancel = func() { stop(); cancelTimeout() }
		}
		err := w.attempt(ctx)
		cancel()
		w.mu.Lock()
		w.lastErr = err
		if err != nil {
			w.backoff = min(max(2*w.backoff, w.interval), maxBackoff)
			w.backoffUntil = time.Now().Add(w.backoff)
			w.rotateAt = outageSegmentRows
		} else {
			w.backoff, w.backoffUntil = 0, time.Time{}
			w.rotateAt = w.batch
		}
		w.mu.Unlock()
		if err != nil {
			w.log.Warn("ledger: store refused rows; they stay in the journal and will be retried",
				"backlog", w.Stats().Backlog, "retry_in", w.backoff, "err", err)
			resetTimer(timer, w.backoff)
		} else {
			resetTimer(timer, w.interval)
		}
		if req != nil {
			req.reply <- err
		}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(max(d, time.Millisecond))
}

// rotate seals the active segment if it has rows: the next segment is
// created outside the lock and swapped in, so Record never waits on a file
// creation. A failure to create it leaves the active segment in place (its
// rows are committed at the next successful rotation).
func (w *Writer) rotate() error {
	w.mu.Lock()
	empty, prev := w.active.n == 0, w.active.size
	w.mu.Unlock()
	if empty {
		return nil
	}
	next, err := w.newSegment(prev)
	if err != nil {
		return fmt.Errorf("ledger: journal: new segment: %w", err)
	}
	w.mu.Lock()
	old := w.active
	w.active = next
	w.pending = append(w.pending, old)
	w.mu.Unlock()
	// Record wrote to old only under the lock, so no write is in progress.
	if old.f != nil && !w.holdSealed(old) {
		if err := old.sealFile(); err != nil {
			w.log.Warn("ledger: seal journal segment", "err", err)
		}
	}
	return nil
}

// attempt seals the active segment and commits every sealed segment in
// order, stopping at the first store error.
//
// If the active segment cannot be cut (no new journal file can be created),
// the sealed segments are still committed and the error is returned: the
// active segment's rows are not in the store yet.
func (w *Writer) attempt(ctx context.Context) error {
	rotErr := w.rotate()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.mu.Unlock()
			return rotErr
		}
		seg := w.pending[0]
		w.mu.Unlock()
		if err := w.commitSegment(ctx, seg); err != nil {
			return err
		}
		n, spilled, seq := seg.n, seg.spilled, seg.seq
		chunks := w.clearChunks(seg.chunks) // committed: nothing reads them any more
		seg.chunks = nil
		if w.dir != "" {
			w.retire(seg) // removed, or kept as the spare (which resets it)
		}
		w.mu.Lock()
		w.reuseChunksLocked(chunks)
		w.pending = w.pending[1:]
		if !spilled {
			w.buffered -= n
		}
		w.backlog -= int64(n)
		w.committed = seq
		close(w.progress)
		w.progress = make(chan struct{})
		w.mu.Unlock()
	}
}

// commitSegment writes a sealed segment's rows to the store in batches.
func (w *Writer) commitSegment(ctx context.Context, seg *segment) error {
	if seg.spilled {
		path := filepath.Join(w.dir, segmentName(seg.seq))
		n, err := w.commitFile(ctx, path)
		if errors.Is(err, errCorrupt) {
			// Cannot happen short of disk damage: this process wrote the
			// file. Keep it for inspection and move on.
			w.log.Error("ledger: damaged journal segment; committed the rows before the damage",
				"segment", path, "rows", n, "of", seg.n, "err", err)
			if rerr := os.Rename(path, path+".corrupt"); rerr != nil {
				return rerr
			}
			return nil
		}
		return err
	}
	for seg.sent < len(seg.chunks) {
		if err := w.store.AppendLedger(ctx, seg.chunks[seg.sent]); err != nil {
			return err
		}
		seg.sent++
	}
	return nil
}
