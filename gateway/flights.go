package gateway

import (
	"bytes"
	"context"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
)

// Flights coordinates identical cacheable calls across replicas; package
// distcoalesce implements it. The gateway calls Lead from the in-process
// leader of a cache-using call after its first cache look-up missed, just
// before paying for the upstream call. Lead makes the second look: a nil
// entry with a lead means lookup missed after this call held the flight's
// claim, or, where Lead does not coordinate (Redis unreachable), just
// before it returns. The gateway then does not look again itself.
//
// Lead returns a non-nil entry when another replica's flight stored the
// result meanwhile, or streamed it whole to relay (the call is then served
// from it), or nil and lead: the call runs with lead tapping its flight's
// output (a streamed answer goes live to the other replicas' waiters),
// writes the cache, and then calls lead.End exactly once with its result,
// which wakes the other replicas' waiters. While it waits for another
// replica's streaming flight, Lead publishes that flight's head and events
// to relay as they arrive; the entry it returns then starts with them. An
// error means the call relayed part of a stream that then failed: it
// cannot run upstream itself. followed says the entry came from a flight
// still running on another replica when this call found it: the call is
// then accounted as coalesced (outcome coalesced, Groundhog-Cache:
// coalesced, InFlight set, saved = the flight's cost), like a follower in
// one process; otherwise (a flight that had just ended) as a cache hit.
//
// A replica that dies while it leads a flight may have been billed for its
// attempt, and its ledger row is written only once its response is —
// perhaps never. Lead calls lost (before it returns) on the one call, of
// all replicas, that claimed the flight after such a claim and found it
// neither released nor reported: the call books that attempt
// (recordLostFlight). A lead that holds a claim is a FlightClaim, whose
// token and time key the leader's own row the same way, so the ledger holds
// at most one row for the attempt.
type Flights interface {
	Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry, relay coalesce.Tap, lost func(token string, claimed time.Time)) (e *groundhog.CacheEntry, followed bool, lead coalesce.Sink, err error)
}

// FlightClaim is the claim a lead returned by Flights.Lead holds: the token
// and time that name the flight's attempt across replicas.
type FlightClaim interface {
	Claim() (token string, claimed time.Time)
}

// StoreRider is a lead (Flights.Lead) whose end can ride with the cache
// write of its flight's result: RideStore returns the context to make that
// write under, which then also ends the flight in its round trip; End then
// ends it only if that write did not (distcoalesce).
type StoreRider interface {
	RideStore(ctx context.Context) context.Context
}

// rideStore returns the context under which the flight's result is
// written to the cache: with lead's end riding with the write when lead can
// (StoreRider), else ctx.
func rideStore(ctx context.Context, lead coalesce.Sink) context.Context {
	if e, ok := lead.(*endOnce); ok && !e.ended {
		if r, ok := e.Sink.(StoreRider); ok {
			return r.RideStore(ctx)
		}
	}
	return ctx
}

// leadAcross runs the cross-replica stage of c's flight. It returns the
// response shared by another replica's flight (published to pub; c counts
// as coalesced when it followed that flight, else as a cache hit), or nil
// and the Sink that taps pub and receives the call's result once stored.
func (s *Server) leadAcross(ctx context.Context, c *call, pub *coalesce.Publisher) (*groundhog.Response, coalesce.Sink, error) {
	if !s.leadsAcross(c) {
		return nil, noSink{}, nil
	}
	t0 := s.clock.Now()
	e, followed, lead, err := s.opts.Flights.Lead(ctx, c.tenant, c.fp.Hash, func(ctx context.Context) *groundhog.CacheEntry {
		e, err := s.opts.Cache.Get(ctx, c.tenant, c.fp.Hash)
		if err != nil {
			return nil
		}
		return e
	}, relayTap{c, pub}, func(token string, claimed time.Time) { s.recordLostFlight(c, token, claimed) })
	if err != nil {
		return nil, noSink{}, err
	}
	if e == nil {
		if fc, ok := lead.(FlightClaim); ok {
			// Set before the flight publishes anything: the handler reads
			// it once the flight's head or outcome is delivered.
			c.flightToken, c.flightClaimed = fc.Claim()
		}
		pub.SetTap(lead)
		return nil, &endOnce{Sink: lead}, nil
	}
	// Not this call's own upstream answer either way (no usage, no upstream
	// headers, echoed fields rewritten): recheckHit says so to the pipeline.
	c.recheckHit.Store(true)
	c.peerFollowed.Store(followed)
	if followed { // the wait for the other replica's upstream is an upstream wait (overhead.go)
		s.upstreamWaited(c, pub, t0)
	}
	resp := e.Response
	pub.Head(resp.Status, resp.ContentType, resp.Streamed) // ignored when relayed live
	sent := pub.Events()
	if !isPrefix(sent, resp.Events) {
		return nil, noSink{}, groundhog.Errorf(groundhog.EUPSTREAM, "the stream relayed from another replica does not match its stored result; retry the request")
	}
	for _, ev := range resp.Events[len(sent):] {
		pub.Event(ev)
	}
	return &resp, noSink{}, nil
}

