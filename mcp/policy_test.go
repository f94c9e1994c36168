package mcp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/mcp"
)

// A read-only tool with a cache_ttl answers a repeat from the tenant's
// cache; another tenant's identical call still goes upstream.
func TestReadOnlyCacheTTL(t *testing.T) {
	e := newEnv(t, withTool("search", config.MCPTool{CacheTTL: time.Hour}))
	ctx := context.Background()
	call := &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "otters"}}
	csA := e.client(bearer{key: e.KeyA}, nil)
	for i := 0; i < 2; i++ {
		if _, err := csA.CallTool(ctx, call); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.effects().ToolCalls["search"]; got != 1 {
		t.Fatalf("%d upstream searches for a repeat within the TTL, want 1", got)
	}
	csB := e.client(bearer{key: e.KeyB}, nil)
	if _, err := csB.CallTool(ctx, call); err != nil {
		t.Fatal(err)
	}
	if got := e.effects().ToolCalls["search"]; got != 2 {
		t.Fatalf("%d upstream searches, want 2: a cache entry never answers another tenant", got)
	}
	if got := e.rows(); got[groundhog.OutcomeCacheHit] != 1 || got[groundhog.OutcomeUpstream] != 2 {
		t.Fatalf("ledger %v, want 1 cache_hit + 2 upstream", got)
	}
}

// The configuration's policy wins over the annotations: search declared
// a side effect runs every time, its repeat booked as a suspected duplicate.
func TestConfigOverridesAnnotations(t *testing.T) {
	e := newEnv(t, withTool("search", config.MCPTool{Policy: config.MCPSideEffect}))
	cs := e.client(bearer{key: e.KeyA}, nil)
	for i := 0; i < 2; i++ {
		if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "otters"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 1 || got[groundhog.OutcomeSuspectedDuplicate] != 1 {
		t.Fatalf("ledger %v, want search as a side effect: 1 upstream + 1 suspected_duplicate", got)
	}
}

// An MCP session belongs to the tenant that opened it: another tenant's
// key with its session id is told the session does not exist.
func TestSessionBoundToTenant(t *testing.T) {
	e := newEnv(t)
	cs := e.client(bearer{key: e.KeyA}, nil)
	sid := cs.ID()
	if sid == "" {
		t.Skip("the server runs without sessions")
	}
	req, _ := http.NewRequest(http.MethodPost, e.URL+mcp.PathPrefix+"sim", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"x@example.com"}}}`))
	req.Header.Set("Authorization", "Bearer "+e.KeyB)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(res)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "session not found") {
		t.Fatalf("status %d body %s, want 404 session not found", res.StatusCode, body)
	}
	if fx := e.effects(); fx.EmailsSent != 0 {
		t.Fatalf("another tenant's session sent %d emails", fx.EmailsSent)
	}
}
