package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/statecodec"
)

var _ groundhog.StateStore = (*DB)(nil)

// GetState returns the newest version of (tenant, session), a tombstone
// included; ENOTFOUND when there is none.
func (db *DB) GetState(ctx context.Context, tenant, session string) (*groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	row := db.readRow(ctx, `SELECT version, state, ext, deleted, author, created_at FROM state_versions
		WHERE tenant = ? AND session = ? ORDER BY version DESC LIMIT 1`, tenant, session)
	return scanState(row, tenant, session)
}

// GetStateVersion returns one version, or ENOTFOUND.
func (db *DB) GetStateVersion(ctx context.Context, tenant, session string, version int64) (*groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	row := db.readRow(ctx, `SELECT version, state, ext, deleted, author, created_at FROM state_versions
		WHERE tenant = ? AND session = ? AND version = ?`, tenant, session, version)
	return scanState(row, tenant, session)
}

// ListStateVersions returns every version of (tenant, session), newest
// first; none is an empty list, not an error.
func (db *DB) ListStateVersions(ctx context.Context, tenant, session string) ([]groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	rows, err := db.r.QueryContext(ctx, `SELECT version, state, ext, deleted, author, created_at FROM state_versions
		WHERE tenant = ? AND session = ? ORDER BY version DESC`, tenant, session)
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: list state versions: %w", err))
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
		return nil, mapErr(fmt.Errorf("sqlite: list state versions: %w", err))
	}
	return out, nil
}

// PutState stores v as version expect+1 when the newest version is expect
// (0: none yet), else EPRECONDITION and nothing stored. CreatedAt is
// v.CreatedAt when set (the caller's clock), else the time of the write.
//
// It is one statement: the row is inserted only when version expect exists
// (or expect is 0), and the primary key refuses a second expect+1. Versions
// are dense from 1 and never removed, so together these mean "expect is
// the newest version", atomically, without a read-then-write race.
func (db *DB) PutState(ctx context.Context, v groundhog.StateVersion, expect int64) (*groundhog.StateVersion, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	state, ext, err := statecodec.Prepare(&v, expect, time.Now())
	if err != nil {
		return nil, err
	}
	res, err := db.w.ExecContext(ctx, `INSERT INTO state_versions (tenant, session, version, state, ext, deleted, author, created_at)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?
		WHERE ? = 0 OR EXISTS (SELECT 1 FROM state_versions WHERE tenant = ? AND session = ? AND version = ?)
		ON CONFLICT DO NOTHING`,
		v.Tenant, v.Session, v.Version, state, ext, boolInt(v.Deleted), v.Author, v.CreatedAt.UnixNano(),
		expect, v.Tenant, v.Session, expect)
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: put state: %w", err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, groundhog.Errorf(groundhog.EPRECONDITION, "state of session %q is not at version %d", v.Session, expect)
	}
	return &v, nil
}

// scanState reads one state_versions row.
func scanState(row interface{ Scan(...any) error }, tenant, session string) (*groundhog.StateVersion, error) {
	var (
		v          = groundhog.StateVersion{Tenant: tenant, Session: session}
		state, ext []byte
		deleted    int
		created    int64
	)
	err := row.Scan(&v.Version, &state, &ext, &deleted, &v.Author, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "no state for session %q", session)
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: read state: %w", err))
	}
	v.Deleted = deleted != 0
	v.CreatedAt = time.Unix(0, created).UTC()
	if !v.Deleted {
		if v.State, err = statecodec.Decode(state, ext); err != nil {
			return nil, fmt.Errorf("sqlite: session %q version %d: %w", session, v.Version, err)
		}
	}
	return &v, nil
}
