package gateway

import (
	"context"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
)

// Flights coordinates identical cacheable calls across replicas; package
// distcoalesce implements it. The gateway calls Lead from the in-process
// leader of a cache-using call after its second cache look-up missed, just
// before paying for the upstream call.
//
// Lead returns a non-nil entry when another replica's flight stored the
// result meanwhile (the call is then served from it), or nil and done: the
// call runs, writes the cache, and then calls done exactly once, which
// wakes the other replicas' waiters. followed says the entry came from a
// flight still running on another replica when this call found it: the
// call is then accounted as coalesced (outcome coalesced, Groundhog-Cache:
// coalesced, InFlight set, saved = the flight's cost), like a follower in
// one process; otherwise (a flight that had just ended) as a cache hit.
type Flights interface {
	Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry) (e *groundhog.CacheEntry, followed bool, done func())
}

// leadAcross runs the cross-replica stage of c's flight. It returns the
// response shared by another replica's flight (already published to pub;
// c counts as coalesced when it followed that flight, else as a cache
// hit), or nil and the function to call once the call has stored its
// result.
func (s *Server) leadAcross(ctx context.Context, c *call, pub *coalesce.Publisher) (*groundhog.Response, func()) {
	if s.opts.Flights == nil || c.policy != policyUse || c.noStore {
		return nil, func() {}
	}
	e, followed, done := s.opts.Flights.Lead(ctx, c.tenant, c.fp.Hash, func(ctx context.Context) *groundhog.CacheEntry {
		e, err := s.opts.Cache.Get(ctx, c.tenant, c.fp.Hash)
		if err != nil {
			return nil
		}
		return e
	})
	if e == nil {
		return nil, done
	}
	// Not this call's own upstream answer either way (no usage, no upstream
	// headers, echoed fields rewritten): recheckHit says so to the pipeline.
	c.recheckHit.Store(true)
	c.peerFollowed.Store(followed)
	resp := e.Response
	pub.Head(resp.Status, resp.ContentType, resp.Streamed)
	for _, ev := range resp.Events {
		pub.Event(ev)
	}
	return &resp, func() {}
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
