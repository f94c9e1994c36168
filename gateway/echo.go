package gateway

import (
	"weak"

	"github.com/maypok86/otter/v2"

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
func (s *Server) echoFor(c *call, resp *groundhog.Response) *groundhog.Response {
	if !wire.HasEchoedFields(c.shape) || !resp.OK() {
		return resp
	}
	vals, ok := echoValues(c)
	if ok {
		return s.echoIndexes.of(c.shape, resp).Rewrite(c.shape, vals, resp)
	}
	out := *resp
	if resp.Streamed {
		out.Events = wire.NewEchoRewriter(c.shape, c.body).Events(resp.Events)
	} else {
		out.Body = wire.RewriteEcho(c.shape, c.body, resp.Body)
	}
	return &out
}

// echoIndexes remembers where the answers shared recently hold their
// echoed fields (wire.EchoIndex), so that an answer given to many calls —
// a stored answer at each hit, a flight's answer to each follower — is
// walked once, not once per call: a coding agent's Responses answer
// echoes 20–30 KB of instructions and tools, three times in a stream.
//
// An answer is known by a weak pointer to it: the table never keeps an
// answer alive, and a weak pointer equals only one made from the same
// answer, never one made from another answer allocated later at the same
// address. Shared answers are never modified (echoFor), and an index is
// used only for an answer of its shape, kind and size (wire.EchoIndex.For).
type echoIndexes struct {
	cache *otter.Cache[weak.Pointer[groundhog.Response], *wire.EchoIndex]
}

// echoIndexBytes bounds the memory of the remembered places.
const echoIndexBytes = 4 << 20

func newEchoIndexes(maxBytes int) *echoIndexes {
	return &echoIndexes{cache: otter.Must(&otter.Options[weak.Pointer[groundhog.Response], *wire.EchoIndex]{
		MaximumWeight: uint64(maxBytes),
		Weigher: func(_ weak.Pointer[groundhog.Response], x *wire.EchoIndex) uint32 {
			return uint32(min(x.Size(), 1<<31))
		},
		// Maintenance on the goroutine that found the buffers full, as
		// fingerprint.Memo does (no goroutine per drain).
		Executor: func(fn func()) { fn() },
	})}
}

// of returns the index of resp, an answer of shape, built now unless
// remembered.
func (t *echoIndexes) of(shape groundhog.Shape, resp *groundhog.Response) *wire.EchoIndex {
	k := weak.Make(resp)
	if x, ok := t.cache.GetIfPresent(k); ok && x.For(shape, resp) {
		return x
	}
	x := wire.IndexEcho(shape, resp)
	if x != nil {
		t.cache.Set(k, x)
	}
	return x
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
// (at 200 KB reading it cost more than the rest of the hit), or those a
// follower kept instead of its body. ok is false when the fingerprint was
// not taken of the body itself, or its body is gone.
func echoValues(c *call) (vals [][]byte, ok bool) {
	if c.echoVals != nil {
		return c.echoVals, true // a follower's, kept instead of its body
	}
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
