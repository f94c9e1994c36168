package gateway_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Calls over HTTP/2 (cleartext, as a proxy in front or an h2c client sends
// them), with bodies of more than one HTTP/2 data chunk: a miss, its hit,
// and a stream, each answered in full and booked. The gateway closes an
// HTTP/2 request body once it has read all of it (body.go); what that
// saves a waiting call is measured by BenchmarkCoalesceResponsesAtScale.
func TestHTTP2Calls(t *testing.T) {
	h := newHarness(t)
	addr, stop := serveH2C(t, h.GW, 0)
	defer stop()
	var clientProtos http.Protocols
	clientProtos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &clientProtos}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	post := func(body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Groundhog-Cache", "use")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.ProtoMajor != 2 || res.StatusCode != http.StatusOK {
			t.Fatalf("HTTP/%d status %d: %s", res.ProtoMajor, res.StatusCode, b)
		}
		return res, string(b)
	}
	long := strings.Repeat("earlier turns of the task. ", 24<<10/27) // more than one HTTP/2 data chunk
	plain := `{"model":"sim-small","messages":[{"role":"user","content":"` + long + `what next?"}]}`
	res1, miss := post(plain)
	res2, hit := post(plain)
	if res1.Header.Get("Groundhog-Cache") != "miss" || res2.Header.Get("Groundhog-Cache") != "hit" || miss != hit {
		t.Errorf("miss then hit over HTTP/2: %q then %q, same body %v", res1.Header.Get("Groundhog-Cache"), res2.Header.Get("Groundhog-Cache"), miss == hit)
	}
	_, stream := post(`{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"` + long + `and now?"}]}`)
	if !strings.HasSuffix(stream, "data: [DONE]\n\n") {
		t.Errorf("a stream over HTTP/2 is not complete:\n%.300s", stream)
	}
	if rows := len(h.ledgerRows()); rows != 3 {
		t.Errorf("%d ledger rows, want 3", rows)
	}
}

// serveH2C serves handler over HTTP/1.1 and HTTP/2 cleartext on loopback,
// at most maxStreams concurrent streams per connection (0: net/http's
// default), until stop.
func serveH2C(tb testing.TB, handler http.Handler, maxStreams int) (addr string, stop func()) {
	tb.Helper()
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: handler, Protocols: &protos, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxStreams}}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }
}
