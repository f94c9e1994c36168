package gateway

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// beginIdempotent runs the idempotency stage for a call that carries an
// Idempotency-Key (docs/idempotency.md, state by state): replay a terminal record,
// refuse a mismatched payload (422), answer a running one with 409 or wait
// for it (Prefer: wait), or claim the record, and report whether it did:
// the caller then runs the rest of the pipeline under the claim's lease,
// outside this frame (a call waits for its flight under the frames that
// call it: design record 0021). The claim is settled — completed, failed or
// released, fenced by its token — before the client's response completes.
func (s *Server) beginIdempotent(w http.ResponseWriter, r *http.Request, c *call) (claimed bool) {
	ctx := r.Context()
	defer func() {
		if !claimed {
			// Replayed or refused: the answer is written and nothing reads
			// the body any more (body.go), as after a hit. A claimed call's
			// body is left to its own path.
			c.releaseBody()
		}
	}()
	wait := idempotency.PreferWait(r)
	deadline := s.clock.Now().Add(wait)
	for {
		t0 := s.clock.Now()
		claim, op, outcome, err := s.opts.Idem.Begin(ctx, c.tenant, c.idemKey, c.fp.Hash)
		s.stage(c, "groundhog.idempotency", t0)
		if err != nil {
			s.reject(w, r, c, groundhog.OutcomeError, err)
			return false
		}
		switch {
		case claim != nil:
			claimed = true
			c.claim = claim
			if !op.LostAttemptStart.IsZero() {
				s.recordLostAttempt(c, op)
			}
			return true
		case outcome == groundhog.BeginMismatch:
			s.reject(w, r, c, groundhog.OutcomeRejected, groundhog.Errorf(groundhog.EMISMATCH,
				"Idempotency-Key %q was already used with a different request; use a new key for a new request", c.idemKey))
			return false
		case outcome == groundhog.BeginDone:
			s.replay(w, r, c, op)
			return false
		}
		// In progress under a live lease.
		left := deadline.Sub(s.clock.Now())
		if wait <= 0 || left <= 0 {
			secs := s.opts.Idem.RetryAfter(op)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.reject(w, r, c, groundhog.OutcomeRejected, groundhog.Errorf(groundhog.ECONFLICT,
				"the operation with Idempotency-Key %q is still running; retry after %ds or send \"Prefer: wait=<seconds>\"", c.idemKey, secs))
			return false
		}
		op, err = s.opts.Idem.Wait(ctx, c.tenant, c.idemKey, left)
		if err != nil {
			s.reject(w, r, c, groundhog.OutcomeError, err)
			return false
		}
		if op != nil && op.Status.Terminal() && op.RequestHash == c.fp.Hash {
			s.replay(w, r, c, op)
			return false
		}
		// Released, lease expired, or still running: Begin again decides.
	}
}

// replay answers with the stored result of a terminal operation record.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, c *call, op *groundhog.Operation) {
	w.Header().Set(hdrReplayed, "true")
	resp := op.Result
	if resp == nil {
		resp = &groundhog.Response{Status: http.StatusInternalServerError, ContentType: "application/json",
			Body: []byte(`{"error":{"type":"server_error","message":"operation record has no stored result"}}`)}
	}
	row := s.row(c, groundhog.OutcomeReplayed, resp.Status)
	if resp.OK() && resp.Cost.Known() {
		row.Saved, row.FullCost = resp.Cost, resp.Cost
	}
	row.Model = firstNonEmpty(resp.Model, c.fp.Model)
	s.writeStored(w, r, c, resp, "replayed", 0, row.Saved, row)
}

// reject records a call refused before any work and answers err.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, c *call, outcome groundhog.Outcome, err error) {
	_ = s.record(c, s.row(c, outcome, statusFor(groundhog.ErrorCode(err)))) // an error response: nothing to withhold
	// Refused before the cache stage.
	s.setHeaders(w.Header(), c, "off")
	s.writeError(w, r, c.shape, err)
}

// settle commits the claimed operation record with the attempt's outcome,
// fenced by the claim's token: success completes it, a provider 4xx fails it
// terminally, anything retryable releases it for the next retry. It returns
// the winning record when this worker's claim turned out stale, so the
// caller can replay the winner instead of its own result.
func (s *Server) settle(c *call, resp *groundhog.Response, err error) *groundhog.Operation {
	if c.claim == nil {
		return nil
	}
	claim := c.claim
	c.claim = nil
	failpoint("before-commit")
	ctx := context.Background()
	var serr error
	switch idempotency.Classify(resp, err) {
	case idempotency.DispositionComplete:
		serr = claim.Complete(ctx, resp)
	case idempotency.DispositionFail:
		serr = claim.Fail(ctx, resp)
	default:
		serr = claim.Release(ctx)
	}
	if serr == nil {
		return nil
	}
	if groundhog.ErrorCode(serr) == groundhog.ESTALE {
		s.log.Warn("stale idempotency commit discarded: another attempt took over", append(logAttrs(c), "key", c.idemKey)...)
		if op, gerr := s.opts.Idem.GetByKey(ctx, c.tenant, c.idemKey); gerr == nil && op.Status.Terminal() {
			return op
		}
		return nil
	}
	s.log.Error("idempotency commit failed", append(logAttrs(c), "err", serr)...)
	return nil
}

// failpoints lists the crash points enabled by GROUNDHOG_FAILPOINT (comma
// separated), read once. They exist for the crash tests, which kill a real
// gateway process at an exact point of the pipeline.
var failpoints = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Split(os.Getenv("GROUNDHOG_FAILPOINT"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			m[f] = true
		}
	}
	return m
}()

// failpoint kills the process with SIGKILL when name is enabled: no
// deferred function runs, nothing is flushed — exactly a kill -9.
func failpoint(name string) {
	if failpoints[name] {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
