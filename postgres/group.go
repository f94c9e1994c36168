package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/groundhog-ai/groundhog/internal/groupcommit"
)

// group commits the single-statement writes of concurrent callers — cache
// entries, claims of new idempotency keys, and the fenced writes of
// operation records — in one transaction, one round trip and one commit
// for all of them, where each would otherwise take its own. Each caller
// still returns only once the COMMIT that holds its statement is done, so
// a write is exactly as durable as before.
//
// At most one batch runs at a time (groupcommit): the first caller to
// find none running leads, and a lone write runs alone, exactly as before.
// PostgreSQL runs the statements of a pipeline up to its Sync as one
// implicit transaction.
//
// The statements of a batch run in the order of their rows' keys, so two
// replicas' batches lock rows in the same order and never wait on each
// other in a cycle. If the server refuses any statement, or pgx cannot
// send one, nothing of the batch is committed and every write runs again
// on its own, so each caller gets its own statement's answer, never a
// neighbour's error. A batch that fails otherwise (the connection lost:
// its commit is unknown) gives every caller that error, as its own
// statement would have.
type group struct {
	q groupcommit.Queue[*write]

	writes, commits atomic.Int64 // statements run, transactions they took
}

// write is one statement waiting for its batch.
type write struct {
	ctx  context.Context
	key  string // the row it writes: the batch's order
	q    string
	args []any
	row  func(pgx.Row) error // set: a statement returning one row, scanned by row; else Exec
	tag  pgconn.CommandTag
	err  error
	groupcommit.Waiter
}

var writePool = sync.Pool{New: func() any { return &write{Waiter: groupcommit.NewWaiter()} }}

// release gives w back to the pool.
func (w *write) release() {
	*w = write{Waiter: w.Waiter}
	writePool.Put(w)
}

// groupExec runs the write q (one statement, writing the row named key) in
// a group commit and returns its command tag.
func (db *DB) groupExec(ctx context.Context, key, q string, args ...any) (pgconn.CommandTag, error) {
	w := writePool.Get().(*write)
	w.ctx, w.key, w.q, w.args = ctx, key, q, args
	db.group.q.Run(w, db.runBatch)
	tag, err := w.tag, w.err
	w.release()
	return tag, err
}

// groupQueryRow runs the write q, which returns one row, in a group commit,
// and scans that row with scan (which must not keep it). The error is
// scan's, or the statement's.
func (db *DB) groupQueryRow(ctx context.Context, key, q string, scan func(pgx.Row) error, args ...any) error {
	w := writePool.Get().(*write)
	w.ctx, w.key, w.q, w.args, w.row = ctx, key, q, args, scan
	db.group.q.Run(w, db.runBatch)
	err := w.err
	w.release()
	return err
}

// GroupStats returns how many writes went through the group commit and how
// many transactions they took.
func (db *DB) GroupStats() (writes, commits int64) {
	return db.group.writes.Load(), db.group.commits.Load()
}

// runBatch runs batch (groupcommit signals its writes once it returns).
func (db *DB) runBatch(batch []*write) {
	db.group.writes.Add(int64(len(batch)))
	if len(batch) == 1 || !db.runPipelined(batch) {
		for _, w := range batch {
			db.runAlone(w)
		}
		db.group.commits.Add(int64(len(batch)))
		return
	}
	db.group.commits.Add(1)
}

func (db *DB) runAlone(w *write) {
	if w.row != nil {
		w.err = w.row(db.pool.QueryRow(w.ctx, w.q, w.args...))
		return
	}
	w.tag, w.err = db.pool.Exec(w.ctx, w.q, w.args...)
}

// runPipelined runs batch as one pipeline, one implicit transaction. It
// returns false when nothing of it was committed for certain — the server
// refused a statement, or the batch failed before it was sent — and the
// writes are to run again on their own. Any other failure (its commit
// unknown) is every write's error.
func (db *DB) runPipelined(batch []*write) bool {
	// Not any one caller's context: a caller that gives up must not roll
	// back its neighbours' writes. The server's statement_timeout bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	slices.SortStableFunc(batch, func(a, b *write) int { return strings.Compare(a.key, b.key) })
	var b pgx.Batch
	for _, w := range batch {
		q := b.Queue(w.q, w.args...)
		if w.row != nil {
			q.QueryRow(func(row pgx.Row) error {
				w.err = w.row(row) // never the batch's error: the others' results still follow
				return nil
			})
		} else {
			q.Exec(func(tag pgconn.CommandTag) error {
				w.tag = tag
				return nil
			})
		}
	}
	err := db.pool.SendBatch(ctx, &b).Close()
	if err == nil {
		return true
	}
	if notCommitted(err) {
		for _, w := range batch {
			w.tag, w.err = pgconn.CommandTag{}, nil
		}
		return false
	}
	for _, w := range batch {
		w.tag, w.err = pgconn.CommandTag{}, err
	}
	return true
}

// notCommitted reports whether a batch that failed with err committed
// nothing for certain: pgx failed to prepare or encode it before sending
// it, or the server refused a statement — unless the connection or the
// server went away, when the commit may have happened.
func notCommitted(err error) bool {
	if pgconn.SafeToRetry(err) || errors.As(err, new(pgx.ErrPreprocessingBatch)) {
		return true // nothing of the batch was run
	}
	var e *pgconn.PgError
	return errors.As(err, &e) &&
		!strings.HasPrefix(e.Code, "08") && !strings.HasPrefix(e.Code, "57P") && !strings.HasPrefix(e.Code, "58")
}
