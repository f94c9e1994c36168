package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
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
// call: the handler, the call's flight until its answer begins, and every
// upstream request body the transport has not closed yet (the transport
// closes the body when it is done with it, possibly after RoundTrip
// returned). The buffer goes back to the pool when the last of them lets
// go: for a stream, at its first event where the handler reads nothing of
// the body any more (flightLetsGo; design record 0022). A reference that is
// never let go (a transport that never closes) only leaves the buffer to
// the GC, as before: never a reuse while someone reads it.
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

// release lets go of one reference; the last one puts the buffer back,
// and forgets it: a call still held (its stream relayed for minutes) does
// not keep the buffer from the garbage collector once the pool drops it.
func (b *bodyRefs) release() {
	if b.n.Add(-1) == 0 {
		missBodiesReturned.Add(1)
		p := b.p
		b.p = nil // every other holder has let go: none reads it
		putBody(p)
	}
}

// missBodiesReturned counts the buffers the miss path gave back (tests).
var missBodiesReturned atomic.Int64

// refReader is an upstream request body holding a reference until the
// transport closes it. Closing it forgets the bytes too: the transport
// keeps the request (and so its body) until the answer has been read, a
// stream's for as long as it lasts. The transport may close a body on
// another goroutine than the one reading it (HTTP/2, a cancelled call):
// the lock makes a read and the close one after the other.
type refReader struct {
	mu     sync.Mutex
	rd     bytes.Reader
	refs   *bodyRefs
	closed bool
}

func (r *refReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rd.Read(p) // io.EOF once closed: the reader is empty
}

// WriteTo keeps the write to the connection in one call, as the
// transport's copy of a *bytes.Reader does.
func (r *refReader) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rd.WriteTo(w)
}

func (r *refReader) Close() error {
	r.mu.Lock()
	closed := r.closed
	r.closed = true
	r.rd.Reset(nil)
	r.mu.Unlock()
	if !closed {
		r.refs.release()
	}
	return nil
}

// upstreamBody is what a request's rewinds (GetBody) read: forgotten once
// the answer has begun (exchange.received), when the transport asks for
// none any more.
type upstreamBody struct {
	mu   sync.Mutex
	b    []byte
	refs *bodyRefs
}

// rewind returns a new reader of the body, holding a reference; an error
// once the body is forgotten or its buffer gone back.
func (u *upstreamBody) rewind() (io.ReadCloser, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.b == nil || !u.refs.acquire() {
		return nil, errBodyReleased
	}
	if len(u.b) <= smallUpstreamBody {
		return io.NopCloser(bytes.NewReader(u.b)), nil // released by WroteRequest
	}
	return newRefReader(u.b, u.refs), nil
}

// newRefReader reads body holding a reference the caller took.
func newRefReader(body []byte, refs *bodyRefs) *refReader {
	r := &refReader{refs: refs}
	r.rd.Reset(body)
	return r
}

// forget drops the body: no rewind reads it from here.
func (u *upstreamBody) forget() {
	if u != nil {
		u.mu.Lock()
		u.b = nil
		u.mu.Unlock()
	}
}

// smallUpstreamBody is the largest counted body newUpstreamRequest sends
// as a plain *bytes.Reader: the default http.Transport's write buffer
// (4 KiB), which the headers and the body must share to go out in one write.
const smallUpstreamBody = 4 << 10

var errBodyReleased = errors.New("gateway: request body already released")

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
//
// The transport keeps the request until its answer has been read — a
// stream's for as long as it lasts — and with it the body and GetBody: the
// counted reader forgets the bytes when closed, and the rewinds when the
// answer begins (the returned upstreamBody's forget; nil when the body is
// not counted).
func newUpstreamRequest(ctx context.Context, url string, c *call, body []byte) (*http.Request, *upstreamBody, error) {
	if c.refs == nil || len(body) == 0 {
		req, err := newPost(ctx, url, bytes.NewReader(body))
		return req, nil, err
	}
	refs := c.refs
	if !refs.acquire() {
		return nil, nil, errBodyReleased // cannot happen while the flight runs: it holds a reference
	}
	up := &upstreamBody{b: body, refs: refs}
	var rd io.Reader
	if len(body) <= smallUpstreamBody {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: refs.wrote})
		rd = bytes.NewReader(body)
	} else {
		rd = newRefReader(body, refs)
	}
	req, err := newPost(ctx, url, rd)
	if err != nil {
		refs.release()
		return nil, nil, err
	}
	req.ContentLength = int64(len(body))
	req.GetBody = up.rewind
	return req, up, nil
}

// wrote releases the reference of one write attempt's body
// (httptrace.ClientTrace.WroteRequest).
func (b *bodyRefs) wrote(httptrace.WroteRequestInfo) { b.release() }
