package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache keeps the writer connection's hot statements prepared: modernc
// parses the SQL of every ExecContext anew, which was 16 % of the CPU of an
// idempotent call (claim + complete) in the gateway's profile. Only
// constant query strings are cached (a handful), so it needs no bound.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns q prepared on db, preparing it on first use. Never call it
// while holding db's writer connection in a transaction: with one
// connection, preparing would wait for that transaction forever.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
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
