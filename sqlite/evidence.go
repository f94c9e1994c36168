package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/evblob"
)

var _ groundhog.EvidenceStore = (*DB)(nil)

// PutEvidence stores r's bytes as EvidenceStore documents.
//
// The upload is spooled to a temporary file first (hashing it). Then the
// chunks go in, a few per transaction, so a large blob never holds the one
// writer connection for long (the gateway's other writes interleave);
// chunks without their evidence row are invisible, every read starts from
// the row. A last short transaction re-checks dedup and the quota under
// the write lock, makes sure every chunk is there and inserts the row.
//
// Chunk rows are keyed by (tenant, ref, seq) and a ref fixes their bytes,
// so concurrent uploads of the same blob write identical rows (ON CONFLICT
// DO NOTHING). An upload that fails removes the chunks no row claims; a
// concurrent upload of the same bytes whose chunks that removed re-inserts
// them in its last transaction. A crash mid-upload leaves orphan chunks
// that count against no quota and are reused by the next upload of the
// same bytes.
func (db *DB) PutEvidence(ctx context.Context, tenant, contentType string, r io.Reader, quota int64) (*groundhog.EvidenceInfo, bool, error) {
	if err := db.check(); err != nil {
		return nil, false, err
	}
	sp, err := evblob.SpoolWithin(ctx, db.spoolDir(), r, quota, func(ctx context.Context) (int64, error) { return db.EvidenceUsage(ctx, tenant) })
	if err != nil {
		return nil, false, err
	}
	defer sp.Close()
	if info, _, err := db.statEvidence(ctx, db.r, tenant, sp.Ref); err == nil {
		return info, false, nil
	} else if !groundhog.IsNotFound(err) {
		return nil, false, err
	}
	if sp.Over {
		return nil, false, evblob.QuotaError(quota)
	}
	info, created, err := db.putEvidence(ctx, tenant, contentType, sp, quota)
	if err != nil {
		db.dropOrphanChunks(tenant, sp.Ref)
	}
	return info, created, err
}

// chunksPerTx is how many chunks one transaction of an upload inserts.
const chunksPerTx = 4

func insertChunk(ctx context.Context, tx *sql.Tx, tenant, ref string, seq int64, c evblob.Chunk, data []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO evidence_chunks (tenant, ref, seq, nl_before, nl, data) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, tenant, ref, seq, c.NLBefore, c.NL, data)
	return err
}

