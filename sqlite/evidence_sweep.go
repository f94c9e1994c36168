package sqlite

import (
	"context"
	"fmt"

	"github.com/groundhog-ai/groundhog/internal/evblob"
)

// sweepChunksPerTx bounds one sweep statement (chunks are 1 MiB), so the
// sweep never holds the writer connection for long.
const sweepChunksPerTx = 16

// SweepOrphanEvidence removes the chunks no evidence row claims: what an
// upload killed mid-way (kill -9, power loss) left behind. They are
// invisible to reads and count against no quota, but they hold disk. It is
// safe beside uploads in progress: an upload whose chunks it removed puts
// them back in its last transaction (PutEvidence). It returns how many
// chunks it removed. serve runs it once at start.
func (db *DB) SweepOrphanEvidence(ctx context.Context) (int64, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	type blob struct {
		tenant, ref string
		last        int64
	}
	rows, err := db.r.QueryContext(ctx, `SELECT c.tenant, c.ref, max(c.seq) FROM evidence_chunks c
		WHERE NOT EXISTS (SELECT 1 FROM evidence e WHERE e.tenant = c.tenant AND e.ref = c.ref)
		GROUP BY c.tenant, c.ref`)
	if err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: find orphan evidence chunks: %w", err))
	}
	var orphans []blob
	for rows.Next() {
		var b blob
		if err := rows.Scan(&b.tenant, &b.ref, &b.last); err != nil {
			rows.Close()
			return 0, mapErr(fmt.Errorf("sqlite: find orphan evidence chunks: %w", err))
		}
		orphans = append(orphans, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: find orphan evidence chunks: %w", err))
	}
	var removed int64
	for _, b := range orphans {
		for from := int64(0); from <= b.last; from += sweepChunksPerTx {
			res, err := db.w.ExecContext(ctx, `DELETE FROM evidence_chunks WHERE tenant = ? AND ref = ? AND seq >= ? AND seq < ?
				AND NOT EXISTS (SELECT 1 FROM evidence WHERE tenant = ? AND ref = ?)`,
				b.tenant, b.ref, from, from+sweepChunksPerTx, b.tenant, b.ref)
			if err != nil {
				return removed, mapErr(fmt.Errorf("sqlite: sweep orphan evidence chunks: %w", err))
			}
			n, _ := res.RowsAffected()
			removed += n
		}
	}
	return removed, nil
}

// spoolDir is where uploads are spooled before their chunks go in: beside
// the database file (<path>.spool), so the store's own disk holds them and
// SweepEvidenceSpool finds what a killed upload left.
func (db *DB) spoolDir() string { return db.path + ".spool" }

// SweepEvidenceSpool removes the spool files uploads killed mid-way (kill
// -9, power loss) left beside the database and returns how many. serve runs
// it once at start, before it accepts uploads.
func (db *DB) SweepEvidenceSpool() (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	return evblob.SweepSpool(db.spoolDir())
}
