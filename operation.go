package groundhog

import (
	"context"
	"time"
)

// OperationStatus is the state of an operation record.
type OperationStatus string

const (
	StatusPending   OperationStatus = "pending"   // released after a retryable failure: the next request runs it
	StatusRunning   OperationStatus = "running"   // a worker holds the lease
	StatusCompleted OperationStatus = "completed" // terminal: Result is the stored success
	StatusFailed    OperationStatus = "failed"    // terminal: Result is the stored failure
)

// Terminal reports whether s is completed or failed.
func (s OperationStatus) Terminal() bool { return s == StatusCompleted || s == StatusFailed }

// Operation is a durable idempotency record keyed by (Tenant, Key).
type Operation struct {
	ID             string // opaque, unique; names the record in the tool operations API
	Tenant         string
	Key            string // the Idempotency-Key
	RequestHash    string
	Status         OperationStatus
	Result         *Response // set when Status is terminal
	LeaseOwner     string
	LeaseExpiresAt time.Time
	FencingToken   int64 // +1 on every claim or takeover; guards every later write
	Attempts       int   // number of executions started under this record
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ExpiresAt      time.Time // retention: after this the record counts as absent

	// LostAttemptStart is set by Begin (never stored) when it claimed a
	// record that was running under an expired lease: the previous
	// attempt's worker vanished (a crash, a kill -9, a partition) without
	// settling the record. It is when that attempt claimed the record (its
	// UpdatedAt: renewals leave it), so the attempt can be booked under the
	// same ledger key its own worker would have used. Zero for a new record
	// and for a pending one (its previous attempt settled by releasing it).
	LostAttemptStart time.Time
}

// BeginParams asks to claim (Tenant, Key) for one execution.
type BeginParams struct {
	Tenant      string
	Key         string
	RequestHash string
	Owner       string        // who will hold the lease (process id + request id)
	Lease       time.Duration // lease length from Now
	Retention   time.Duration // record lifetime from Now when created
	Now         time.Time
}

// BeginOutcome says what Begin found.
type BeginOutcome string

const (
	// BeginClaimed: the caller now holds the lease with Op.FencingToken and
	// must run the operation. A new record, an expired one, a pending one or
	// a running one whose lease expired (a takeover) all end here.
	BeginClaimed BeginOutcome = "claimed"
	// BeginInProgress: running under a live lease held by someone else.
	BeginInProgress BeginOutcome = "in_progress"
	// BeginDone: terminal; Op.Result is to be replayed.
	BeginDone BeginOutcome = "done"
	// BeginMismatch: the record has another RequestHash; nothing was changed.
	BeginMismatch BeginOutcome = "mismatch"
)

// OperationStore keeps operation records. Every method is atomic.
//
// Begin, in one transaction: no record, or a record expired at Now
// (ExpiresAt <= Now) → create (replacing the expired one) with status
// running, FencingToken = previous token + 1 (1 when new), Attempts = 1,
// lease Owner until Now+Lease, ExpiresAt = Now+Retention → BeginClaimed.
// Otherwise a different RequestHash → BeginMismatch (unchanged). Terminal →
// BeginDone. Pending, or running with LeaseExpiresAt <= Now → take over:
// token+1, Attempts+1, new owner and lease, status running → BeginClaimed
// (LostAttemptStart set on the returned record when it was running).
// Running with a live lease → BeginInProgress.
//
// Renew, Complete, Fail and Release name the record by (tenant, id) and are
// fenced: they change the record only when its FencingToken equals token and
// its status is running; otherwise they change nothing and return an error
// with code ESTALE (ENOTFOUND if there is no such record). Complete stores
// result with status completed; Fail stores result with status failed
// (terminal); Release returns the record to pending with no owner so the next
// Begin runs it again (a retryable failure). Renew extends the lease to until
// and the record's ExpiresAt to at least until: a record never expires under
// a live lease.
//
// PurgeOperations deletes records expired at now and returns how many.
type OperationStore interface {
	Begin(ctx context.Context, p BeginParams) (*Operation, BeginOutcome, error)
	GetOperation(ctx context.Context, tenant, id string) (*Operation, error)
	GetOperationByKey(ctx context.Context, tenant, key string) (*Operation, error)
	Renew(ctx context.Context, tenant, id string, token int64, until time.Time) error
	Complete(ctx context.Context, tenant, id string, token int64, result *Response, now time.Time) error
	Fail(ctx context.Context, tenant, id string, token int64, result *Response, now time.Time) error
	Release(ctx context.Context, tenant, id string, token int64, now time.Time) error
	PurgeOperations(ctx context.Context, now time.Time) (int, error)
}
