package gateway

import (
	"context"
	"io"
	"testing"
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
	req, err := newUpstreamRequest(context.Background(), "http://upstream/v1/chat/completions", c, body)
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
	refs.release() // the handler
	refs.release() // the flight
	_ = req.Body.Close()
	_ = req.Body.Close() // twice: counted once
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
