package gateway

import (
	"time"

	"github.com/groundhog-ai/groundhog/coalesce"
)

// The overhead of a call is its latency minus its upstream wait
// (groundhog.LedgerEntry.UpstreamWait): what groundhog itself spent on it.
//
// A leader's upstream wait is its flight's: from sending the request to
// the end of the response body (read whole, or relayed event by event as
// it streamed), summed over the flight's attempts; a flight that followed
// another replica's call waits from asking that replica to its answer. A
// coalesced follower's upstream wait is the part of its own life (arrival
// to its row) during which the flight it joined was waiting for its
// upstream: a follower that joins late waits only for the rest, and what
// it spends before joining and after the flight's body ended (parsing,
// the ledger row, writing its answer) is overhead. Hits and replays never
// wait: all their time is overhead.

// upstreamWaited records that c's flight waited for its upstream from
// start to now: on the call (its leader's row) and on the flight (its
// followers').
func (s *Server) upstreamWaited(c *call, pub *coalesce.Publisher, start time.Time) {
	end := s.clock.Now()
	if end.Before(start) {
		return
	}
	c.upWait.Add(int64(end.Sub(start)))
	pub.Upstream(start, end)
}

// upstreamWait returns c's upstream wait for a row recorded at now, never
// more than the row's latency.
func (c *call) upstreamWait(now time.Time, latency time.Duration) time.Duration {
	w := time.Duration(c.upWait.Load())
	if w == 0 && c.follows != nil {
		w = c.follows.UpstreamWait(c.start, now)
	}
	return min(max(w, 0), max(latency, 0))
}
