package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/internal/httpguard"
)

// A client that stalls while sending its body is cut off by the slow-client
// guard and told so: 408 with a JSON error in the provider's shape (not a
// 400 that blames the request), and nothing reaches the provider.
func TestSlowBodyIs408(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(httpguard.Handler(h.GW, httpguard.Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1000}))
	defer srv.Close()
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"model\":", path)
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a hang only
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no response to a stalled body: %v", path, err)
		}
		b, _ := io.ReadAll(res.Body)
		c.Close()
		if res.StatusCode != http.StatusRequestTimeout {
			t.Errorf("%s: status %d, want 408: %s", path, res.StatusCode, b)
		}
		if typ := errorType(t, b); typ != "invalid_request_error" {
			t.Errorf("%s: error type %q", path, typ)
		}
	}
	if n := h.bill().Calls; n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
}
