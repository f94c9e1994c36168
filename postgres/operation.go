package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
)

var resultColumns = respColumnList("result_")

// operationColumns are the columns scanOperation reads, in its order.
var operationColumns = `id, tenant, idem_key, request_hash, status, ` + strings.Join(resultColumns, ", ") + `,
	lease_owner, lease_expires_at, fencing_token, attempts, created_at, updated_at, expires_at`

var qSelectOperation = `SELECT ` + operationColumns + ` FROM operations `

// scanOperation reads one row of operationColumns, after the columns of
// pre (destinations of leading columns, if any).
func scanOperation(row pgx.Row, pre ...any) (*groundhog.Operation, error) {
	var (
		op                               groundhog.Operation
		status                           string
		rc                               respCols
		attempts                         int32
		lease, created, updated, expires *int64
	)
	dest := append(pre, &op.ID, &op.Tenant, &op.Key, &op.RequestHash, &status)
	dest = append(dest, rc.dest()...)
	dest = append(dest, &op.LeaseOwner, &lease, &op.FencingToken, &attempts, &created, &updated, &expires)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	res, err := rc.response()
	if err != nil {
		return nil, fmt.Errorf("operation %s: %w", op.ID, err)
	}
	op.Status = groundhog.OperationStatus(status)
	op.Result = res
	op.Attempts = int(attempts)
	op.LeaseExpiresAt = fromNS(lease)
	op.CreatedAt = fromNS(created)
	op.UpdatedAt = fromNS(updated)
	op.ExpiresAt = fromNS(expires)
	return &op, nil
}

// Begin claims (p.Tenant, p.Key) following the state machine of
// groundhog.OperationStore, in one transaction: INSERT … ON CONFLICT DO
// NOTHING creates a new record (a concurrent inserter of the same key makes
// it wait for that transaction, then do nothing); otherwise the record is
// read with SELECT … FOR UPDATE, which holds its row lock until commit, so
// concurrent Begins on one key are serialized, across replicas too.
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
	// The record can vanish between the INSERT that found it and the
	// SELECT FOR UPDATE (PurgeOperations); then start over. The claiming
	// UPDATEs also compare the token they read (a second guard besides the
	// row lock) and start over if it moved. Two rounds suffice unless
	// purges race this key continuously.
	for range 3 {
		op, outcome, err := db.beginOnce(ctx, p)
		if errors.Is(err, errVanished) {
			continue
		}
		if err != nil {
			return nil, "", mapErr(fmt.Errorf("postgres: begin operation: %w", err))
		}
		return op, outcome, nil
	}
	return nil, "", groundhog.Errorf(groundhog.EUNAVAILABLE, "store unavailable: operation record keeps vanishing")
}

// errVanished: the record changed under Begin; it starts over.
var errVanished = errors.New("operation record vanished or moved")

// qClaimOrRead is the first statement of every Begin: it inserts the new
// record, or, when (tenant, key) exists, returns the existing one, in one
// round trip and without a transaction. The first column says which. No row
// at all means the existing record committed after this statement's
// snapshot, or vanished: Begin starts over.
var qClaimOrRead = `WITH ins AS (
		INSERT INTO operations (id, tenant, idem_key, request_hash, status,
			lease_owner, lease_expires_at, fencing_token, attempts, created_at, updated_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (tenant, idem_key) DO NOTHING
		RETURNING ` + operationColumns + `)
	SELECT true, * FROM ins
	UNION ALL
	SELECT false, ` + operationColumns + ` FROM operations
		WHERE tenant = $2 AND idem_key = $3 AND NOT EXISTS (SELECT 1 FROM ins)`

