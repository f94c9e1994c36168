package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog/internal/groupcommit"
)

// opBatch groups the single-statement writes of concurrent callers — the
// operation writes (the claim of a new key, and the fenced Complete, Fail,
// Release and Renew) and the cache's stored answers (PutCache) — into one
// transaction: each write is still one statement — its
// own check and change — but a batch of them shares one BEGIN, one WAL
// append and one COMMIT, and pages that several of them touch (the
// table's last leaf, the expires_at index) are written once. Every caller
// returns only after the COMMIT that holds its statement: a claim or a
// stored result is as durable as with a write of its own.
//
// The batching is groupcommit's: the first caller to find the writer idle
// leads, and a lone write runs in autocommit, exactly as before.
type opBatch struct {
	q groupcommit.Queue[*opWrite]

	writes, commits atomic.Int64 // statements run, transactions they took
}

// GroupStats returns how many operation and cache writes went through the
// group commit and how many transactions they took.
func (db *DB) GroupStats() (writes, commits int64) {
	return db.ops.writes.Load(), db.ops.commits.Load()
}

// opWrite is one statement waiting for its batch.
type opWrite struct {
	ctx  context.Context
	q    string // a constant query, prepared once (stmtcache.go)
	args []any
	n    int64 // rows affected
	err  error
	groupcommit.Waiter
}

var opWritePool = sync.Pool{New: func() any { return &opWrite{Waiter: groupcommit.NewWaiter()} }}

// opExec runs q (a constant single-statement write) in a group commit with
// the concurrent operation writes and returns the rows it affected.
func (db *DB) opExec(ctx context.Context, q string, args ...any) (int64, error) {
	w := opWritePool.Get().(*opWrite)
	w.ctx, w.q, w.args = ctx, q, args
	db.ops.q.Run(w, db.runOps)
	return w.release()
}

// release returns w's result and gives w back to the pool.
func (w *opWrite) release() (int64, error) {
	n, err := w.n, w.err
	*w = opWrite{Waiter: w.Waiter}
	opWritePool.Put(w)
	return n, err
}

// runOps runs batch (groupcommit signals its writes once it returns).
// Statements are prepared before the transaction starts: with the single
// writer connection inside a transaction, preparing would wait for it.
// If any statement fails, the transaction is rolled back and every write
// of the batch runs again on its own, so each caller gets its own
// statement's answer, never a neighbour's error.
func (db *DB) runOps(batch []*opWrite) {
	db.ops.writes.Add(int64(len(batch)))
	if len(batch) == 1 {
		db.runOpAlone(batch[0])
		db.ops.commits.Add(1)
		return
	}
	if db.runOpsTx(batch) {
		db.ops.commits.Add(1)
		return
	}
	for _, w := range batch {
		db.runOpAlone(w)
	}
	db.ops.commits.Add(int64(len(batch)))
}

func (db *DB) runOpAlone(w *opWrite) {
	res, err := db.writeExec(w.ctx, w.q, w.args...)
	if err == nil {
		w.n, err = res.RowsAffected()
	}
	w.n, w.err = max(w.n, 0), err
}

// runOpsTx runs batch in one transaction; false when a statement or the
// transaction failed (nothing of the batch is then committed, except when
// COMMIT itself fails, where every write reports that error).
func (db *DB) runOpsTx(batch []*opWrite) bool {
	// Every statement is looked up before BEGIN: get may wait for the
	// writer connection (another caller preparing), and inside the
	// transaction this goroutine holds it.
	stmts := make([]*sql.Stmt, len(batch))
	for i, w := range batch {
		st, err := db.wstmts.get(w.ctx, db.w, w.q)
		if err != nil {
			return false
		}
		stmts[i] = st
	}
	// The transaction is not bound to any caller's context: a caller
	// that gives up must not roll back its neighbours' writes.
	tx, err := db.w.BeginTx(context.Background(), nil)
	if err != nil {
		return false
	}
	for i, w := range batch {
		res, err := tx.StmtContext(w.ctx, stmts[i]).ExecContext(w.ctx, w.args...)
		if err == nil {
			w.n, err = res.RowsAffected()
		}
		if err != nil {
			tx.Rollback()
			return false
		}
	}
	if err := tx.Commit(); err != nil {
		for _, w := range batch {
			w.n, w.err = 0, err
		}
	}
	return true
}
