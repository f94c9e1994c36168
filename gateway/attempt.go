package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// An upstream attempt that fails may still have been billed by the
// provider: it answered and the connection broke before the gateway had the
// whole response (a drop after success, a reset mid-stream, a client that
// left and cancelled the call). Such an attempt is never booked as a known
// $0. The flight records in call.spent what the gateway knows:
//   - 0 when the provider cannot have billed: nothing was sent (a dial
//     error), or it answered with an error status (providers do not bill
//     error responses);
//   - the priced usage, when the provider's usage report arrived before the
//     failure (the usage chunk or event of a stream that broke off later);
//   - CostUnknown otherwise: the provider may have billed, the gateway cannot
//     say how much (counted in the report's unknown_cost_calls).
//
// c.spent is written by the flight's goroutine before it returns and read by
// the leader's handler only after the flight's outcome is delivered (the
// flight's mutex orders the two).

// spentOnTransportError is what an attempt whose request failed in transit
// cost: nothing if the connection was never made, else unknown.
func spentOnTransportError(err error) groundhog.Money {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return 0
	}
	return groundhog.CostUnknown
}

// spentOnBrokenStream is what a stream that ended before completion cost:
// its usage priced when the provider's usage report was among the events
// received, else unknown.
func (s *Server) spentOnBrokenStream(c *call, events []groundhog.Event) groundhog.Money {
	if c.shape == groundhog.ShapeMessages && !hasMessageDelta(events) {
		// message_start carries only the input and a placeholder output
		// count; the real output count comes with message_delta.
		return groundhog.CostUnknown
	}
	model, u, parts, err := wire.UsagePartsFromEvents(c.shape, events)
	if err != nil || u.OutputTokens == 0 {
		return groundhog.CostUnknown // no final usage report: the bill is not known
	}
	return s.price(c, model, u, parts)
}

// spentOnFailedStream is what a stream the provider ended with its own
// error cost: its usage priced when the provider reported one. A Responses
// stream whose final response (response.failed) reports no usage consumed
// nothing; an Anthropic stream cut by an error event without a final
// message_delta is unknown (message_start's output count is a placeholder).
func (s *Server) spentOnFailedStream(c *call, resp *groundhog.Response) groundhog.Money {
	if resp.Usage == (groundhog.Usage{}) && c.shape == groundhog.ShapeResponses {
		return 0
	}
	if resp.Cost.Known() && (c.shape != groundhog.ShapeMessages || hasMessageDelta(resp.Events)) {
		return resp.Cost
	}
	return s.spentOnBrokenStream(c, resp.Events)
}

// answerFailed reports whether resp is a failure the provider answered: an
// error status, or a stream the provider ended with its own error (relayed
// as it was, with the success status the client already received).
func answerFailed(shape groundhog.Shape, resp *groundhog.Response) bool {
	return !resp.OK() || resp.Streamed && wire.StreamEndedWithError(shape, resp.Events)
}

// price returns the cost of usage u of the response's model, falling back
// to the request's model when the response's is not in the price table (a
// provider may answer with a name the table does not know, such as a
// dated snapshot or an alias). A usage that ran in several iterations is
// the sum of its parts, each priced at its own model's rates.
func (s *Server) price(c *call, model string, u groundhog.Usage, parts []groundhog.UsagePart) groundhog.Money {
	if u == (groundhog.Usage{}) {
		return groundhog.CostUnknown // no usage reported: unknown, never a silent 0
	}
	at := func(m string) []groundhog.UsagePart {
		if c.shape == groundhog.ShapeGemini {
			return gemini.UsageParts(m, u) // the model's entry, or its long-context one (">200k")
		}
		return parts
	}
	cost := s.cfg.PriceTable.CostParts(firstNonEmpty(model, c.fp.Model), u, at(firstNonEmpty(model, c.fp.Model)))
	if !cost.Known() && model != c.fp.Model {
		cost = s.cfg.PriceTable.CostParts(c.fp.Model, u, at(c.fp.Model))
	}
	return cost
}

// failedRow is the ledger row of a call whose flight failed. The leader's
// row carries what the failed attempt cost (c.spent); a follower paid
// nothing.
func (s *Server) failedRow(c *call, leader bool, status int) groundhog.LedgerEntry {
	row := s.row(c, groundhog.OutcomeError, status)
	if leader {
		row.Cost, row.FullCost = c.spent, c.spent
	}
	return row
}

func hasMessageDelta(events []groundhog.Event) bool {
	for _, ev := range events {
		if ev.Name == "message_delta" || bytes.Contains(ev.Data, []byte(`"message_delta"`)) {
			return true
		}
	}
	return false
}

// savedHeader is the Groundhog-Saved-USD value of a call with the given
// outcome that answered with resp: a call that avoided the provider (a hit,
// a coalesced answer, a replay) saved resp's cost, which is "unknown" when
// the model is not priced — never 0.000000.
func savedHeader(outcome groundhog.Outcome, saved groundhog.Money, resp *groundhog.Response) string {
	switch outcome {
	case groundhog.OutcomeCacheHit, groundhog.OutcomeCoalesced, groundhog.OutcomeReplayed:
		if resp == nil || !resp.Cost.Known() {
			return "unknown"
		}
	}
	return costString(saved)
}

// recordLostAttempt books the attempt that a takeover ends: op was running
// under an expired lease, so the worker of attempt op.Attempts-1 vanished
// (its process killed, its host partitioned) after claiming the record. It
// may have reached the provider and been billed, and its own ledger row is
// written only once a response is — perhaps never. The worker that takes
// over writes that row before running its own attempt: outcome upstream,
// that attempt's number, status 0 (no answer was seen), cost unknown (never
// a guessed $0), so the report counts it in unknown_cost_calls and the retry
// as a repeat of the same request.
//
// The row has the key (time, ID) the vanished worker's own row has (see
// attemptKey), so a ledger holds at most one of the two: when that worker
// did record its row (it died after the provider answered, and its journal
// was replayed), the store keeps that priced row and skips this one; when
// this one is stored first (the dead worker's journal is replayed later),
// the attempt stays unknown.
func (s *Server) recordLostAttempt(c *call, op *groundhog.Operation) {
	row := s.row(c, groundhog.OutcomeUpstream, 0)
	row.Attempt = op.Attempts - 1
	row.Time, row.ID = attemptKey(op.ID, row.Attempt, op.LostAttemptStart)
	row.Cost, row.FullCost = groundhog.CostUnknown, groundhog.CostUnknown
	// A failure is logged by record; the new attempt runs either way (its
	// own row is the one its response depends on).
	_ = s.record(c, row)
}

// attemptKey is the ledger key (time, ID) of the row of one attempt under
// an operation record: the attempt's claim time and an ID made of it and a
// digest of (record ID, attempt number) — the form of groundhog.NewTimeID,
// but reproducible by whoever knows the record, so the attempt's worker and
// a worker taking over from it name the same row.
func attemptKey(opID string, attempt int, claimed time.Time) (time.Time, string) {
	sum := sha256.Sum256([]byte(opID + "/" + strconv.Itoa(attempt)))
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(claimed.UnixNano()))
	copy(b[8:], sum[:8])
	return claimed.UTC(), hex.EncodeToString(b[:])
}
