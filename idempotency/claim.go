package idempotency

import (
	"context"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Claim is the right to run one operation, held under a lease with a
// fencing token. It is created by Service.Begin, and the Service's renewer
// renews its lease every Lease/3 until the claim is finished (Complete,
// Fail, Release) or abandoned (Abandon), or a renewal finds the token
// superseded (Lost). Every write a Claim makes is fenced: once another
// worker has taken the record over, nothing this Claim does changes it.
//
// A Claim is safe for concurrent use.
type Claim struct {
	s  *Service
	op groundhog.Operation // as claimed; never modified

	lostMu sync.Mutex
	lost   chan struct{} // made on first use (Lost or markLost)
	isLost bool

	// Guarded by s.renew.mu (renewer.go).
	due      time.Time     // when the next renewal is due
	idx      int           // position in the renewer's heap; -1 when not in it
	stopped  bool          // finished or abandoned: never renewed again
	inflight chan struct{} // non-nil while a renewal write runs; closed after it
}

func newClaim(s *Service, op *groundhog.Operation) *Claim {
	c := &Claim{s: s, op: *op, idx: -1}
	s.renew.add(c)
	return c
}

// Op returns a copy of the record as it was claimed: ID, Tenant, Key,
// FencingToken, Attempts, LeaseExpiresAt of the claim (renewals are not
// reflected).
func (c *Claim) Op() *groundhog.Operation {
	op := c.op
	return &op
}

// Attempt returns the attempt number of this execution (op.Attempts: 1 for
// the first, 2 after one takeover or release, …).
func (c *Claim) Attempt() int { return c.op.Attempts }

// Lost returns a channel closed when the claim is known to be lost: a
// renewal or a finishing write found that another worker holds the record
// (or the record is gone). The operation should stop; its result will not
// be stored.
func (c *Claim) Lost() <-chan struct{} {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if c.lost == nil {
		c.lost = make(chan struct{})
		if c.isLost {
			close(c.lost)
		}
	}
	return c.lost
}

func (c *Claim) markLost() {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if c.isLost {
		return
	}
	c.isLost = true
	if c.lost != nil {
		close(c.lost)
	}
}

// Abandon stops renewing the lease and leaves the record as it is, as a
// crashed worker would: after the lease expires the next Begin takes over.
// Later Complete, Fail or Release calls are still attempted (fenced). It
// is meant for simulations and tests, and for a worker that decides to
// give up without a verdict.
func (c *Claim) Abandon() { c.stopRenewing() }

// stopRenewing ends the renewals and waits for one in flight, so that no
// renewal write races with the finishing write that follows.
func (c *Claim) stopRenewing() { c.s.renew.stop(c) }

// Renew extends the lease to now + Lease at once (the renewer does this
// every Lease/3 already). ESTALE means the claim is lost.
func (c *Claim) Renew(ctx context.Context) error {
	return c.renew(ctx)
}

func (c *Claim) renew(ctx context.Context) error {
	wctx, cancel := writeCtx(ctx)
	defer cancel()
	err := c.s.store.Renew(wctx, c.op.Tenant, c.op.ID, c.op.FencingToken, c.s.clock.Now().Add(c.s.lease))
	if err != nil {
		err = fencedErr("renew", err)
		if groundhog.ErrorCode(err) == groundhog.ESTALE {
			c.markLost()
		}
	}
	return err
}

// Complete stores result as the operation's success and stops the renewal.
// It is fenced: if another worker took the record over, it changes nothing
// and returns an error with code ESTALE (then replay the winner with
// Service.Get). The write happens even if ctx is already cancelled (bounded
// by a short timeout), so a client that hung up does not leave the record
// running. Store failures are EUNAVAILABLE; the record then stays running
// until its lease expires and a retry takes over. A nil result is EINVALID
// and changes nothing (the claim stays held).
func (c *Claim) Complete(ctx context.Context, result *groundhog.Response) error {
	if result == nil {
		return groundhog.Errorf(groundhog.EINVALID, "complete operation: nil result")
	}
	return c.finish(ctx, "complete", func(ctx context.Context, now time.Time) error {
		return c.s.store.Complete(ctx, c.op.Tenant, c.op.ID, c.op.FencingToken, result, now)
	})
}

// Fail stores result as the operation's terminal failure (replayed to every
// later retry, like a success) and stops the renewal. Fenced like Complete.
// A nil result is EINVALID and changes nothing (the claim stays held).
func (c *Claim) Fail(ctx context.Context, result *groundhog.Response) error {
	if result == nil {
		return groundhog.Errorf(groundhog.EINVALID, "fail operation: nil result")
	}
	return c.finish(ctx, "fail", func(ctx context.Context, now time.Time) error {
		return c.s.store.Fail(ctx, c.op.Tenant, c.op.ID, c.op.FencingToken, result, now)
	})
}

// Release gives the record back (status pending, no owner) after a
// retryable failure, so the next Begin runs the operation again, and stops
// the renewal. Fenced like Complete.
func (c *Claim) Release(ctx context.Context) error {
	return c.finish(ctx, "release", func(ctx context.Context, now time.Time) error {
		return c.s.store.Release(ctx, c.op.Tenant, c.op.ID, c.op.FencingToken, now)
	})
}

func (c *Claim) finish(ctx context.Context, what string, write func(context.Context, time.Time) error) error {
	c.stopRenewing()
	wctx, cancel := writeCtx(ctx)
	defer cancel()
	err := write(wctx, c.s.clock.Now())
	if err == nil {
		c.s.notify(c.op.Tenant, c.op.Key)
		return nil
	}
	err = fencedErr(what, err)
	if groundhog.ErrorCode(err) == groundhog.ESTALE {
		c.markLost()
	}
	return err
}
