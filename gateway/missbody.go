package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// On a miss the request body used to be left to the garbage collector
// (body.go): its buffer may still be read by the flight (the prompt-cache
// stage, the upstream request) after the client's handler has returned.
// At 200 KB that was a fresh 256 KiB buffer allocated and zeroed per miss
// (5 % of the gateway's CPU on the miss path, 64 % of its allocated bytes:
// docs/design/0010-miss-path.md), plus the GC cycles it paid for.
//
// bodyRefs counts who may still read a pooled body on the miss path of a
// call: the handler, the call's flight while its work runs, and every
// upstream request body the transport has not closed yet (the transport
// closes the body when it is done with it, possibly after RoundTrip
// returned). The buffer goes back to the pool when the last of them lets
// go. A reference that is never let go (a transport that never closes)
// only leaves the buffer to the GC, as before: never a reuse while someone
// reads it.
//
// A call holding an idempotency claim is no different: its claim is
// settled by the handler (writeStored), or by its flight when its client
// left first (flightDone, finishOrphan), from the response, the
// fingerprint and the ledger row — none of which reads the body.
type bodyRefs struct {
	n atomic.Int32
	p *pooledBody
}

// missBodyRefs takes c's pooled buffer (if any) into a count held by the
// handler: c.releaseBody, on the hit path, then does nothing and the
// handler's release (releaseMissBody) puts the buffer back.
func (c *call) missBodyRefs() *bodyRefs {
	if c.pooled == nil {
		return nil // no pooled buffer
	}
	b := &bodyRefs{p: c.pooled}
	b.n.Store(1)
	c.pooled, c.refs = nil, b
	return b
}

// flightLetsGo lets go of the flight's reference to c's body, once. The
// flight lets go as soon as its answer has begun (exchange.received): no
// attempt sends the body again from there, and nothing the flight does
// after reads it — a stream may last minutes, and its body's buffer (a
// coding agent's request is tens or hundreds of kilobytes) goes back to
// the pool at its first event instead of at its end. The handler's own
// reference is let go early too where the handler reads nothing of its
// body any more (flightSeat.answerBegan).
func (c *call) flightLetsGo() {
	if c.flightRef {
		c.flightRef = false
		c.refs.release()
	}
}

// acquire takes one more reference, unless the buffer is already released.
func (b *bodyRefs) acquire() bool {
	for {
		n := b.n.Load()
		if n <= 0 {
			return false
		}
		if b.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release lets go of one reference; the last one puts the buffer back.
func (b *bodyRefs) release() {
	if b.n.Add(-1) == 0 {
		missBodiesReturned.Add(1)
		putBody(b.p)
	}
}

// missBodiesReturned counts the buffers the miss path gave back (tests).
var missBodiesReturned atomic.Int64

// refReader is an upstream request body holding a reference until the
// transport closes it.
type refReader struct {
	bytes.Reader
	refs   *bodyRefs
	closed atomic.Bool
}

func (r *refReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.refs.release()
	}
	return nil
}

// smallUpstreamBody is the largest counted body newUpstreamRequest sends
// as a plain *bytes.Reader: the default http.Transport's write buffer
// (4 KiB), which the headers and the body must share to go out in one write.
const smallUpstreamBody = 4 << 10

var errBodyReleased = errors.New("gateway: request body already released")

func (b *bodyRefs) reader(body []byte) (*refReader, error) {
	if !b.acquire() {
		return nil, errBodyReleased // cannot happen while the flight runs: it holds a reference
	}
	r := &refReader{refs: b}
	r.Reset(body)
	return r, nil
}

// newUpstreamRequest is http.NewRequestWithContext(ctx, POST, url,
// bytes.NewReader(body)) (newPost: the URL parsed once, upurl.go); when c's
// body is counted (bodyRefs) the request's body, and every rewound copy the
// transport asks for (GetBody), hold a reference until the transport is done
// reading them. Same Content-Length, same bytes on the wire.
//
// A counted body of at most smallUpstreamBody bytes goes out as a plain
// *bytes.Reader over the pooled bytes: net/http writes the headers and the
// body of a *bytes.Reader in one write(2), but flushes the headers on their
// own before any other body type (transfer.go, isKnownInMemoryReader) — one
// more syscall per miss, ≈ 7 % of the gateway's CPU at 1 KB
// (docs/design/0010-miss-path.md). Such a body has no Close of its own to
// release the reference with, so the release is the request's
// httptrace.WroteRequest, which the transport calls once per write attempt
// after it has read and closed that attempt's body (HTTP/1: Request.write,
// after the body is copied into the connection's buffer; HTTP/2: after the
// body's frames). Each attempt reads its own reader — the first, or one from
// GetBody, which takes a reference — so the buffer is back in the pool only
// once every attempt has stopped reading. An attempt that never writes (a
// failed dial) keeps its reference: the buffer is then left to the GC. Above
// the transport's 4 KiB write buffer the headers go out alone either way, so
// larger bodies keep the counted reader, released by its Close.
func newUpstreamRequest(ctx context.Context, url string, c *call, body []byte) (*http.Request, error) {
	if c.refs == nil || len(body) == 0 {
		return newPost(ctx, url, bytes.NewReader(body))
	}
	refs := c.refs
	if len(body) <= smallUpstreamBody {
		if !refs.acquire() {
			return nil, errBodyReleased
		}
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: refs.wrote})
		req, err := newPost(ctx, url, bytes.NewReader(body))
		if err != nil {
			refs.release()
			return nil, err
		}
		req.GetBody = func() (io.ReadCloser, error) {
			if !refs.acquire() {
				return nil, errBodyReleased
			}
			return io.NopCloser(bytes.NewReader(body)), nil
		}
		return req, nil
	}
	rd, err := refs.reader(body)
	if err != nil {
		return nil, err
	}
	req, err := newPost(ctx, url, rd)
	if err != nil {
		rd.Close()
		return nil, err
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return refs.reader(body) }
	return req, nil
}

// wrote releases the reference of one write attempt's body
// (httptrace.ClientTrace.WroteRequest).
func (b *bodyRefs) wrote(httptrace.WroteRequestInfo) { b.release() }
