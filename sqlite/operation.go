package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
)

var qSelectOperation = `SELECT id, tenant, idem_key, request_hash, status, ` + respColumns("result_") + `,
	lease_owner, lease_expires_at, fencing_token, attempts, created_at, updated_at, expires_at
	FROM operations `

// scanOperation reads one row of qSelectOperation.
func scanOperation(row interface{ Scan(...any) error }) (*groundhog.Operation, error) {
	var (
		op                               groundhog.Operation
		status                           string
		rc                               respCols
		lease, created, updated, expires sql.NullInt64
	)
	dest := append([]any{&op.ID, &op.Tenant, &op.Key, &op.RequestHash, &status}, rc.dest()...)
	dest = append(dest, &op.LeaseOwner, &lease, &op.FencingToken, &op.Attempts, &created, &updated, &expires)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	res, err := rc.response()
	if err != nil {
		return nil, fmt.Errorf("operation %s: %w", op.ID, err)
	}
	op.Status = groundhog.OperationStatus(status)
	op.Result = res
	op.LeaseExpiresAt = fromNS(lease)
	op.CreatedAt = fromNS(created)
	op.UpdatedAt = fromNS(updated)
	op.ExpiresAt = fromNS(expires)
	return &op, nil
}

// Begin claims (p.Tenant, p.Key) following the state machine of
// groundhog.OperationStore, in one BEGIN IMMEDIATE transaction on the
// single writer connection, so concurrent Begins on one key are strictly
// serialized and exactly one of them claims a new record.
//
// A record expired at p.Now is replaced in place by a new record with a
// new ID, CreatedAt = p.Now and the next fencing token: tokens of a
// (tenant, key) never go back while its row exists, and fenced writes that
// still name the old ID find no record (ENOTFOUND). A takeover keeps the
// record's ID and CreatedAt, and pushes ExpiresAt to at least the new lease's end.
func (db *DB) Begin(ctx context.Context, p groundhog.BeginParams) (*groundhog.Operation, groundhog.BeginOutcome, error) {
	if err := db.check(); err != nil {
		return nil, "", err
	}
	// A new key — the common case — is claimed by one INSERT in autocommit:
	// one durable write, no read (operation_claim.go).
	if op, ok, err := db.claimNew(ctx, p); err != nil {
		return nil, "", mapErr(fmt.Errorf("sqlite: begin operation: %w", err))
	} else if ok {
		return op, groundhog.BeginClaimed, nil
	}
	// Read-only fast path: the answers that change nothing (a replay, a
	// mismatch, a live lease) are decided from a read snapshot, without
	// taking the single write lock. They cannot be wrong: a terminal or
	// mismatched record changes only after its retention ends, and a live
	// lease seen a moment ago linearizes this Begin just before whatever
	// ends it.
	if cur, err := scanOperation(db.readRow(ctx, qSelectOperation+"WHERE tenant = ? AND idem_key = ?", p.Tenant, p.Key)); err == nil {
		if outcome, ok := readOnlyOutcome(cur, p); ok {
			return cur, outcome, nil
		}
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", mapErr(fmt.Errorf("sqlite: begin operation: %w", err))
	}
	defer tx.Rollback()

	op, outcome, err := beginTx(ctx, tx, p)
	if err != nil {
		return nil, "", mapErr(fmt.Errorf("sqlite: begin operation: %w", err))
	}
	if err := tx.Commit(); err != nil {
		return nil, "", mapErr(fmt.Errorf("sqlite: begin operation: commit: %w", err))
	}
	return op, outcome, nil
}

// readOnlyOutcome returns Begin's answer for cur when it changes nothing:
// mismatch, done, or in progress under a live lease (checked in beginTx's
// order); ok is false when Begin must write (claim, replace, take over).
func readOnlyOutcome(cur *groundhog.Operation, p groundhog.BeginParams) (groundhog.BeginOutcome, bool) {
	now := p.Now.UTC()
	if !cur.ExpiresAt.IsZero() && !cur.ExpiresAt.After(now) {
		return "", false
	}
	switch {
	case cur.RequestHash != p.RequestHash:
		return groundhog.BeginMismatch, true
	case cur.Status.Terminal():
		return groundhog.BeginDone, true
	case cur.Status == groundhog.StatusRunning && cur.LeaseExpiresAt.After(now):
		return groundhog.BeginInProgress, true
	}
	return "", false
}

