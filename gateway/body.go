package gateway

import (
	"bytes"
	"errors"
	"io"
	"math/bits"
	"net/http"
	"sync"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/wire"
)

// Request bodies are read once, into a buffer sized from Content-Length,
// instead of io.ReadAll's doubling growth (which allocated and zeroed about
// twice the body per request: 92 % of the hit path's allocated bytes at
// 200 KB, docs/design/0009-hit-path.md).
//
// The buffer comes from a pool of power-of-two size classes. It goes back to
// the pool only where its lifetime is proven to have ended: after a cache hit
// or an idempotent replay (or refusal) has been written (serveFromCache,
// beginIdempotent), when nothing but the handler's own frame held the body —
// the fingerprint copies what it keeps (hash, model), the ledger row holds
// strings, the echo rewrite and the response writer copy what they write;
// and on the miss path (idempotent or not), when the last of its readers
// (the handler, the flight, each upstream request body the transport has
// not closed) lets go (missbody.go). On every other path the body is simply
// left to the garbage collector: a pooled buffer reused while someone still
// reads it would be far worse than an allocation.

const (
	minBodyClass = 12 // 4 KiB: the smallest pooled buffer
	maxBodyClass = 22 // 4 MiB: bodies above this are allocated and never pooled
)

var bodyPools [maxBodyClass - minBodyClass + 1]sync.Pool

// pooledBody is a pooled request buffer; b has the class's full capacity.
type pooledBody struct {
	b     []byte
	class int
}

// bodyClass returns the pool class of a body of n bytes, or -1 when n is
// too large to pool.
func bodyClass(n int) int {
	if n <= 1<<minBodyClass {
		return 0
	}
	c := bits.Len(uint(n-1)) - minBodyClass // smallest 2^k ≥ n
	if c > maxBodyClass-minBodyClass {
		return -1
	}
	return c
}

// getBody returns a pooled buffer of at least n bytes, or nil when n is too
// large to pool.
func getBody(n int) *pooledBody {
	c := bodyClass(n)
	if c < 0 {
		return nil
	}
	if p, ok := bodyPools[c].Get().(*pooledBody); ok {
		return p
	}
	return &pooledBody{b: make([]byte, 1<<(c+minBodyClass)), class: c}
}

// putBody returns p to its pool. The caller must hold the only reference to
// p.b and to every slice of it.
func putBody(p *pooledBody) {
	if p != nil {
		if clearReturnedBodies {
			clear(p.b)
		}
		bodyPools[p.class].Put(p)
	}
}

// clearReturnedBodies, set by the package's tests, zeroes each buffer as it
// goes back to the pool: a read of a body after its buffer was let go then
// sees NUL bytes, which no JSON body holds, instead of the bytes it expects
// until the buffer happens to be reused.
var clearReturnedBodies bool

// releaseBody returns c's body buffer to the pool, when it has one, and
// forgets the body. Call it only when nothing can read c.body any more (see
// the comment at the top of this file).
func (c *call) releaseBody() {
	p := c.pooled
	c.pooled, c.body = nil, nil
	putBody(p)
	putQuotes(c.takeQuotes()) // the body's quote bitmap (quotes.go)
}

// readBody reads at most limit bytes; one byte more is a 413. With a
// Content-Length the body is read into one buffer of that size (pooled when
// not too large; the second result, nil otherwise); without one (chunked, or
// decompressed as it is read) it is read as it comes, bounded by limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *pooledBody, error) {
	if r.ContentLength > limit {
		return nil, nil, groundhog.Errorf(groundhog.ETOOLARGE, "request body is %d bytes; the limit is %d", r.ContentLength, limit)
	}
	if r.ContentLength == 0 {
		return nil, nil, errEmptyBody()
	}
	if r.ContentLength < 0 {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, nil, groundhog.Errorf(groundhog.ETOOLARGE, "request body is over the limit of %d bytes", limit)
			}
			return nil, nil, httpguard.BodyError(err)
		}
		if len(body) == 0 {
			return nil, nil, errEmptyBody()
		}
		return body, nil, nil
	}
	// net/http's body reader returns EOF after Content-Length bytes, so
	// the limit checked above bounds what is read.
	n := int(r.ContentLength)
	p := getBody(n)
	var buf []byte
	if p != nil {
		// Capacity capped at n: an append to the body (withIncludeUsage)
		// copies instead of writing into the rest of the pooled buffer.
		buf = p.b[:n:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		putBody(p) // nothing read from it escapes
		return nil, nil, httpguard.BodyError(err)
	}
	if r.ProtoMajor == 2 {
		// An HTTP/2 request body keeps its last data chunk (up to 16 KB)
		// until it is read to its end or closed, and a call may wait for
		// minutes (measured: 8 KB per waiting follower of a 24 KB
		// Responses request). All of it is read: close it.
		_ = r.Body.Close()
	}
	return buf, p, nil
}

func errEmptyBody() error {
	return groundhog.Errorf(groundhog.EINVALID, "request body is empty; a JSON object is required")
}

// keepForFollowing leaves c, a coalesced follower, with only what it still
// reads of its request body while it waits for the flight it joined, which
// may take minutes: the echo rewrite is the only reader of a follower's
// body (echo.go; the fingerprint, the ledger row and the headers hold
// copies of what they need). Nothing when the answer echoes no request
// field; else the echoed values where the fingerprint's pass found them,
// copied into one buffer — a Responses request's user, metadata, store…,
// tens of bytes where its body is tens of kilobytes of instructions and
// tools — and only without those, an exact-size copy of the body. The
// pooled buffer it was read into (a 4 KiB class at least) is let go by the
// caller: with 10,000 followers of one stream that is 10,000 buffers fewer
// held for the length of the call.
func keepForFollowing(c *call) {
	if !wire.HasEchoedFields(c.shape) {
		c.body = nil
		return
	}
	if vals, ok := echoValues(c); ok {
		c.echoVals = cloneValues(vals)
		c.body = nil
		return
	}
	c.body = bytes.Clone(c.body)
}

// cloneValues copies vals into one buffer, keeping a missing value (nil)
// missing.
func cloneValues(vals [][]byte) [][]byte {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if v != nil {
			start := len(buf)
			buf = append(buf, v...)
			out[i] = buf[start:len(buf):len(buf)]
		}
	}
	return out
}

// maxSizedRead is the largest upstream answer read into one buffer of its
// Content-Length; a longer one (or one without a length) is read as it
// comes, so a length that is announced but never sent does not make the
// gateway allocate it up front.
const maxSizedRead = 4 << 20

// readUpstreamBody reads a non-streamed upstream answer, at most limit
// bytes (one more when it is longer: the caller's over-limit check). With a
// Content-Length it reads into one buffer of that size, where io.ReadAll
// starts at 512 bytes and grows by copying (about twice the answer
// allocated, and 1.5 KB for a 774-byte chat answer); the body must then end
// there, as net/http's Content-Length reader makes it.
func readUpstreamBody(res *http.Response, limit int64) ([]byte, error) {
	n := res.ContentLength
	if n < 0 || n > maxSizedRead || n > limit {
		return io.ReadAll(io.LimitReader(res.Body, limit+1))
	}
	// One byte of room more than announced: the read must stop at the
	// announced end (io.ReadFull's ErrUnexpectedEOF after exactly n bytes).
	body := make([]byte, n+1)
	m, err := io.ReadFull(res.Body, body)
	switch {
	case int64(m) == n && (err == io.ErrUnexpectedEOF || err == io.EOF): // EOF: n is 0
		return body[:n:n], nil
	case err == nil:
		return nil, errors.New("upstream sent more than its Content-Length")
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}
