// Package idempotency runs an operation at most once per (tenant,
// Idempotency-Key) on top of a groundhog.OperationStore: it claims the
// record, renews its lease while the operation runs, commits the result
// fenced by the record's token, and replays the stored result to every
// later retry (docs/idempotency.md).
//
// The same Service backs the gateway's provider routes (Begin, Wait,
// Claim, Classify), the HTTP tool operations API (Handler) and a Go API for
// tools with side effects (Do, DownstreamKey).
//
// # Lifecycle of one attempt
//
//	claim, op, outcome, err := svc.Begin(ctx, tenant, key, hash)
//	switch outcome {
//	case groundhog.BeginClaimed:   // run it; the lease is renewed meanwhile
//	    resp, err := call(ctx)
//	    switch Classify(resp, err) {
//	    case DispositionComplete: claim.Complete(ctx, resp)  // ESTALE: replay svc.Get
//	    case DispositionFail:     claim.Fail(ctx, resp)      // terminal, replayed
//	    case DispositionRelease:  claim.Release(ctx)         // the next retry runs it
//	    }
//	case groundhog.BeginDone:       // replay op.Result
//	case groundhog.BeginInProgress: // 409 + Retry-After, or svc.Wait
//	case groundhog.BeginMismatch:   // 422
//	}
//
// The store decides every transition atomically; this package never holds
// a lock across processes. What it adds is time: lease renewal, waiting, and
// the purge of expired records.
//
// # Time
//
// Every duration is measured on Options.Clock. A Clock that also implements
// AfterClock (a test's fake clock) drives the renewal ticks, Wait's polls and
// PurgeLoop too, so tests advance time instead of sleeping.
package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/maypok86/otter/v2"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Defaults of Options.
const (
	DefaultLease     = 30 * time.Second
	DefaultRetention = 24 * time.Hour
)

// writeTimeout bounds a fenced store write made on behalf of a caller whose
// context may already be cancelled (a client that hung up): the write still
// happens, so the record does not stay running until its lease runs out.
const writeTimeout = 5 * time.Second

// Poll backoff of Wait when no completion signal arrives: the first re-read
// after pollMin, doubling up to pollMax.
const (
	pollMin = 50 * time.Millisecond
	pollMax = time.Second
)

// AfterClock is a groundhog.Clock that can also wait: After returns a
// channel that receives the clock's time once it has advanced by at least
// d (at once when d <= 0). When Options.Clock implements it, the Service
// uses it for every timer (lease renewal, Wait's polling, PurgeLoop), so a
// fake clock controls them all; otherwise the wall clock's timers are used.
type AfterClock interface {
	groundhog.Clock
	After(d time.Duration) <-chan time.Time
}

// Notifier wakes waiters in other processes when an operation finishes
// (completes, fails or is released). In-process waiters are woken without
// it. A Redis pub/sub implementation is the intended one for several
// replicas.
//
// Notify announces that (tenant, key) changed; it must not block for long
// and reports its own errors (a lost notification only delays a waiter
// until its next poll). Subscribe returns a channel that receives a value
// (or is closed) after a later Notify of (tenant, key) anywhere; the
// subscription ends when ctx ends. A notification is a wake-up, not a
// message: dropping one when the channel is full is fine.
type Notifier interface {
	Notify(tenant, key string)
	Subscribe(ctx context.Context, tenant, key string) <-chan struct{}
}

// Options configure a Service. Only Store is required.
type Options struct {
	Store     groundhog.OperationStore
	Clock     groundhog.Clock // default groundhog.SystemClock
	Lease     time.Duration   // lease length of a claim; default DefaultLease
	Retention time.Duration   // lifetime of a record from its creation; default DefaultRetention
	// Owner names this process in lease_owner (each claim appends its own
	// random suffix). Default "hostname:pid:random".
	Owner  string
	Logger *slog.Logger // default: discard
	// Notifier wakes waiters across processes; nil = in-process only (plus
	// the slow poll of Wait).
	Notifier Notifier
}

