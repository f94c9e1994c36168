package gateway

import (
	"context"
	"io"
	"runtime"
	"testing"
	"weak"
)

// The reference count behind the miss path's buffer reuse: the buffer goes
// back only when the handler, the flight and every upstream body (the first
// and each rewound copy) have let go; a Close twice counts once; a rewind
// asked for after the buffer went back fails instead of reading a reused
// buffer.
func TestBodyRefsLastReleasePutsBack(t *testing.T) {
	p := getBody(5000)
	body := p.b[:5000:5000]
	copy(body, "hello")
	c := &call{pooled: p, body: body}
	refs := c.missBodyRefs()
	if refs == nil || c.pooled != nil {
		t.Fatal("missBodyRefs did not take the pooled buffer")
	}
	before := missBodiesReturned.Load()
	refs.acquire() // the flight
	req, up, err := newUpstreamRequest(context.Background(), "http://upstream/v1/chat/completions", c, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != int64(len(body)) {
		t.Fatalf("Content-Length %d, want %d", req.ContentLength, len(body))
	}
	rewound, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rewound)
	if string(got[:5]) != "hello" || len(got) != len(body) {
		t.Fatalf("rewound body reads %d bytes %q…", len(got), got[:5])
	}
	// The answer began: no rewind from here, and the body's reference
	// stays where it was.
	up.forget()
	if _, err := req.GetBody(); err == nil {
		t.Fatal("a rewind after the answer began succeeded")
	}
	refs.release() // the handler
	refs.release() // the flight
	_ = req.Body.Close()
	_ = req.Body.Close() // twice: counted once
	if b, _ := io.ReadAll(req.Body); len(b) != 0 {
		t.Fatalf("a closed body still reads %d bytes", len(b))
	}
	if n := missBodiesReturned.Load() - before; n != 0 {
		t.Fatalf("buffer put back with a rewound body still open (%d)", n)
	}
	_ = rewound.Close()
	if n := missBodiesReturned.Load() - before; n != 1 {
		t.Fatalf("buffer put back %d times after the last release, want 1", n)
	}
	if _, err := req.GetBody(); err == nil {
		t.Fatal("a rewind after the buffer went back succeeded")
	}
	// An idempotent call's body is counted as any miss's.
	c2 := &call{pooled: getBody(5000), idemKey: "k"}
	if c2.missBodyRefs() == nil || c2.pooled != nil {
		t.Fatal("an idempotent call's body was not counted")
	}
}

// Once its answer has begun, an upstream request keeps nothing of its body:
// the transport holds the request until the answer has been read (a
// stream's for as long as it lasts), and the body it read, or any rewind of
// it, must not keep the buffer from the garbage collector once the pool has
// let it go. A body above the transport's write buffer (a counted reader;
// one below it is a plain *bytes.Reader, kept with the request).
func TestAnsweredRequestKeepsNoBody(t *testing.T) {
	const n = 40 << 10
	c := &call{pooled: getBody(n)}
	c.body = c.pooled.b[:n:n]
	copy(c.body, `{"model":"m"}`)
	gone := weak.Make(&c.pooled.b[0])
	refs := c.missBodyRefs()
	c.flightRef = refs.acquire()
	req, up, err := newUpstreamRequest(context.Background(), "http://upstream/v1/chat/completions", c, c.body)
	if err != nil {
		t.Fatal(err)
	}
	rewound, err := req.GetBody() // a retry's copy, written and closed
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range []io.ReadCloser{req.Body, rewound} {
		if b, _ := io.ReadAll(rd); len(b) != n {
			t.Fatalf("the upstream body reads %d bytes, want %d", len(b), n)
		}
		_ = rd.Close()
	}
	up.forget()      // the answer began
	c.flightLetsGo() // the flight
	refs.release()   // the handler
	c.body = nil     // answerBegan
	for range 4 {    // the pool drops what it holds over two collections
		runtime.GC()
	}
	if gone.Value() != nil {
		t.Fatal("the request, held until its answer is read, still keeps its body's buffer")
	}
	runtime.KeepAlive(req)
	runtime.KeepAlive(c)
}
