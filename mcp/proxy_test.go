package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
)

// The official client through the gateway reaches every feature of the
// simulated server: tools, a tool call, resources, prompts, and a progress
// notification the server sends during the call.
func TestProxyPassesEveryFeature(t *testing.T) {
	passesEveryFeature(t, newEnv(t))
}

// passesEveryFeature drives every feature of the simulated server through
// e's gateway with the official client — tools, a search call with its
// progress notification, a resource, a prompt — and checks the call's one
// ledger row (upstream).
func passesEveryFeature(t *testing.T, e *env) {
	t.Helper()
	progress := make(chan string, 10)
	cs := e.client(bearer{key: e.KeyA}, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		progress <- r.Params.Message
	}})
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "search,send_email" {
		t.Fatalf("tools %v, want search and send_email", names)
	}
	p := &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "otters"}}
	p.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != `3 results for "otters"` {
		t.Fatalf("search answered %q", got)
	}
	// The client handles notifications on its own goroutine.
	select {
	case m := <-progress:
		if m != "searched otters" {
			t.Errorf("progress notification %q, want \"searched otters\"", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification reached the client")
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "sim://readme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != "the simulated MCP server's readme" {
		t.Fatalf("resource %+v", rr.Contents)
	}
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "summarize", Arguments: map[string]string{"topic": "otters"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := pr.Messages[0].Content.(*sdk.TextContent); !ok || tc.Text != "Summarize otters" {
		t.Fatalf("prompt %+v", pr.Messages[0].Content)
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 1 || len(got) != 1 {
		t.Fatalf("ledger tool rows %v, want 1 upstream", got)
	}
}