// Service runs operations at most once per (tenant, key). It is safe for
// concurrent use; one Service per process is the intended use (in-process
// waiters are woken only by completions made through the same Service).
type Service struct {
	store     groundhog.OperationStore
	clock     groundhog.Clock
	lease     time.Duration
	retention time.Duration
	owner     string
	log       *slog.Logger
	notifier  Notifier

	mu      sync.Mutex
	waiters map[waitKey]*waitEntry

	// done keeps terminal records in memory so replays skip the store.
	// A terminal record never changes before its retention ends (and
	// lookups check ExpiresAt), so this cannot serve a stale answer, also
	// across replicas.
	done *otter.Cache[waitKey, *groundhog.Operation]

	renew *renewer // renews the leases of held claims (renewer.go)
}

// doneCacheBytes bounds the in-memory terminal records (by result size).
const doneCacheBytes = 64 << 20

// waitKey names an operation in the in-process wake-up map.
type waitKey struct{ tenant, key string }

// waitEntry is the wake-up channel of one operation: closed (and removed
// from the map) by the next completion, failure or release of it in this
// process. refs counts the waiters holding it, so a channel nobody waits on
// any more is dropped even if the operation finishes elsewhere.
type waitEntry struct {
	ch   chan struct{}
	refs int
}

// New returns a Service over o.Store with the defaults of Options filled in.
// It panics if o.Store is nil (a wiring mistake, not a runtime condition).
func New(o Options) *Service {
	if o.Store == nil {
		panic("idempotency: Options.Store is nil")
	}
	if o.Clock == nil {
		o.Clock = groundhog.SystemClock{}
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		o.Owner = host + ":" + strconv.Itoa(os.Getpid()) + ":" + randomHex(4)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	done := otter.Must(&otter.Options[waitKey, *groundhog.Operation]{
		MaximumWeight: doneCacheBytes,
		Weigher: func(k waitKey, op *groundhog.Operation) uint32 {
			n := 512 + len(k.tenant) + len(k.key)
			if r := op.Result; r != nil {
				n += len(r.Body)
				for _, ev := range r.Events {
					n += 48 + len(ev.Name) + len(ev.Data)
				}
			}
			return uint32(min(n, 1<<31))
		},
	})
	s := &Service{
		done:      done,
		store:     o.Store,
		clock:     o.Clock,
		lease:     o.Lease,
		retention: o.Retention,
		owner:     o.Owner,
		log:       o.Logger,
		notifier:  o.Notifier,
		waiters:   map[waitKey]*waitEntry{},
	}
	s.renew = newRenewer(s)
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// Lease returns the lease length of a claim.
func (s *Service) Lease() time.Duration { return s.lease }

// after returns a channel that receives after d on the service's clock.
func (s *Service) after(d time.Duration) <-chan time.Time {
	if c, ok := s.clock.(AfterClock); ok {
		return c.After(d)
	}
	return time.After(d)
}

// ValidateKey checks an Idempotency-Key: 1–255 visible ASCII characters
// (0x21–0x7E). Anything else is an error with code EINVALID.
func ValidateKey(key string) error {
	if len(key) == 0 || len(key) > 255 {
		return groundhog.Errorf(groundhog.EINVALID, "idempotency key must be 1 to 255 visible ASCII characters (got %d bytes)", len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return groundhog.Errorf(groundhog.EINVALID, "idempotency key must be 1 to 255 visible ASCII characters (byte %d is 0x%02x)", i, c)
		}
	}
	return nil
}

// unavailable wraps a store error for the caller: the gateway answers 503
// and never runs the operation without its record.
func unavailable(what string, err error) error {
	return groundhog.WrapError(groundhog.EUNAVAILABLE, "operation store unavailable", fmt.Errorf("idempotency: %s: %w", what, err))
}

// begin asks the store to claim (tenant, key) under a fresh owner name and
// returns the store's answer. It validates the key and hash.
func (s *Service) begin(ctx context.Context, tenant, key, hash string) (*groundhog.Operation, groundhog.BeginOutcome, error) {
	if err := ValidateKey(key); err != nil {
		return nil, "", err
	}
	if hash == "" {
		return nil, "", groundhog.Errorf(groundhog.EINVALID, "request hash is empty")
	}
	now := s.clock.Now()
	if op, ok := s.done.GetIfPresent(waitKey{tenant, key}); ok && now.Before(op.ExpiresAt) {
		if op.RequestHash != hash {
			return op, groundhog.BeginMismatch, nil
		}
		return op, groundhog.BeginDone, nil
	}
	op, outcome, err := s.store.Begin(ctx, groundhog.BeginParams{
		Tenant:      tenant,
		Key:         key,
		RequestHash: hash,
		Owner:       s.owner + "/" + randomHex(6),
		Lease:       s.lease,
		Retention:   s.retention,
		Now:         now,
	})
	if err != nil {
		return nil, "", unavailable("begin", err)
	}
	if outcome == groundhog.BeginDone && !op.ExpiresAt.IsZero() {
		s.done.Set(waitKey{tenant, key}, op)
	}
	return op, outcome, nil
}

// Begin claims (tenant, key) for one execution of the request whose hash
// is hash. It returns exactly one of:
//
//   - outcome BeginClaimed, claim != nil (op is claim.Op()): the caller must
//     run the operation and then call claim.Complete, claim.Fail or
//     claim.Release. While the claim is held the Service renews the lease
//     every Lease/3, fenced by the token; if a renewal reports that the
//     token is no longer current the claim is lost: claim.Lost() is closed
//     and a later Complete returns ESTALE (the caller then replays the
//     winner: Service.Get).
//   - outcome BeginDone: op is terminal; replay op.Result with
//     Idempotent-Replayed: true.
//   - outcome BeginInProgress: op is running under someone else's live
//     lease; answer 409 with Retry-After (RetryAfter) or Wait.
//   - outcome BeginMismatch: op has another request hash; answer 422.
//     Nothing was changed.
//
// An invalid key (see ValidateKey) or an empty hash is EINVALID. Any store
// error is EUNAVAILABLE: never execute without a record.
func (s *Service) Begin(ctx context.Context, tenant, key, hash string) (claim *Claim, op *groundhog.Operation, outcome groundhog.BeginOutcome, err error) {
	op, outcome, err = s.begin(ctx, tenant, key, hash)
	if err != nil {
		return nil, nil, "", err
	}
	if outcome != groundhog.BeginClaimed {
		return nil, op, outcome, nil
	}
	c := newClaim(s, op)
	return c, c.Op(), outcome, nil
}

// Get returns the record id of tenant: ENOTFOUND if there is none (or it
// belongs to another tenant), EUNAVAILABLE if the store fails.
func (s *Service) Get(ctx context.Context, tenant, id string) (*groundhog.Operation, error) {
	op, err := s.store.GetOperation(ctx, tenant, id)
	if err != nil {
		if groundhog.IsNotFound(err) {
			return nil, err
		}
		return nil, unavailable("get", err)
	}
	return op, nil
}

// GetByKey returns the record (tenant, key), like Get.
func (s *Service) GetByKey(ctx context.Context, tenant, key string) (*groundhog.Operation, error) {
	op, err := s.store.GetOperationByKey(ctx, tenant, key)
	if err != nil {
		if groundhog.IsNotFound(err) {
			return nil, err
		}
		return nil, unavailable("get", err)
	}
	return op, nil
}

// RetryAfter returns the Retry-After seconds for a 409 on op: the seconds
// until its lease expires, rounded up, at least 1.
func (s *Service) RetryAfter(op *groundhog.Operation) int {
	d := op.LeaseExpiresAt.Sub(s.clock.Now())
	secs := int((d + time.Second - 1) / time.Second)
	return max(secs, 1)
}

// settled reports whether a waiter on op can stop waiting at now: the
// record is terminal, not running (pending: the next Begin runs it), its
// lease has expired (the next Begin takes over) or its retention is over
// (the next Begin starts anew).
func settled(op *groundhog.Operation, now time.Time) bool {
	return op.Status != groundhog.StatusRunning ||
		!op.LeaseExpiresAt.After(now) ||
		(!op.ExpiresAt.IsZero() && !op.ExpiresAt.After(now))
}

// Wait blocks until the operation (tenant, key) no longer needs waiting
// for, and returns its record:
//
//   - it is terminal (replay it), pending after a release, or its retention
//     is over (Begin again: it runs);
//   - its lease has expired (Begin again: the caller takes over);
//   - maxWait has passed on the service clock (the record is returned as it
//     is, still running, with a nil error);
//   - ctx ends (the last record read is returned with ctx.Err()).
//
// With no record at all it returns nil, nil: Begin again. Store errors are
// EUNAVAILABLE.
//
// Wait does not poll the store hot. It re-reads the record only when woken:
// by a completion, failure or release of the operation made through this
// Service (in-process channels), by the Notifier if one is configured
// (other replicas), at the lease's expiry, or by a fallback poll whose
// interval starts at 50ms and doubles up to 1s — the poll is what notices a
// completion in another process when no Notifier is set.
func (s *Service) Wait(ctx context.Context, tenant, key string, maxWait time.Duration) (*groundhog.Operation, error) {
	var remote <-chan struct{}
	if s.notifier != nil {
		subCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		remote = s.notifier.Subscribe(subCtx, tenant, key)
	}
	deadline := s.clock.Now().Add(maxWait)
	backoff := pollMin
	var last *groundhog.Operation
	for {
		// Subscribe before reading, so a completion between the read and
		// the select cannot be missed.
		local, unsubscribe := s.subscribe(tenant, key)
		op, err := s.store.GetOperationByKey(ctx, tenant, key)
		if err != nil {
			unsubscribe()
			if groundhog.IsNotFound(err) {
				return nil, nil
			}
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			return nil, unavailable("wait", err)
		}
		last = op
		now := s.clock.Now()
		if settled(op, now) || !now.Before(deadline) {
			unsubscribe()
			return op, nil
		}
		sleep := min(backoff, op.LeaseExpiresAt.Sub(now), deadline.Sub(now))
		backoff = min(2*backoff, pollMax)
		select {
		case <-local:
		case _, ok := <-remote:
			if !ok {
				remote = nil // a closed subscription stops waking us
			}
		case <-s.after(sleep):
		case <-ctx.Done():
			unsubscribe()
			return last, ctx.Err()
		}
		unsubscribe()
	}
}

// subscribe returns the in-process wake-up channel of (tenant, key) and a
// function that drops this waiter's reference to it.
func (s *Service) subscribe(tenant, key string) (<-chan struct{}, func()) {
	k := waitKey{tenant, key}
	s.mu.Lock()
	e := s.waiters[k]
	if e == nil {
		e = &waitEntry{ch: make(chan struct{})}
		s.waiters[k] = e
	}
	e.refs++
	s.mu.Unlock()
	return e.ch, func() {
		s.mu.Lock()
		e.refs--
		if e.refs == 0 && s.waiters[k] == e {
			delete(s.waiters, k)
		}
		s.mu.Unlock()
	}
}

// notify wakes every waiter of (tenant, key), here and, through the
// Notifier, in other processes.
func (s *Service) notify(tenant, key string) {
	k := waitKey{tenant, key}
	s.mu.Lock()
	if e := s.waiters[k]; e != nil {
		close(e.ch)
		delete(s.waiters, k)
	}
	s.mu.Unlock()
	if s.notifier != nil {
		s.notifier.Notify(tenant, key)
	}
}

// PurgeLoop deletes the records whose retention is over, at once and then
// every interval (default one minute when every <= 0), until ctx ends.
// Errors are logged; the next round tries again. Expired records already
// count as absent for Begin, so purging only reclaims space.
func (s *Service) PurgeLoop(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Minute
	}
	for {
		n, err := s.store.PurgeOperations(ctx, s.clock.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("idempotency: purge failed", "err", err)
		case n > 0:
			s.log.Debug("idempotency: purged expired operations", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.after(every):
		}
	}
}

// writeCtx returns the context of a fenced write made for a caller: not
// cancelled with ctx (a client that hung up must not leave the record
// running) but bounded by writeTimeout.
func writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// fencedErr maps the error of a fenced store write: ESTALE stays ESTALE,
// ENOTFOUND (the record was purged or replaced after its retention) becomes
// ESTALE too — for the writer both mean "your claim is gone" — EINVALID
// (a caller's mistake) stays, and anything else is EUNAVAILABLE.
func fencedErr(what string, err error) error {
	switch groundhog.ErrorCode(err) {
	case groundhog.ESTALE, groundhog.EINVALID:
		return err
	case groundhog.ENOTFOUND:
		return groundhog.WrapError(groundhog.ESTALE, what+" operation: the record is gone", err)
	}
	return unavailable(what, err)
}
