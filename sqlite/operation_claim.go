package sqlite

import (
	"context"

	"github.com/groundhog-ai/groundhog"
)

// qClaimNew inserts a new running record unless (tenant, idem_key) already
// has one (UNIQUE (tenant, idem_key)); the conflict changes nothing.
const qClaimNew = `INSERT INTO operations (id, tenant, idem_key, request_hash, status,
		lease_owner, lease_expires_at, fencing_token, attempts, created_at, updated_at, expires_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (tenant, idem_key) DO NOTHING`

// claimNew claims p's key when no record of it exists, with one statement
// (in autocommit, or in a group commit with concurrent operation writes:
// operation_batch.go): the claim costs one durable write and no read. ok is false when a record exists (expired, terminal,
// running or pending): then nothing was written and Begin decides from it
// as before. The record is the one beginTx would create for an absent key.
func (db *DB) claimNew(ctx context.Context, p groundhog.BeginParams) (op *groundhog.Operation, ok bool, err error) {
	now := p.Now.UTC()
	op = &groundhog.Operation{
		ID: groundhog.NewTimeID(now), Tenant: p.Tenant, Key: p.Key, RequestHash: p.RequestHash,
		Status: groundhog.StatusRunning, LeaseOwner: p.Owner, LeaseExpiresAt: now.Add(p.Lease),
		FencingToken: 1, Attempts: 1, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(p.Retention),
	}
	n, err := db.opExec(ctx, qClaimNew,
		op.ID, op.Tenant, op.Key, op.RequestHash, string(op.Status),
		op.LeaseOwner, ns(op.LeaseExpiresAt), op.FencingToken, op.Attempts, ns(now), ns(now), ns(op.ExpiresAt))
	if err != nil {
		return nil, false, err
	}
	return op, n == 1, nil
}
