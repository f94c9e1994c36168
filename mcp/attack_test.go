package mcp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/mcp"
)

// Attacks from outside on the MCP surface, over loopback HTTP against a
// real gateway, store and simulated MCP server.

// rpcError decodes a JSON-RPC error response, failing the test when the
// body is not one.
func rpcError(t *testing.T, status int, body []byte) (int, string) {
	t.Helper()
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code == 0 || m.Error.Message == "" || m.ID == nil {
		t.Fatalf("status %d: not a JSON-RPC error response: %s", status, body)
	}
	return m.Error.Code, m.Error.Message
}

// send posts (or GETs, DELETEs) body to /mcp/NAME with headers.
func (e *env) send(method, name string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.URL+mcp.PathPrefix+name, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

const emailMsg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@example.com","subject":"s"}}}`

// TestAttackAuth: no key, a made-up key and a revoked key are each an HTTP
// 401 with a JSON-RPC error body, on every method and server name (an
// unknown server is not told apart before authentication); the official
// client cannot connect; nothing reaches the MCP server and nothing is
// ledgered.
func TestAttackAuth(t *testing.T) {
	e := newEnv(t)
	revoked, k := groundhog.NewAPIKey("gamma", time.Now())
	ctx := context.Background()
	if err := e.DB.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	creds := map[string]map[string]string{
		"no key":      nil,
		"made-up key": {"Authorization": "Bearer gh_made_up"},
		"revoked key": {"Authorization": "Bearer " + revoked},
		"basic auth":  {"Authorization": "Basic Zm9vOmJhcg=="},
		"x-api-key":   {"X-Api-Key": "gh_made_up"},
	}
	reqs := []struct {
		method, name string
		body         []byte
	}{
		{"POST", "sim", []byte(emailMsg)},
		{"POST", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)},
		{"POST", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)},
		{"GET", "sim", nil},
		{"DELETE", "sim", nil},
		{"POST", "nope", []byte(emailMsg)},
		{"POST", "sim", []byte(`not json`)},
	}
	n := 0
	for name, hdr := range creds {
		for _, rq := range reqs {
			n++
			res, body := e.send(rq.method, rq.name, rq.body, hdr)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s /mcp/%s: status %d, want 401: %s", name, rq.method, rq.name, res.StatusCode, body)
				continue
			}
			rpcError(t, res.StatusCode, body)
		}
	}
	for _, key := range []string{"gh_made_up", revoked} {
		n++
		cl := sdk.NewClient(&sdk.Implementation{Name: "attacker", Version: "1"}, nil)
		_, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.URL + mcp.PathPrefix + "sim",
			HTTPClient: &http.Client{Transport: bearer{key: key}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err == nil {
			t.Errorf("the SDK client connected with key %q", key[:6])
		}
	}
	t.Logf("%d unauthenticated requests", n)
	if got := e.Sent.Load(); got != 0 {
		t.Fatalf("unauthenticated requests reached the MCP server: %d requests", got)
	}
	if fx := e.effects(); fx.EmailsSent != 0 || len(fx.ToolCalls) != 0 {
		t.Fatalf("unauthenticated requests executed tools: %+v", fx)
	}
	if got := e.rows(); len(got) != 0 {
		t.Fatalf("unauthenticated requests were ledgered: %v", got)
	}
}

