package mcp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/mcp"
)

// A client that stalls while sending a message is cut off by the
// slow-client guard and told so: 408 with a JSON-RPC error, as on the
// provider routes (not a 400 that blames the message), and nothing reaches
// the MCP server.
func TestSlowMessageIs408(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(httpguard.Handler(e.GW, httpguard.Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1000}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %ssim HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\":", mcp.PathPrefix, e.KeyA)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a hang only
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to a stalled message: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), "too slowly") {
		t.Errorf("status %d body %s; want 408 with a JSON-RPC error saying the message came too slowly", res.StatusCode, b)
	}
}
