package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/evblob"
)

var _ groundhog.EvidenceStore = (*DB)(nil)

// PutEvidence stores r's bytes as EvidenceStore documents. The upload is
// spooled to a temporary file first (hashing it); then one transaction,
// holding a per-tenant advisory lock so replicas agree on dedup and the
// quota, inserts the blob's row and its chunks.
func (db *DB) PutEvidence(ctx context.Context, tenant, contentType string, r io.Reader, quota int64) (*groundhog.EvidenceInfo, bool, error) {
	if err := db.check(); err != nil {
		return nil, false, err
	}
	sp, err := evblob.SpoolWithin(ctx, "", r, quota, func(ctx context.Context) (int64, error) { return db.EvidenceUsage(ctx, tenant) })
	if err != nil {
		return nil, false, err
	}
	defer sp.Close()
	if info, _, err := statEvidence(ctx, db.pool, tenant, sp.Ref); err == nil {
		return info, false, nil
	} else if !groundhog.IsNotFound(err) {
		return nil, false, err
	}
	if sp.Over {
		return nil, false, evblob.QuotaError(quota)
	}

	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, false, mapErr(fmt.Errorf("postgres: put evidence: %w", err))
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('groundhog-evidence:' || $1, 0))", tenant); err != nil {
		return nil, false, mapErr(fmt.Errorf("postgres: put evidence: lock: %w", err))
	}
	// Re-check under the lock: another upload may have stored the same
	// bytes or used the quota since the checks above.
	if info, _, err := statEvidence(ctx, tx, tenant, sp.Ref); err == nil {
		return info, false, nil
	} else if !groundhog.IsNotFound(err) {
		return nil, false, err
	}
	if quota > 0 {
		var used int64
		if err := tx.QueryRow(ctx, "SELECT coalesce(sum(bytes), 0)::bigint FROM evidence WHERE tenant = $1", tenant).Scan(&used); err != nil {
			return nil, false, mapErr(fmt.Errorf("postgres: evidence usage: %w", err))
		}
		if used+sp.Bytes > quota {
			return nil, false, evblob.QuotaError(quota)
		}
	}
	info := &groundhog.EvidenceInfo{Tenant: tenant, Ref: sp.Ref, Bytes: sp.Bytes, Lines: sp.Lines, ContentType: contentType, CreatedAt: time.Now().UTC()}
	if _, err := tx.Exec(ctx, `INSERT INTO evidence (tenant, ref, bytes, lines, content_type, chunk_bytes, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, tenant, info.Ref, info.Bytes, info.Lines, contentType, int64(evblob.ChunkBytes), info.CreatedAt.UnixNano()); err != nil {
		return nil, false, mapErr(fmt.Errorf("postgres: put evidence: %w", err))
	}
	err = sp.EachChunk(func(seq int64, c evblob.Chunk, data []byte) error {
		_, err := tx.Exec(ctx, `INSERT INTO evidence_chunks (tenant, ref, seq, nl_before, nl, data) VALUES ($1, $2, $3, $4, $5, $6)`,
			tenant, info.Ref, seq, c.NLBefore, c.NL, data)
		return err
	})
	if err != nil {
		return nil, false, mapErr(fmt.Errorf("postgres: put evidence chunks: %w", err))
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, false, mapErr(fmt.Errorf("postgres: put evidence: %w", err))
	}
	return info, true, nil
}

type rowQueryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func statEvidence(ctx context.Context, q rowQueryer, tenant, ref string) (*groundhog.EvidenceInfo, int64, error) {
	info := &groundhog.EvidenceInfo{Tenant: tenant, Ref: ref}
	var chunk, created int64
	err := q.QueryRow(ctx, "SELECT bytes, lines, content_type, chunk_bytes, created_at FROM evidence WHERE tenant = $1 AND ref = $2",
		tenant, ref).Scan(&info.Bytes, &info.Lines, &info.ContentType, &chunk, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, groundhog.Errorf(groundhog.ENOTFOUND, "no evidence %q", ref)
	}
	if err != nil {
		return nil, 0, mapErr(fmt.Errorf("postgres: stat evidence: %w", err))
	}
	info.CreatedAt = time.Unix(0, created).UTC()
	return info, chunk, nil
}

// StatEvidence returns the info of tenant's ref, or ENOTFOUND.
func (db *DB) StatEvidence(ctx context.Context, tenant, ref string) (*groundhog.EvidenceInfo, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	info, _, err := statEvidence(ctx, db.pool, tenant, ref)
	return info, err
}

// ReadEvidence returns a reader of bytes [off, off+n) of tenant's ref
// (n < 0: to the end), one chunk per query.
func (db *DB) ReadEvidence(ctx context.Context, tenant, ref string, off, n int64) (io.ReadCloser, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	info, chunk, err := statEvidence(ctx, db.pool, tenant, ref)
	if err != nil {
		return nil, err
	}
	if n, err = evblob.CheckRange(info.Bytes, off, n); err != nil {
		return nil, err
	}
	fetch := func(seq int64) ([]byte, error) {
		var data []byte
		if err := db.pool.QueryRow(ctx, "SELECT data FROM evidence_chunks WHERE tenant = $1 AND ref = $2 AND seq = $3",
			tenant, ref, seq).Scan(&data); err != nil {
			return nil, mapErr(fmt.Errorf("postgres: read evidence chunk %d: %w", seq, err))
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
	info, chunk, err := statEvidence(ctx, db.pool, tenant, ref)
	if err != nil {
		return 0, 0, err
	}
	return evblob.Lines(info, chunk, first, last, func(k int64) (seq, before int64, data []byte, err error) {
		err = db.pool.QueryRow(ctx, `SELECT seq, nl_before, data FROM evidence_chunks
			WHERE tenant = $1 AND ref = $2 AND nl_before < $3 AND nl_before + nl >= $3 ORDER BY seq LIMIT 1`,
			tenant, ref, k).Scan(&seq, &before, &data)
		if err != nil {
			err = mapErr(fmt.Errorf("postgres: find line %d: %w", k, err))
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
	if err := db.pool.QueryRow(ctx, "SELECT coalesce(sum(bytes), 0)::bigint FROM evidence WHERE tenant = $1", tenant).Scan(&used); err != nil {
		return 0, mapErr(fmt.Errorf("postgres: evidence usage: %w", err))
	}
	return used, nil
}
