package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Headers a Connection header nominates are hop-by-hop (RFC 9110 §7.6.1):
// the client's never reach the provider and the provider's never reach the
// client; the end-to-end ones still do. (A provider's "Connection: close,
// X-Leak" is not tested: Go's client removes that whole header before the
// gateway sees it.)
func TestPassthroughDropsConnectionNominated(t *testing.T) {
	got := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Connection", "keep-alive, X-Leak")
		w.Header().Set("X-Leak", "upstream hop secret")
		w.Header().Set("X-Kept", "end to end")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-provider"))
	secret, key := groundhog.NewAPIKey("acme", time.Now())
	if err := h.DB.CreateKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", h.URL+"/v1/batches", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Connection", "close, X-Hop")
	req.Header.Set("X-Hop", "client hop secret")
	req.Header.Set("X-Client-Kept", "end to end")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	sent := <-got
	if v := sent.Get("X-Hop"); v != "" {
		t.Fatalf("the provider received X-Hop %q, nominated by the client's Connection header", v)
	}
	if sent.Get("X-Client-Kept") != "end to end" {
		t.Fatalf("an end-to-end request header was dropped: %v", sent)
	}
	if v := res.Header.Get("X-Leak"); v != "" {
		t.Fatalf("the client received X-Leak %q, nominated by the provider's Connection header", v)
	}
	if res.Header.Get("X-Kept") != "end to end" {
		t.Fatalf("an end-to-end response header was dropped: %v", res.Header)
	}
}

// A provider route never takes CONNECT, TRACE or an unknown method: 405 with
// a JSON error, and the provider is not reached.
func TestPassthroughRefusesMethods(t *testing.T) {
	var reached atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-provider"))
	secret, key := groundhog.NewAPIKey("acme", time.Now())
	if err := h.DB.CreateKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(h.URL, "http://")
	for _, method := range []string{"TRACE", "CONNECT", "BREW", "PROPFIND"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s /v1/files HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n\r\n", method, addr, secret)
		res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		conn.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /v1/files: status %d, want 405; body %s", method, res.StatusCode, b)
		}
		errorType(t, b)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the provider was reached %d times by refused methods", n)
	}
}
