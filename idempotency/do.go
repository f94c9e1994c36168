package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// Disposition is what a finished attempt means for its record.
type Disposition int

const (
	// DispositionComplete: a success; store it (Claim.Complete) and replay it.
	DispositionComplete Disposition = iota + 1
	// DispositionFail: a definitive failure; store it (Claim.Fail) and
	// replay it — retrying would fail the same way.
	DispositionFail
	// DispositionRelease: a failure that may not recur; release the record
	// (Claim.Release) so the next retry runs the operation again.
	DispositionRelease
)

// String returns "complete", "fail" or "release".
func (d Disposition) String() string {
	switch d {
	case DispositionComplete:
		return "complete"
	case DispositionFail:
		return "fail"
	case DispositionRelease:
		return "release"
	}
	return fmt.Sprintf("Disposition(%d)", int(d))
}

// Classify says what a finished attempt means for the record:
//
//   - err != nil (timeout, connection error, a stream broken before its
//     end — the caller reports those as errors, with or without a partial
//     resp) or no response → DispositionRelease;
//   - a 2xx response → DispositionComplete;
//   - 408 (request timeout), 429 (rate limited), and 401/403 (the
//     gateway's provider credentials were refused: a configuration fault,
//     not an answer about this request) → DispositionRelease;
//   - any other 4xx (the provider refused this request as it is) →
//     DispositionFail: stored and replayed;
//   - 5xx, and anything else that is not a definitive answer (1xx, 3xx) →
//     DispositionRelease.
func Classify(resp *groundhog.Response, err error) Disposition {
	if err != nil || resp == nil {
		return DispositionRelease
	}
	switch s := resp.Status; {
	case s >= 200 && s < 300:
		return DispositionComplete
	case s == 408 || s == 429 || s == 401 || s == 403:
		return DispositionRelease
	case s >= 400 && s < 500:
		return DispositionFail
	}
	return DispositionRelease
}

// Do runs fn at most once per (tenant, key) — more precisely, its result
// is committed at most once; see below — and returns the operation's
// result:
//
//   - a new (or released, or taken-over) operation: fn runs under a lease
//     renewed in the background, with the claimed record (pass
//     DownstreamKey(op) to a downstream system that has its own idempotency
//     contract). Its outcome is committed per Classify: a success or a
//     definitive failure is stored and returned (replayed=false); a
//     retryable failure releases the record and returns fn's response and
//     error, so a later Do runs fn again.
//   - a finished operation: its stored result, replayed=true; fn does not
//     run.
//   - an operation running elsewhere under a live lease: ECONFLICT.
//   - the key used before with another hash: EMISMATCH.
//   - store unavailable: EUNAVAILABLE, and fn does not run.
//
// fn's context is cancelled when ctx ends or the claim is lost (another
// worker took over after the lease expired: this attempt's result will not
// be stored). If the commit finds the claim lost, Do returns the winner's
// stored result (replayed=true), or ECONFLICT while the winner still runs.
// If fn panics the record is released and the panic continues.
//
// A worker that dies after fn's side effect and before the commit leaves
// the record running; after the lease expires the next Do runs fn again
// (attempt 2). Only a downstream key (DownstreamKey) makes that second
// side effect a no-op: this is the limit of any lease-based protocol.
func (s *Service) Do(ctx context.Context, tenant, key, hash string, fn func(ctx context.Context, op *groundhog.Operation) (*groundhog.Response, error)) (*groundhog.Response, bool, error) {
	claim, op, outcome, err := s.Begin(ctx, tenant, key, hash)
	if err != nil {
		return nil, false, err
	}
	switch outcome {
	case groundhog.BeginDone:
		return op.Result, true, nil
	case groundhog.BeginInProgress:
		return nil, false, s.inProgress(op)
	case groundhog.BeginMismatch:
		return nil, false, mismatch()
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-claim.Lost():
			cancel()
		case <-runCtx.Done():
		}
	}()
	resp, ferr := runGuarded(runCtx, claim, fn)

	switch Classify(resp, ferr) {
	case DispositionComplete:
		err = claim.Complete(ctx, resp)
	case DispositionFail:
		err = claim.Fail(ctx, resp)
	default:
		err = claim.Release(ctx)
		if err == nil {
			return resp, false, ferr
		}
	}
	if err == nil {
		return resp, false, nil
	}
	if groundhog.ErrorCode(err) != groundhog.ESTALE {
		return nil, false, err
	}
	// Another worker took over while fn ran: its result is the one.
	winner, gerr := s.Get(ctx, tenant, claim.op.ID)
	switch {
	case gerr != nil && groundhog.IsNotFound(gerr):
		return nil, false, err
	case gerr != nil:
		return nil, false, gerr
	case winner.Status.Terminal():
		return winner.Result, true, nil
	}
	return nil, false, s.inProgress(winner)
}

// runGuarded runs fn and, if it panics, releases the claim before the
// panic continues, so the record does not stay running until its lease
// runs out.
func runGuarded(ctx context.Context, claim *Claim, fn func(context.Context, *groundhog.Operation) (*groundhog.Response, error)) (*groundhog.Response, error) {
	defer func() {
		if p := recover(); p != nil {
			_ = claim.Release(ctx)
			panic(p)
		}
	}()
	return fn(ctx, claim.Op())
}

// inProgress is the ECONFLICT error for a record running under a live lease.
func (s *Service) inProgress(op *groundhog.Operation) error {
	return groundhog.Errorf(groundhog.ECONFLICT, "operation with this idempotency key is in progress; retry in %d s", s.RetryAfter(op))
}

func mismatch() error {
	return groundhog.Errorf(groundhog.EMISMATCH, "idempotency key was already used with a different request")
}

// DownstreamKey returns a stable idempotency key for a downstream system
// that has its own idempotency contract (a mail or payment API): "gh_"
// followed by 40 hex digits of SHA-256 over the tenant, the operation's key
// and its record ID. It is the same for every attempt of the operation — a
// takeover after a crash keeps the record ID, so the downstream system sees
// the retry as a duplicate — and differs across tenants and across records
// (a key reused after its record's retention ended gets a new record and a
// new downstream key). The fencing token is deliberately not part of it.
func DownstreamKey(op *groundhog.Operation) string {
	h := sha256.New()
	for _, part := range []string{"groundhog downstream key v1", op.Tenant, op.Key, op.ID} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	sum := h.Sum(nil)
	return "gh_" + hex.EncodeToString(sum[:20])
}
