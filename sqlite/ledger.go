package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/groundhog-ai/groundhog"
)

const ledgerColumns = `id, time, tenant, operation, request_hash, shape, model, provider, outcome, status,
	input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost, saved, full_cost,
	latency, attempt, in_flight, cache_on, idempotent, stream`

const ledgerNumCols = 23

// ledgerStoredCols are the columns of the ledger table: the four that
// queries filter and order on, and the packed row.
const (
	ledgerStoredCols   = "id, time, tenant, operation, row"
	ledgerNumStoredCol = 5
)

// ledgerBatch is how many rows one INSERT statement carries: 100 × 5 = 500
// parameters, well under SQLite's limit of 32,766.
const ledgerBatch = 100

var qInsertLedger = func() string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", ledgerNumStoredCol), ", ") + ")"
	return "INSERT OR IGNORE INTO ledger (" + ledgerStoredCols + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(row+", ", ledgerBatch), ", ")
}()

var qInsertLedgerOne = "INSERT OR IGNORE INTO ledger (" + ledgerStoredCols + ") VALUES (" +
	strings.TrimSuffix(strings.Repeat("?, ", ledgerNumStoredCol), ", ") + ")"

// AppendLedger stores rows in one transaction; rows whose ID is already
// stored (or repeated within rows) are skipped, so a journal can be
// replayed after a crash. Rows are inserted ledgerBatch at a time through
// one prepared statement reused for the whole call.
func (db *DB) AppendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	if err := db.check(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	// Prepared (once) before the transaction takes the writer's only
	// connection: preparing on db.w inside it would wait for itself.
	many, err := db.wstmts.get(ctx, db.w, qInsertLedger)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
	}
	one, err := db.wstmts.get(ctx, db.w, qInsertLedgerOne)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
	}
	defer tx.Rollback()

	args := make([]any, 0, ledgerBatch*ledgerNumStoredCol)
	ap := arenaPool.Get().(*[]byte)
	defer func() {
		if cap(*ap) <= maxPooledArena {
			arenaPool.Put(ap)
		}
	}()
	if len(rows) >= ledgerBatch {
		stmt := tx.StmtContext(ctx, many)
		defer stmt.Close()
		for len(rows) >= ledgerBatch {
			args = args[:0]
			arena := packArena(ap, rows[:ledgerBatch])
			for i := range rows[:ledgerBatch] {
				args, arena = appendLedgerArgs(args, arena, &rows[i])
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
			}
			rows = rows[ledgerBatch:]
		}
	}
	if len(rows) > 0 {
		stmt := tx.StmtContext(ctx, one)
		defer stmt.Close()
		arena := packArena(ap, rows)
		for i := range rows {
			args, arena = appendLedgerArgs(args[:0], arena, &rows[i])
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: commit: %w", err))
	}
	return nil
}

// appendLedgerArgs appends the insert arguments of e to args; its packed row
// is appended to arena. The arena is reused from one statement to the next
// (and across calls, pooled): the driver copies a bound blob into its own
// memory when it binds it (modernc.org/sqlite bindBlob), so once a
// statement has run nothing refers to the arena.
func appendLedgerArgs(args []any, arena []byte, e *groundhog.LedgerEntry) ([]any, []byte) {
	start := len(arena)
	arena = appendPackedLedger(arena, e)
	return append(args, e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, arena[start:len(arena):len(arena)]), arena
}

// arenaPool holds the committer's pack arenas (about 40 KB for a statement
// of ledgerBatch rows); arenas grown past maxPooledArena are dropped.
var arenaPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

const maxPooledArena = 1 << 20

// packArena returns *ap emptied and grown to hold the packed rows: no
// allocation per row, none per statement once the pooled arena is large
// enough. The packed rows of the previous statement are overwritten.
func packArena(ap *[]byte, rows []groundhog.LedgerEntry) []byte {
	n := 0
	for i := range rows {
		n += packedLedgerSize(&rows[i])
	}
	if cap(*ap) < n {
		*ap = make([]byte, 0, n)
	}
	return (*ap)[:0]
}

// ScanLedger calls fn for every row matching f in (Time, ID) order and
// stops at fn's first error, returning it. A zero f.From or f.To leaves
// that end of the range open. Rows are streamed from one read transaction
// (a consistent snapshot), never loaded all at once; each row is a fresh
// *LedgerEntry that fn may keep. fn may call other methods of db.
func (db *DB) ScanLedger(ctx context.Context, f groundhog.LedgerFilter, fn func(*groundhog.LedgerEntry) error) error {
	if err := db.check(); err != nil {
		return err
	}
	var (
		where []string
		args  []any
	)
	if f.Tenant != "" {
		where = append(where, "tenant = ?")
		args = append(args, f.Tenant)
	}
	if f.Operation != "" {
		where = append(where, "operation = ?")
		args = append(args, f.Operation)
	}
	if !f.From.IsZero() {
		where = append(where, "time >= ?")
		args = append(args, f.From.UnixNano())
	}
	if !f.To.IsZero() {
		where = append(where, "time < ?")
		args = append(args, f.To.UnixNano())
	}
	q := "SELECT row FROM ledger"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY time, id"

	rows, err := db.scan.QueryContext(ctx, q, args...)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: scan ledger: %w", err))
	}
	defer rows.Close()
	var (
		packed sql.RawBytes // valid until the next rows.Next; unpack copies
		u      ledgerUnpacker
	)
	for rows.Next() {
		if err := rows.Scan(&packed); err != nil {
			return mapErr(fmt.Errorf("sqlite: scan ledger: %w", err))
		}
		e := new(groundhog.LedgerEntry)
		if err := u.unpack(packed, e); err != nil {
			return fmt.Errorf("sqlite: scan ledger: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return mapErr(fmt.Errorf("sqlite: scan ledger: %w", err))
	}
	return nil
}
