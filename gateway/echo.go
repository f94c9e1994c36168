package gateway

import (
	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
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
	vals, ok := echoValues(c)
	switch {
	case ok && resp.Streamed:
		out.Events = wire.NewEchoRewriterValues(c.shape, vals).Events(resp.Events)
	case ok:
		out.Body = wire.RewriteEchoValues(c.shape, vals, resp.Body)
	case resp.Streamed:
		out.Events = wire.NewEchoRewriter(c.shape, c.body).Events(resp.Events)
	default:
		out.Body = wire.RewriteEcho(c.shape, c.body, resp.Body)
	}
	return &out
}

// echoNames are, per shape, the echoed request fields the fingerprint's
// pass locates (fingerprint.Params.Top), in wire.EchoFields order. A shape
// without an entry has its request read again when an answer is rewritten.
var echoNames = func() map[groundhog.Shape]*fingerprint.Names {
	m := map[groundhog.Shape]*fingerprint.Names{}
	for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeEmbeddings, groundhog.ShapeMessages, groundhog.ShapeConverse, groundhog.ShapeGemini} {
		if f := wire.EchoFields(shape); len(f) > fingerprint.MaxTop {
			panic("gateway: more echoed fields than the fingerprint locates")
		} else if len(f) > 0 {
			m[shape] = fingerprint.NewNames(f...)
		}
	}
	return m
}()

// echoValues returns the values of c's request fields its answer echoes,
// where the fingerprint's pass found them: the request is not read again
// (at 200 KB reading it cost more than the rest of the hit). ok is false
// when the fingerprint was not taken of the body itself, or its body is
// gone.
func echoValues(c *call) (vals [][]byte, ok bool) {
	names := wire.EchoFields(c.shape)
	if !c.fpIsBody || c.body == nil || echoNames[c.shape] == nil {
		return nil, false
	}
	vals = make([][]byte, len(names))
	for i := range names {
		if sp := c.fp.Top[i]; sp.End > sp.Start && sp.End <= len(c.body) {
			vals[i] = c.body[sp.Start:sp.End]
		}
	}
	return vals, true
}

// echoRewriter returns the rewriter for the live events a call relays, or
// nil when the events are the call's own (it led the flight and the
// provider answered it).
func echoRewriter(c *call, leader bool) *wire.EchoRewriter {
	if leader && !c.recheckHit.Load() {
		return nil
	}
	if vals, ok := echoValues(c); ok {
		return wire.NewEchoRewriterValues(c.shape, vals)
	}
	return wire.NewEchoRewriter(c.shape, c.body)
}