// leadsAcross reports whether c's flight is coordinated across replicas
// (Flights): a cache-using call whose answer may be stored.
func (s *Server) leadsAcross(c *call) bool {
	return s.opts.Flights != nil && c.policy == policyUse && !c.noStore
}

// relayTap publishes another replica's stream to c's flight as it arrives:
// from its head on, c is that flight's follower (coalesced).
type relayTap struct {
	c   *call
	pub *coalesce.Publisher
}

func (r relayTap) Head(status int, contentType string, streamed bool) {
	r.c.recheckHit.Store(true) // before the head: deliver reads them once it has the head
	r.c.peerFollowed.Store(true)
	r.pub.Head(status, contentType, streamed)
}

func (r relayTap) Event(ev groundhog.Event) { r.pub.Event(ev) }

// endOnce passes on the first End only (callUpstream ends a successful call
// explicitly and every other one in a defer).
type endOnce struct {
	coalesce.Sink
	ended bool
}

func (e *endOnce) End(resp *groundhog.Response) {
	if !e.ended {
		e.ended = true
		e.Sink.End(resp)
	}
}

// noSink is the Sink of a call that leads no cross-replica flight.
type noSink struct{}

func (noSink) Head(int, string, bool)  {}
func (noSink) Event(groundhog.Event)   {}
func (noSink) End(*groundhog.Response) {}

// recordLostFlight books the attempt of another replica's flight that c
// found lost (Flights.Lead): that replica claimed the flight at claimed and
// vanished without releasing it. Like an idempotent attempt lost to a
// takeover (recordLostAttempt): outcome upstream, status 0 (no answer was
// seen), cost unknown (never a guessed $0), keyed as the dead leader's own
// row would be (flightAttemptKey), so the ledger holds at most one of the
// two. The row carries c's tenant, operation and request; it is not c's
// own row.
func (s *Server) recordLostFlight(c *call, token string, claimed time.Time) {
	if claimed.IsZero() {
		claimed = c.start
	}
	row := s.row(c, groundhog.OutcomeUpstream, 0)
	row.Time, row.ID = flightAttemptKey(token, claimed)
	row.InFlight = false // the leader's attempt
	row.Cost, row.FullCost = groundhog.CostUnknown, groundhog.CostUnknown
	// A failure is logged by record; c's own call goes on either way.
	_ = s.record(c, row)
}

// flightAttemptKey is the ledger key (time, ID) of the attempt of the
// cross-replica flight whose claim has token and time claimed: the
// leader's own row and the row a takeover books for it (recordLostFlight)
// have the same.
func flightAttemptKey(token string, claimed time.Time) (time.Time, string) {
	return attemptKey("flight:"+token, 1, claimed)
}

// isPrefix reports whether sent is a prefix of all.
func isPrefix(sent, all []groundhog.Event) bool {
	if len(sent) > len(all) {
		return false
	}
	for i, ev := range sent {
		if ev.Name != all[i].Name || !bytes.Equal(ev.Data, all[i].Data) {
			return false
		}
	}
	return true
}

// stateAcross is the Groundhog-Cache state of a call that led its flight in
// this replica and was served by another replica's: "coalesced" when it
// followed that flight, "hit" when the flight had already ended.
func stateAcross(c *call) string {
	if c.peerFollowed.Load() {
		return "coalesced"
	}
	return "hit"
}
