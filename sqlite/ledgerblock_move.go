package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// moveChunk is how many rows of the per-row table one transaction moves.
const moveChunk = 8192

// moveLegacyLedger moves the rows of the per-row ledger table of 0001 into
// blocks, moveChunk rows per transaction, each chunk inserted (deduplicated
// like any append) and deleted in the same transaction: a crash half-way
// leaves every row in exactly one of the two tables, and the next Open
// finishes. Run at Open; a no-op once the table is empty.
func (db *DB) moveLegacyLedger(ctx context.Context) error {
	for {
		n, err := db.moveLegacyChunk(ctx)
		if err != nil {
			return mapErr(fmt.Errorf("sqlite: move ledger rows into blocks: %w", err))
		}
		if n < moveChunk {
			return nil
		}
	}
}

func (db *DB) moveLegacyChunk(ctx context.Context) (int, error) {
	st, err := db.prepareBlockStmts(ctx)
	if err != nil {
		return 0, err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.QueryContext(ctx, "SELECT rowid, row FROM ledger ORDER BY rowid LIMIT ?", moveChunk)
	if err != nil {
		return 0, err
	}
	var (
		rows   []groundhog.LedgerEntry
		last   int64
		packed sql.RawBytes
		u      ledgerUnpacker
	)
	for res.Next() {
		if err := res.Scan(&last, &packed); err != nil {
			res.Close()
			return 0, err
		}
		var e groundhog.LedgerEntry
		if err := u.unpack(packed, &e); err != nil {
			res.Close()
			return 0, fmt.Errorf("row %d: %w", last, err)
		}
		rows = append(rows, e)
	}
	if err := res.Close(); err != nil {
		return 0, err
	}
	if err := res.Err(); err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	if err := db.appendBlocks(ctx, tx, st, rows); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM ledger WHERE rowid <= ?", last); err != nil {
		return 0, err
	}
	return len(rows), tx.Commit()
}