func (db *DB) putEvidence(ctx context.Context, tenant, contentType string, sp *evblob.Spooled, quota int64) (*groundhog.EvidenceInfo, bool, error) {
	var tx *sql.Tx
	err := sp.EachChunk(func(seq int64, c evblob.Chunk, data []byte) error {
		if tx == nil {
			var err error
			if tx, err = db.w.BeginTx(ctx, nil); err != nil {
				return err
			}
		}
		if err := insertChunk(ctx, tx, tenant, sp.Ref, seq, c, data); err != nil {
			return err
		}
		if (seq+1)%chunksPerTx == 0 {
			err := tx.Commit()
			tx = nil
			return err
		}
		return nil
	})
	if err == nil && tx != nil {
		err = tx.Commit()
	} else if tx != nil {
		tx.Rollback()
	}
	if err != nil {
		return nil, false, mapErr(fmt.Errorf("sqlite: put evidence chunks: %w", err))
	}

	tx, err = db.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock from here
	if err != nil {
		return nil, false, mapErr(fmt.Errorf("sqlite: put evidence: %w", err))
	}
	defer tx.Rollback()
	// Under the lock: a concurrent upload may have stored the same bytes,
	// or used the quota, since the checks before the chunks went in.
	if info, _, err := db.statEvidence(ctx, tx, tenant, sp.Ref); err == nil {
		return info, false, nil
	} else if !groundhog.IsNotFound(err) {
		return nil, false, err
	}
	if quota > 0 {
		var used int64
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(bytes), 0) FROM evidence WHERE tenant = ?", tenant).Scan(&used); err != nil {
			return nil, false, mapErr(fmt.Errorf("sqlite: evidence usage: %w", err))
		}
		if used+sp.Bytes > quota {
			return nil, false, evblob.QuotaError(quota)
		}
	}
	var have int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM evidence_chunks WHERE tenant = ? AND ref = ?", tenant, sp.Ref).Scan(&have); err != nil {
		return nil, false, mapErr(fmt.Errorf("sqlite: put evidence: %w", err))
	}
	if have != len(sp.Chunks) {
		// A failed concurrent upload of the same bytes removed chunks:
		// put them back, here, under the lock.
		err := sp.EachChunk(func(seq int64, c evblob.Chunk, data []byte) error {
			return insertChunk(ctx, tx, tenant, sp.Ref, seq, c, data)
		})
		if err != nil {
			return nil, false, mapErr(fmt.Errorf("sqlite: put evidence chunks: %w", err))
		}
	}
	info := &groundhog.EvidenceInfo{Tenant: tenant, Ref: sp.Ref, Bytes: sp.Bytes, Lines: sp.Lines, ContentType: contentType, CreatedAt: time.Now().UTC()}
	if _, err := tx.ExecContext(ctx, `INSERT INTO evidence (tenant, ref, bytes, lines, content_type, chunk_bytes, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, tenant, info.Ref, info.Bytes, info.Lines, contentType, evblob.ChunkBytes, info.CreatedAt.UnixNano()); err != nil {
		return nil, false, mapErr(fmt.Errorf("sqlite: put evidence: %w", err))
	}
	if err := tx.Commit(); err != nil {
		return nil, false, mapErr(fmt.Errorf("sqlite: put evidence: %w", err))
	}
	return info, true, nil
}

// dropOrphanChunks removes the chunks of (tenant, ref) that no evidence
// row claims, after a failed upload. Best effort with a fresh context (the
// request's may be what failed): leftovers are harmless (see PutEvidence).
func (db *DB) dropOrphanChunks(tenant, ref string) {
	ctx, cancel := context.WithTimeout(context.Background(), busyTimeout)
	defer cancel()
	_, _ = db.w.ExecContext(ctx, `DELETE FROM evidence_chunks WHERE tenant = ? AND ref = ?
		AND NOT EXISTS (SELECT 1 FROM evidence WHERE tenant = ? AND ref = ?)`, tenant, ref, tenant, ref)
}

// StatEvidence returns the info of tenant's ref, or ENOTFOUND.
func (db *DB) StatEvidence(ctx context.Context, tenant, ref string) (*groundhog.EvidenceInfo, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	info, _, err := db.statEvidence(ctx, db.r, tenant, ref)
	return info, err
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (db *DB) statEvidence(ctx context.Context, q queryer, tenant, ref string) (*groundhog.EvidenceInfo, int64, error) {
	info := &groundhog.EvidenceInfo{Tenant: tenant, Ref: ref}
	var chunk, created int64
	err := q.QueryRowContext(ctx, "SELECT bytes, lines, content_type, chunk_bytes, created_at FROM evidence WHERE tenant = ? AND ref = ?",
		tenant, ref).Scan(&info.Bytes, &info.Lines, &info.ContentType, &chunk, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, groundhog.Errorf(groundhog.ENOTFOUND, "no evidence %q", ref)
	}
	if err != nil {
		return nil, 0, mapErr(fmt.Errorf("sqlite: stat evidence: %w", err))
	}
	info.CreatedAt = time.Unix(0, created).UTC()
	return info, chunk, nil
}

// ReadEvidence returns a reader of bytes [off, off+n) of tenant's ref
// (n < 0: to the end). It reads one chunk per query, through the read pool.
func (db *DB) ReadEvidence(ctx context.Context, tenant, ref string, off, n int64) (io.ReadCloser, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	info, chunk, err := db.statEvidence(ctx, db.r, tenant, ref)
	if err != nil {
		return nil, err
	}
	if n, err = evblob.CheckRange(info.Bytes, off, n); err != nil {
		return nil, err
	}
	fetch := func(seq int64) ([]byte, error) {
		var data []byte
		if err := db.readRow(ctx, "SELECT data FROM evidence_chunks WHERE tenant = ? AND ref = ? AND seq = ?",
			tenant, ref, seq).Scan(&data); err != nil {
			return nil, mapErr(fmt.Errorf("sqlite: read evidence chunk %d: %w", seq, err))
		}
		return data, nil
	}
	return evblob.NewReader(fetch, chunk, off, n), nil
}

// EvidenceLines maps a line range of tenant's ref to bytes, reading at most
// the two chunks that hold its ends.
func (db *DB) EvidenceLines(ctx context.Context, tenant, ref string, first, last int64) (int64, int64, error) {
	if err := db.check(); err != nil {
		return 0, 0, err
	}
	info, chunk, err := db.statEvidence(ctx, db.r, tenant, ref)
	if err != nil {
		return 0, 0, err
	}
	return evblob.Lines(info, chunk, first, last, func(k int64) (seq, before int64, data []byte, err error) {
		err = db.readRow(ctx, `SELECT seq, nl_before, data FROM evidence_chunks
			WHERE tenant = ? AND ref = ? AND nl_before < ? AND nl_before + nl >= ? ORDER BY seq LIMIT 1`,
			tenant, ref, k, k).Scan(&seq, &before, &data)
		if err != nil {
			err = mapErr(fmt.Errorf("sqlite: find line %d: %w", k, err))
		}
		return
	})
}

// EvidenceUsage returns the bytes of all of tenant's blobs.
func (db *DB) EvidenceUsage(ctx context.Context, tenant string) (int64, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	var used int64
	if err := db.readRow(ctx, "SELECT coalesce(sum(bytes), 0) FROM evidence WHERE tenant = ?", tenant).Scan(&used); err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: evidence usage: %w", err))
	}
	return used, nil
}