func beginTx(ctx context.Context, tx *sql.Tx, p groundhog.BeginParams) (*groundhog.Operation, groundhog.BeginOutcome, error) {
	now := p.Now.UTC()
	leaseUntil := now.Add(p.Lease)
	cur, err := scanOperation(tx.QueryRowContext(ctx, qSelectOperation+"WHERE tenant = ? AND idem_key = ?", p.Tenant, p.Key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		op := &groundhog.Operation{
			ID: groundhog.NewTimeID(now), Tenant: p.Tenant, Key: p.Key, RequestHash: p.RequestHash,
			Status: groundhog.StatusRunning, LeaseOwner: p.Owner, LeaseExpiresAt: leaseUntil,
			FencingToken: 1, Attempts: 1, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(p.Retention),
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO operations (id, tenant, idem_key, request_hash, status,
				lease_owner, lease_expires_at, fencing_token, attempts, created_at, updated_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			op.ID, op.Tenant, op.Key, op.RequestHash, string(op.Status),
			op.LeaseOwner, ns(op.LeaseExpiresAt), op.FencingToken, op.Attempts, ns(now), ns(now), ns(op.ExpiresAt))
		if err != nil {
			return nil, "", err
		}
		return op, groundhog.BeginClaimed, nil
	case err != nil:
		return nil, "", err
	}

	if !cur.ExpiresAt.IsZero() && !cur.ExpiresAt.After(now) {
		// Retention is over: the record counts as absent. Replace it by a
		// new one, but keep counting tokens upward so that a token handed
		// out under the old record can never equal a new one.
		op := &groundhog.Operation{
			ID: groundhog.NewTimeID(now), Tenant: p.Tenant, Key: p.Key, RequestHash: p.RequestHash,
			Status: groundhog.StatusRunning, LeaseOwner: p.Owner, LeaseExpiresAt: leaseUntil,
			FencingToken: cur.FencingToken + 1, Attempts: 1, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(p.Retention),
		}
		args := append([]any{op.ID, op.RequestHash, string(op.Status)}, respArgs(nil)...)
		args = append(args, op.LeaseOwner, ns(op.LeaseExpiresAt), op.FencingToken, op.Attempts,
			ns(now), ns(now), ns(op.ExpiresAt), cur.ID)
		if _, err := tx.ExecContext(ctx, `UPDATE operations SET id = ?, request_hash = ?, status = ?,
				(`+respColumns("result_")+`) = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?),
				lease_owner = ?, lease_expires_at = ?, fencing_token = ?, attempts = ?,
				created_at = ?, updated_at = ?, expires_at = ?
			WHERE id = ?`, args...); err != nil {
			return nil, "", err
		}
		return op, groundhog.BeginClaimed, nil
	}

	if cur.RequestHash != p.RequestHash {
		return cur, groundhog.BeginMismatch, nil
	}
	if cur.Status.Terminal() {
		return cur, groundhog.BeginDone, nil
	}
	if cur.Status == groundhog.StatusRunning && cur.LeaseExpiresAt.After(now) {
		return cur, groundhog.BeginInProgress, nil
	}
	// Pending, or running under an expired lease: take over.
	if cur.Status == groundhog.StatusRunning {
		cur.LostAttemptStart = cur.UpdatedAt // the vanished attempt's claim
	}
	cur.Status = groundhog.StatusRunning
	cur.FencingToken++
	cur.Attempts++
	cur.LeaseOwner = p.Owner
	cur.LeaseExpiresAt = leaseUntil
	cur.UpdatedAt = now
	if !cur.ExpiresAt.IsZero() && cur.ExpiresAt.Before(leaseUntil) {
		cur.ExpiresAt = leaseUntil // never expire under a live lease
	}
	if _, err := tx.ExecContext(ctx, `UPDATE operations SET status = ?, fencing_token = ?, attempts = ?,
			lease_owner = ?, lease_expires_at = ?, updated_at = ?, expires_at = ?
		WHERE id = ?`,
		string(cur.Status), cur.FencingToken, cur.Attempts, cur.LeaseOwner, ns(cur.LeaseExpiresAt), ns(now), ns(cur.ExpiresAt), cur.ID); err != nil {
		return nil, "", err
	}
	return cur, groundhog.BeginClaimed, nil
}

// GetOperation returns the record id of tenant, or ENOTFOUND (also when
// the record belongs to another tenant). Expired records not yet purged
// are returned as they are.
func (db *DB) GetOperation(ctx context.Context, tenant, id string) (*groundhog.Operation, error) {
	return db.getOperation(ctx, "WHERE tenant = ? AND id = ?", tenant, id)
}

// GetOperationByKey returns the record of (tenant, key), or ENOTFOUND.
// Expired records not yet purged are returned as they are.
func (db *DB) GetOperationByKey(ctx context.Context, tenant, key string) (*groundhog.Operation, error) {
	return db.getOperation(ctx, "WHERE tenant = ? AND idem_key = ?", tenant, key)
}

func (db *DB) getOperation(ctx context.Context, where string, args ...any) (*groundhog.Operation, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	op, err := scanOperation(db.readRow(ctx, qSelectOperation+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "operation not found")
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: get operation: %w", err))
	}
	return op, nil
}

// Renew extends the lease of a running record to until, if token is
// current (see fenced).
func (db *DB) Renew(ctx context.Context, tenant, id string, token int64, until time.Time) error {
	// A record never expires under a live lease: retention is pushed to
	// at least the end of the lease (NULL, never expiring, stays NULL).
	return db.fenced(ctx, "renew", tenant, id, token,
		"lease_expires_at = ?, expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE MAX(expires_at, ?) END", ns(until), ns(until))
}

// Complete stores result and marks the record completed, if token is
// current (see fenced).
func (db *DB) Complete(ctx context.Context, tenant, id string, token int64, result *groundhog.Response, now time.Time) error {
	return db.finish(ctx, "complete", groundhog.StatusCompleted, tenant, id, token, result, now)
}

// Fail stores result and marks the record failed (terminal), if token is
// current (see fenced).
func (db *DB) Fail(ctx context.Context, tenant, id string, token int64, result *groundhog.Response, now time.Time) error {
	return db.finish(ctx, "fail", groundhog.StatusFailed, tenant, id, token, result, now)
}

func (db *DB) finish(ctx context.Context, what string, status groundhog.OperationStatus, tenant, id string, token int64, result *groundhog.Response, now time.Time) error {
	if result == nil {
		return groundhog.Errorf(groundhog.EINVALID, "%s operation: nil result", what)
	}
	args := append([]any{string(status)}, respArgs(result)...)
	args = append(args, ns(now))
	return db.fenced(ctx, what, tenant, id, token,
		"status = ?, ("+respColumns("result_")+") = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), updated_at = ?", args...)
}

// Release returns a running record to pending with no owner, so the next
// Begin runs it again, if token is current (see fenced).
func (db *DB) Release(ctx context.Context, tenant, id string, token int64, now time.Time) error {
	return db.fenced(ctx, "release", tenant, id, token,
		"status = 'pending', lease_owner = '', lease_expires_at = NULL, updated_at = ?", ns(now))
}

// fenced applies set to the record (tenant, id) only while its fencing
// token is token and its status is running. When no row matches it tells
// why: ENOTFOUND when there is no such record for tenant, ESTALE when the
// record moved on (a takeover raised the token, or it is no longer
// running). The check and the write are one statement.
func (db *DB) fenced(ctx context.Context, what, tenant, id string, token int64, set string, setArgs ...any) error {
	if err := db.check(); err != nil {
		return err
	}
	// One UPDATE: the check (the WHERE clause) and the write are one
	// statement, one durable write (in autocommit, or in a group commit
	// with concurrent operation writes: operation_batch.go).
	args := append(setArgs, tenant, id, token)
	n, err := db.opExec(ctx, "UPDATE operations SET "+set+
		" WHERE tenant = ? AND id = ? AND fencing_token = ? AND status = 'running'", args...)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: %s operation: %w", what, err))
	}
	if n == 0 {
		// Nothing matched: say why, from a read after the fact. Tokens only
		// grow and a record that left running under this token never
		// returns to it, so the answer cannot be "it matches now"; a record
		// purged or replaced meanwhile reads as not found, which is what a
		// write a moment later would have met.
		var cur int64
		err := db.readRow(ctx, "SELECT fencing_token FROM operations WHERE tenant = ? AND id = ?", tenant, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return groundhog.Errorf(groundhog.ENOTFOUND, "operation not found")
		}
		if err != nil {
			return mapErr(fmt.Errorf("sqlite: %s operation: %w", what, err))
		}
		return groundhog.Errorf(groundhog.ESTALE, "%s operation: fencing token %d is not current", what, token)
	}
	return nil
}

// PurgeOperations deletes records expired at now (ExpiresAt <= now) and
// returns how many.
func (db *DB) PurgeOperations(ctx context.Context, now time.Time) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	res, err := db.w.ExecContext(ctx, "DELETE FROM operations WHERE expires_at <= ?", now.UnixNano())
	if err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: purge operations: %w", err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr(fmt.Errorf("sqlite: purge operations: %w", err))
	}
	return int(n), nil
}
