package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache keeps a pool's hot statements prepared: modernc parses the SQL
// of every ExecContext and QueryContext anew — 16 % of the CPU of an
// idempotent call (claim + complete) on the writer, and 22 % of a cache hit
// answered from the database on the read pool, in the gateway's profiles.
// Only constant query strings are cached (a handful), so it needs no bound.
// A statement prepared on a pool of several connections is prepared again
// on each connection the first time it runs there (database/sql).
type stmtCache struct {
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

// get returns q prepared on db, preparing it on first use. Never call it
// while holding db's writer connection in a transaction: with one
// connection, preparing would wait for that transaction forever.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	c.mu.RLock()
	st, ok := c.m[q]
	c.mu.RUnlock()
	if ok {
		return st, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[q] = st
	return st, nil
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// writeExec runs q (a constant query) on the writer connection through its
// cached prepared statement, in autocommit.
func (db *DB) writeExec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := db.wstmts.get(ctx, db.w, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// readRow runs q (a constant query) on the read pool through its cached
// prepared statement. Should preparing fail, q runs unprepared, so the
// error (or the answer) is the one the query itself gives.
func (db *DB) readRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := db.rstmts.get(ctx, db.r, q)
	if err != nil {
		return db.r.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