// beginOnce makes one attempt at Begin. A new key costs one round trip
// (qClaimOrRead inserts it); so does an existing record that Begin only
// reports (terminal, mismatched, or running under a live lease), read
// without a lock since nothing is written. Only a claim that changes an
// existing record — a takeover, or the replacement of an expired one — runs
// the transaction that locks the row (SELECT … FOR UPDATE), so concurrent
// claimers of one record are serialized and exactly one wins.
func (db *DB) beginOnce(ctx context.Context, p groundhog.BeginParams) (op *groundhog.Operation, outcome groundhog.BeginOutcome, err error) {
	now := p.Now.UTC()
	leaseUntil := now.Add(p.Lease)
	fresh := &groundhog.Operation{
		ID: groundhog.NewID(), Tenant: p.Tenant, Key: p.Key, RequestHash: p.RequestHash,
		Status: groundhog.StatusRunning, LeaseOwner: p.Owner, LeaseExpiresAt: leaseUntil,
		FencingToken: 1, Attempts: 1, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(p.Retention),
	}
	var (
		inserted bool
		cur      *groundhog.Operation
	)
	err = db.groupQueryRow(ctx, "o\x00"+p.Tenant+"\x00"+p.Key, qClaimOrRead, func(row pgx.Row) (err error) {
		cur, err = scanOperation(row, &inserted)
		return err
	}, fresh.ID, fresh.Tenant, fresh.Key, fresh.RequestHash, string(fresh.Status),
		fresh.LeaseOwner, ns(fresh.LeaseExpiresAt), fresh.FencingToken, int32(fresh.Attempts), ns(now), ns(now), ns(fresh.ExpiresAt))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", errVanished
	}
	if err != nil {
		return nil, "", err
	}
	if inserted {
		return fresh, groundhog.BeginClaimed, nil
	}
	if outcome, ok := reportOnly(cur, p, now); ok {
		return cur, outcome, nil
	}

	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	cur, err = scanOperation(tx.QueryRow(ctx, qSelectOperation+"WHERE tenant = $1 AND idem_key = $2 FOR UPDATE", p.Tenant, p.Key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", errVanished
	}
	if err != nil {
		return nil, "", err
	}
	op, outcome, err = transition(ctx, tx, cur, fresh, p)
	if err != nil {
		return nil, "", err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, "", err
	}
	return op, outcome, nil
}

// reportOnly returns Begin's outcome for the existing record cur when that
// outcome changes nothing (the same decisions, in the same order, as
// transition); ok is false when Begin must claim cur under its row lock.
func reportOnly(cur *groundhog.Operation, p groundhog.BeginParams, now time.Time) (outcome groundhog.BeginOutcome, ok bool) {
	switch {
	case !cur.ExpiresAt.IsZero() && !cur.ExpiresAt.After(now):
		return "", false // expired: replaced under the lock
	case cur.RequestHash != p.RequestHash:
		return groundhog.BeginMismatch, true
	case cur.Status.Terminal():
		return groundhog.BeginDone, true
	case cur.Status == groundhog.StatusRunning && cur.LeaseExpiresAt.After(now):
		return groundhog.BeginInProgress, true
	}
	return "", false // pending, or an expired lease: taken over under the lock
}

// transition applies Begin's state machine to the locked record cur.
// fresh is the record a claim of a new key would create.
func transition(ctx context.Context, tx pgx.Tx, cur, fresh *groundhog.Operation, p groundhog.BeginParams) (*groundhog.Operation, groundhog.BeginOutcome, error) {
	now := fresh.CreatedAt
	if !cur.ExpiresAt.IsZero() && !cur.ExpiresAt.After(now) {
		// Retention is over: the record counts as absent. Replace it by a
		// new one, but keep counting tokens upward so that a token handed
		// out under the old record can never equal a new one.
		fresh.FencingToken = cur.FencingToken + 1
		set := []string{"id = $1", "request_hash = $2", "status = $3", "lease_owner = $4", "lease_expires_at = $5",
			"fencing_token = $6", "attempts = $7", "created_at = $8", "updated_at = $9", "expires_at = $10"}
		for _, c := range resultColumns {
			set = append(set, c+" = NULL")
		}
		tag, err := tx.Exec(ctx, "UPDATE operations SET "+strings.Join(set, ", ")+" WHERE id = $11 AND fencing_token = $12",
			fresh.ID, fresh.RequestHash, string(fresh.Status), fresh.LeaseOwner, ns(fresh.LeaseExpiresAt),
			fresh.FencingToken, int32(fresh.Attempts), ns(now), ns(now), ns(fresh.ExpiresAt), cur.ID, cur.FencingToken)
		if err != nil {
			return nil, "", err
		}
		if tag.RowsAffected() != 1 {
			return nil, "", errVanished
		}
		return fresh, groundhog.BeginClaimed, nil
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
	cur.LeaseExpiresAt = fresh.LeaseExpiresAt
	cur.UpdatedAt = now
	if !cur.ExpiresAt.IsZero() && cur.ExpiresAt.Before(cur.LeaseExpiresAt) {
		cur.ExpiresAt = cur.LeaseExpiresAt // never expire under a live lease
	}
	tag, err := tx.Exec(ctx, `UPDATE operations SET status = $1, fencing_token = $2, attempts = $3,
			lease_owner = $4, lease_expires_at = $5, updated_at = $6, expires_at = $7
		WHERE id = $8 AND fencing_token = $9`,
		string(cur.Status), cur.FencingToken, int32(cur.Attempts), cur.LeaseOwner, ns(cur.LeaseExpiresAt), ns(now), ns(cur.ExpiresAt), cur.ID, cur.FencingToken-1)
	if err != nil {
		return nil, "", err
	}
	if tag.RowsAffected() != 1 {
		return nil, "", errVanished
	}
	return cur, groundhog.BeginClaimed, nil
}

// GetOperation returns the record id of tenant, or ENOTFOUND (also when
// the record belongs to another tenant). Expired records not yet purged
// are returned as they are.
func (db *DB) GetOperation(ctx context.Context, tenant, id string) (*groundhog.Operation, error) {
	return db.getOperation(ctx, "WHERE tenant = $1 AND id = $2", tenant, id)
}

// GetOperationByKey returns the record of (tenant, key), or ENOTFOUND.
// Expired records not yet purged are returned as they are.
func (db *DB) GetOperationByKey(ctx context.Context, tenant, key string) (*groundhog.Operation, error) {
	return db.getOperation(ctx, "WHERE tenant = $1 AND idem_key = $2", tenant, key)
}

func (db *DB) getOperation(ctx context.Context, where string, args ...any) (*groundhog.Operation, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	op, err := scanOperation(db.pool.QueryRow(ctx, qSelectOperation+where, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "operation not found")
	}
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: get operation: %w", err))
	}
	return op, nil
}

