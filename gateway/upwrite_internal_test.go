package gateway

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// writeCountConn counts the writes the transport makes on a connection.
type writeCountConn struct {
	net.Conn
	n *atomic.Int64
}

func (c writeCountConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// A counted (pooled) miss body goes upstream byte for byte as the client
// sent it, whatever its size, and the pooled buffer may be reused as soon as
// everyone let go — the bytes on the wire never change after the fact. A
// small one (≤ smallUpstreamBody) goes out with the headers in a single
// write on the connection (a *bytes.Reader body: net/http does not flush the
// headers on their own) and keeps its reference until the transport reports
// the write (httptrace WroteRequest), a large one until the transport closes
// it. With the small body sent from the counted reader, the single-write
// check fails (2 writes: the headers, then the body); with the small body's
// reference let go before the write, the buffer-returned check fails.
func TestUpstreamBodyBytesAndWrites(t *testing.T) {
	var mu sync.Mutex
	var got []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = b
		mu.Unlock()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer up.Close()
	var writes atomic.Int64
	tr := &http.Transport{
		MaxIdleConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return writeCountConn{c, &writes}, nil
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	rng := rand.New(rand.NewPCG(3, 12))
	sizes := []int{1, 2, 700, 1775, 3000, smallUpstreamBody - 1, smallUpstreamBody, smallUpstreamBody + 1, 5000, 40 << 10, 200 << 10}
	for i := 0; i < 60; i++ {
		sizes = append(sizes, 1+rng.IntN(8<<10))
	}
	for _, n := range sizes {
		p := getBody(n)
		body := p.b[:n:n]
		for k := range body {
			body[k] = byte(rng.IntN(256))
		}
		want := bytes.Clone(body)
		c := &call{pooled: p, body: body}
		refs := c.missBodyRefs()
		refs.acquire() // the flight
		before := missBodiesReturned.Load()
		req, _, err := newUpstreamRequest(context.Background(), up.URL+"/v1/chat/completions", c, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		// The handler and the flight let go before the request is written:
		// the upstream request's reference keeps the buffer out of the pool.
		refs.release()
		refs.release()
		if d := missBodiesReturned.Load() - before; d != 0 {
			t.Fatalf("%d bytes: buffer returned %d times before the write, want 0", n, d)
		}
		w0 := writes.Load()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		w := writes.Load() - w0
		mu.Lock()
		same := bytes.Equal(got, want)
		mu.Unlock()
		if !same {
			t.Fatalf("%d bytes: the upstream received other bytes than the client sent", n)
		}
		if n <= smallUpstreamBody-1024 && w != 1 {
			t.Fatalf("%d bytes: the request took %d writes, want 1 (headers and body together)", n, w)
		}
		// The transport has written (small: WroteRequest) or closed (large)
		// the body: last release.
		if d := missBodiesReturned.Load() - before; d != 1 {
			t.Fatalf("%d bytes: buffer returned %d times after the request, want 1", n, d)
		}
	}
}
