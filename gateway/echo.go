package gateway

import (
	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
)

// sharedAnswer reports whether a call in this cache state answers with a
// response produced for another call (a stored entry, another client's
// flight, an operation record), whose echoed request fields are that
// call's.
func sharedAnswer(state string) bool {
	return state == "hit" || state == "coalesced" || state == "replayed"
}

// echoFor returns resp with the request fields the provider echoes (the
// Responses API's user, metadata, store, …; see wire.RewriteEcho) set from
// c's own request, so that a hit, a coalesced answer or a replay never
// shows another caller's values. resp itself is shared and never modified.
func echoFor(c *call, resp *groundhog.Response) *groundhog.Response {
	if !wire.HasEchoedFields(c.shape) || !resp.OK() {
		return resp
	}
	out := *resp
	if resp.Streamed {
		out.Events = wire.NewEchoRewriter(c.shape, c.body).Events(resp.Events)
	} else {
		out.Body = wire.RewriteEcho(c.shape, c.body, resp.Body)
	}
	return &out
}

// echoRewriter returns the rewriter for the live events a call relays, or
// nil when the events are the call's own (it led the flight and the
// provider answered it).
func echoRewriter(c *call, leader bool) *wire.EchoRewriter {
	if leader && !c.recheckHit.Load() {
		return nil
	}
	return wire.NewEchoRewriter(c.shape, c.body)
}
