package sqlite

import (
	"context"
	"fmt"
	"strings"

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

// ledgerBatch is how many rows one INSERT statement carried into the
// per-row table of 0001 (kept for the tests that size batches by it).
const ledgerBatch = 100

// qInsertLedgerOne inserts one row into the per-row table of 0001, which
// only rows written by earlier versions (and the baselines of tests and
// benchmarks) still use: AppendLedger writes blocks (ledgerblock.go).
var qInsertLedgerOne = "INSERT OR IGNORE INTO ledger (" + ledgerStoredCols + ") VALUES (" +
	strings.TrimSuffix(strings.Repeat("?, ", ledgerNumStoredCol), ", ") + ")"

// AppendLedger stores rows in one transaction; rows whose ID is already
// stored (or repeated within rows: the first wins) are skipped, so a
// journal can be replayed after a crash. The rows go into blocks
// (ledgerblock.go): one table row per tenant and minute of the call.
func (db *DB) AppendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	if err := db.check(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	// Prepared (once) before the transaction takes the writer's only
	// connection: preparing on db.w inside it would wait for itself.
	st, err := db.prepareBlockStmts(ctx)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
	}
	defer tx.Rollback()
	if err := db.appendBlocks(ctx, tx, st, rows); err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: %w", err))
	}
	if err := tx.Commit(); err != nil {
		return mapErr(fmt.Errorf("sqlite: append ledger: commit: %w", err))
	}
	return nil
}

// appendLedgerArgs appends the insert arguments of e for qInsertLedgerOne
// to args; its packed row is appended to arena.
func appendLedgerArgs(args []any, arena []byte, e *groundhog.LedgerEntry) ([]any, []byte) {
	start := len(arena)
	arena = appendPackedLedger(arena, e)
	return append(args, e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, arena[start:len(arena):len(arena)]), arena
}

// maxPooledArena bounds the pack arena an appender keeps between calls.
const maxPooledArena = 1 << 20

// ScanLedger calls fn for every row matching f in (Time, ID) order and
// stops at fn's first error, returning it. A zero f.From or f.To leaves
// that end of the range open. Rows are streamed from one read transaction
// (a consistent snapshot), never loaded all at once; each row is a fresh
// *LedgerEntry that fn may keep. fn may call other methods of db.
func (db *DB) ScanLedger(ctx context.Context, f groundhog.LedgerFilter, fn func(*groundhog.LedgerEntry) error) error {
	if err := db.check(); err != nil {
		return err
	}
	// One read transaction: the blocks and the rows of 0001 are read in
	// the same snapshot.
	tx, err := db.scan.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: scan ledger: %w", err))
	}
	defer tx.Rollback()
	if err := scanBlocks(ctx, tx, f, fn); err != nil {
		if ce, ok := err.(callbackError); ok {
			return ce.err
		}
		return mapErr(fmt.Errorf("sqlite: scan ledger: %w", err))
	}
	return nil
}