// TestAttackCrossTenant: tenant B never gets tenant A's cached read-only
// result nor A's idempotent replay; B's use of A's idempotency key —
// through _meta or the Idempotency-Key header, with A's arguments or
// others — is B's own operation, executed once for B.
func TestAttackCrossTenant(t *testing.T) {
	e := newEnv(t, withTool("search", config.MCPTool{CacheTTL: time.Hour}))
	ctx := context.Background()
	csA := e.client(bearer{key: e.KeyA}, nil)
	csB := e.client(bearer{key: e.KeyB}, nil)
	search := &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "alpha's secret plans"}}
	for range 2 {
		if _, err := csA.CallTool(ctx, search); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := csB.CallTool(ctx, search); err != nil {
		t.Fatal(err)
	}
	if got := e.effects().ToolCalls["search"]; got != 2 {
		t.Fatalf("%d upstream searches, want 2: A's cached result never answers B", got)
	}

	// _meta key: A sends, A retries (replayed), B reuses the key.
	resA, err := csA.CallTool(ctx, emailCall("invoice-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := csA.CallTool(ctx, emailCall("invoice-1"))
	if err != nil || text(t, again) != text(t, resA) {
		t.Fatalf("A's retry: %v", err)
	}
	resB, err := csB.CallTool(ctx, emailCall("invoice-1"))
	if err != nil {
		t.Fatal(err)
	}
	if text(t, resB) == text(t, resA) {
		t.Fatalf("B got A's replay: %q", text(t, resB))
	}
	if fx := e.effects(); fx.EmailsSent != 2 {
		t.Fatalf("%d emails, want 2 (A once, B once)", fx.EmailsSent)
	}
	other := &sdk.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "eve@example.com", "subject": "other"}, Meta: sdk.Meta{mcp.MetaIdempotencyKey: "invoice-2"}}
	if _, err := csA.CallTool(ctx, emailCall("invoice-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := csB.CallTool(ctx, other); err != nil {
		t.Fatalf("B's other arguments under A's key: %v (a conflict would mean the tenants share keys)", err)
	}

	// The Idempotency-Key header, posted raw.
	hdrA := map[string]string{"Authorization": "Bearer " + e.KeyA, "Idempotency-Key": "hdr-1", "Mcp-Session-Id": csA.ID()}
	hdrB := map[string]string{"Authorization": "Bearer " + e.KeyB, "Idempotency-Key": "hdr-1", "Mcp-Session-Id": csB.ID()}
	if csA.ID() == "" || csB.ID() == "" {
		t.Fatal("the simulated server runs without sessions")
	}
	_, bodyA := e.send("POST", "sim", []byte(emailMsg), hdrA)
	_, bodyA2 := e.send("POST", "sim", []byte(emailMsg), hdrA)
	_, bodyB := e.send("POST", "sim", []byte(emailMsg), hdrB)
	bodyA, bodyA2, bodyB = answerOf(bodyA), answerOf(bodyA2), answerOf(bodyB)
	if !bytes.Equal(bodyA, bodyA2) || bytes.Equal(bodyA, bodyB) || !strings.Contains(string(bodyB), "sent email-") {
		t.Fatalf("header key: A %s, A again %s, B %s", bodyA, bodyA2, bodyB)
	}
	if fx := e.effects(); fx.EmailsSent != 6 {
		t.Fatalf("%d emails, want 6", fx.EmailsSent)
	}
	if got := e.rows(); got[groundhog.OutcomeReplayed] != 2 || got[groundhog.OutcomeCacheHit] != 1 {
		t.Fatalf("ledger %v, want 2 replayed (A's retries) and 1 cache hit (A's)", got)
	}
}

// TestAttackMalformedInput: messages the gateway cannot or must not relay
// get a clear JSON-RPC error with the right status, reach no MCP server
// and are not ledgered.
func TestAttackMalformedInput(t *testing.T) {
	e := newEnv(t)
	key := map[string]string{"Authorization": "Bearer " + e.KeyA}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + e.KeyA}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@example.com","body":"`))
	_, _ = zw.Write(bytes.Repeat([]byte("0"), 64<<20))
	_, _ = zw.Write([]byte(`"}}}`))
	_ = zw.Close()
	cases := []struct {
		name, server string
		body         []byte
		hdr          map[string]string
		status       int
	}{
		{"batch of calls", "sim", []byte(`[` + emailMsg + `,` + emailMsg + `]`), key, 400},
		{"batch after whitespace", "sim", []byte("\n\t [" + emailMsg + `]`), key, 400},
		{"over the size bound", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@example.com","body":"` + strings.Repeat("x", 65<<10) + `"}}}`), key, 413},
		{"gzip bomb", "sim", bomb.Bytes(), with("Content-Encoding", "gzip"), 413},
		{"unknown encoding", "sim", []byte(emailMsg), with("Content-Encoding", "br"), 415},
		{"not gzip", "sim", []byte(emailMsg), with("Content-Encoding", "gzip"), 400},
		{"text/plain", "sim", []byte(emailMsg), with("Content-Type", "text/plain"), 415},
		{"form", "sim", []byte(emailMsg), with("Content-Type", "application/x-www-form-urlencoded"), 415},
		{"no content type", "sim", []byte(emailMsg), with("Content-Type", ""), 415},
		{"unknown server", "nope", []byte(emailMsg), key, 404},
		{"empty server name", "", []byte(emailMsg), key, 404},
		{"server name with a slash", "sim/x", []byte(emailMsg), key, 404},
		{"escaped slash", "sim%2F..%2Fsim", []byte(emailMsg), key, 404},
		{"NUL in name", "sim%00", []byte(emailMsg), key, 404},
		{"malformed JSON", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`), key, 400},
		{"not an object", "sim", []byte(`"tools/call"`), key, 400},
		{"method a number", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":7}`), key, 400},
		{"params a string", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"send_email"}`), key, 400},
		{"arguments a string", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":"to=x"}}`), key, 400},
		{"name a number", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`), key, 400},
		{"meta key a number", "sim", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@example.com"},"_meta":{"io.groundhog/idempotency-key":5}}}`), key, 400},
		{"empty body", "sim", []byte{}, key, 400},
		{"PUT", "sim", []byte(emailMsg), key, 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := "POST"
			if c.name == "PUT" {
				method = "PUT"
			}
			before := e.Sent.Load()
			res, body := e.send(method, c.server, c.body, c.hdr)
			if n := e.Sent.Load() - before; n != 0 {
				t.Errorf("relayed to the MCP server %d times", n)
			}
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, c.status, body)
			}
			rpcError(t, res.StatusCode, body)
		})
	}
	t.Logf("%d malformed messages", len(cases))
	if fx := e.effects(); fx.EmailsSent != 0 || len(fx.ToolCalls) != 0 {
		t.Fatalf("malformed input executed tools: %+v", fx)
	}
	if got := e.rows(); len(got) != 0 {
		t.Fatalf("malformed input was ledgered: %v", got)
	}
}
