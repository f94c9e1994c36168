package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/statecodec"
)

var _ groundhog.StateStore = (*DB)(nil)

const stateCols = "version, state, ext, deleted, author, created_at"

// GetState returns the newest version of (tenant, session), a tombstone
// included; ENOTFOUND when there is none.
func (db *DB) GetState(ctx context.Context, tenant, session string) (*groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	row := db.pool.QueryRow(ctx, "SELECT "+stateCols+" FROM state_versions WHERE tenant = $1 AND session = $2 ORDER BY version DESC LIMIT 1", tenant, session)
	return scanState(row, tenant, session)
}

// GetStateVersion returns one version, or ENOTFOUND.
func (db *DB) GetStateVersion(ctx context.Context, tenant, session string, version int64) (*groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	row := db.pool.QueryRow(ctx, "SELECT "+stateCols+" FROM state_versions WHERE tenant = $1 AND session = $2 AND version = $3", tenant, session, version)
	return scanState(row, tenant, session)
}

// ListStateVersions returns every version of (tenant, session), newest
// first; none is an empty list.
func (db *DB) ListStateVersions(ctx context.Context, tenant, session string) ([]groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, "SELECT "+stateCols+" FROM state_versions WHERE tenant = $1 AND session = $2 ORDER BY version DESC", tenant, session)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: list state versions: %w", err))
	}
	defer rows.Close()
	var out []groundhog.StateVersion
	for rows.Next() {
		v, err := scanState(rows, tenant, session)
		if err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(fmt.Errorf("postgres: list state versions: %w", err))
	}
	return out, nil
}

// PutState stores v as version expect+1 when the newest version is expect
// (0: none yet), else EPRECONDITION and nothing stored. CreatedAt is
// v.CreatedAt when set, else the time of the write.
//
// One statement, as in the SQLite store: the row goes in only when version
// expect exists (or expect is 0), and the primary key (ON CONFLICT DO
// NOTHING) lets exactly one of several replicas' writers store expect+1.
// Versions are dense and never removed, so this is "expect is newest".
func (db *DB) PutState(ctx context.Context, v groundhog.StateVersion, expect int64) (*groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	state, ext, err := statecodec.Prepare(&v, expect, time.Now())
	if err != nil {
		return nil, err
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO state_versions (tenant, session, version, state, ext, deleted, author, created_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8
		WHERE $9::bigint = 0 OR EXISTS (SELECT 1 FROM state_versions WHERE tenant = $1 AND session = $2 AND version = $9)
		ON CONFLICT DO NOTHING`,
		v.Tenant, v.Session, v.Version, state, ext, v.Deleted, v.Author, v.CreatedAt.UnixNano(), expect)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: put state: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return nil, groundhog.Errorf(groundhog.EPRECONDITION, "state of session %q is not at version %d", v.Session, expect)
	}
	return &v, nil
}

func scanState(row pgx.Row, tenant, session string) (*groundhog.StateVersion, error) {
	var (
		v          = groundhog.StateVersion{Tenant: tenant, Session: session}
		state, ext []byte
		created    int64
	)
	err := row.Scan(&v.Version, &state, &ext, &v.Deleted, &v.Author, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "no state for session %q", session)
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: read state: %w", err))
	}
	v.CreatedAt = time.Unix(0, created).UTC()
	if !v.Deleted {
		if v.State, err = statecodec.Decode(state, ext); err != nil {
			return nil, fmt.Errorf("postgres: session %q version %d: %w", session, v.Version, err)
		}
	}
	return &v, nil
}