// Renew extends the lease of a running record to until, if token is
// current (see fenced).
func (db *DB) Renew(ctx context.Context, tenant, id string, token int64, until time.Time) error {
	// A record never expires under a live lease: retention is pushed to
	// at least the end of the lease (NULL, never expiring, stays NULL).
	return db.fenced(ctx, "renew", tenant, id, token,
		[]string{"lease_expires_at", "expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE GREATEST(expires_at, ?) END"}, ns(until), ns(until))
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
	cols := append(append([]string{"status"}, resultColumns...), "updated_at")
	vals := append(append([]any{string(status)}, respArgs(result)...), ns(now))
	return db.fenced(ctx, what, tenant, id, token, cols, vals...)
}

// Release returns a running record to pending with no owner, so the next
// Begin runs it again, if token is current (see fenced).
func (db *DB) Release(ctx context.Context, tenant, id string, token int64, now time.Time) error {
	return db.fenced(ctx, "release", tenant, id, token,
		[]string{"status", "lease_owner", "lease_expires_at", "updated_at"},
		string(groundhog.StatusPending), "", nil, ns(now))
}

// fenced sets cols to vals on the record (tenant, id) only while its
// fencing token is token and its status is running, in one UPDATE. When no
// row matches it tells why: ENOTFOUND when there is no such record for
// tenant, ESTALE when the record moved on (a takeover raised the token, or
// it is no longer running).
func (db *DB) fenced(ctx context.Context, what, tenant, id string, token int64, cols []string, vals ...any) error {
	if err := db.check(); err != nil {
		return err
	}
	set := make([]string, len(cols))
	for i, c := range cols {
		if strings.Contains(c, "?") { // an expression: "col = f(col, ?)"
			set[i] = strings.Replace(c, "?", "$"+strconv.Itoa(i+1), 1)
			continue
		}
		set[i] = c + " = $" + strconv.Itoa(i+1)
	}
	n := len(cols)
	q := "UPDATE operations SET " + strings.Join(set, ", ") +
		" WHERE tenant = $" + strconv.Itoa(n+1) + " AND id = $" + strconv.Itoa(n+2) +
		" AND fencing_token = $" + strconv.Itoa(n+3) + " AND status = 'running'"
	if what != "renew" && db.notifyIdem.Load() {
		// The wake-up of the operation's waiters rides in the same statement
		// (delivered when it commits): no round trip of its own. The topic is
		// wake.Topic("i", tenant, key); octet_length, as Go's len, counts bytes.
		q = "WITH u AS (" + q + " RETURNING tenant, idem_key) SELECT pg_notify('" + wakeChannel +
			"', 'i:' || octet_length(tenant) || '.' || tenant || ':' || idem_key) FROM u"
	}
	tag, err := db.groupExec(ctx, "o\x00"+tenant+"\x00"+id, q, append(vals, tenant, id, token)...)
	if err != nil {
		return mapErr(fmt.Errorf("postgres: %s operation: %w", what, err))
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM operations WHERE tenant = $1 AND id = $2)", tenant, id).Scan(&exists); err != nil {
		return mapErr(fmt.Errorf("postgres: %s operation: %w", what, err))
	}
	if !exists {
		return groundhog.Errorf(groundhog.ENOTFOUND, "operation not found")
	}
	return groundhog.Errorf(groundhog.ESTALE, "%s operation: fencing token %d is not current", what, token)
}

// PurgeOperations deletes records expired at now (ExpiresAt <= now) and
// returns how many.
func (db *DB) PurgeOperations(ctx context.Context, now time.Time) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, "DELETE FROM operations WHERE expires_at <= $1", now.UnixNano())
	if err != nil {
		return 0, mapErr(fmt.Errorf("postgres: purge operations: %w", err))
	}
	return int(tag.RowsAffected()), nil
}
