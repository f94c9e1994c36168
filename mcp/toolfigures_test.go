package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/ledger"
)

// A workload of every tool-call outcome (concurrent identical searches
// coalesced, cached repeats, a keyed email retried, an email sent twice
// without a key) gives a daily report whose per-tool "executed" equals what
// the simulated MCP server counted, and whose hits, coalesced, replayed and
// suspected duplicates equal the workload's; groundhog_tool_calls_total
// counts the same, per server, tool and outcome.
func TestToolFiguresMatchSimulator(t *testing.T) {
	e := newEnv(t, withGate(), withTool("search", config.MCPTool{Policy: "read_only", CacheTTL: time.Hour}))
	cs := e.client(bearer{key: e.KeyA}, nil)
	ctx := context.Background()
	search := func(q string) {
		t.Helper()
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": q}}); err != nil {
			t.Error(err)
		}
	}
	const concurrent = 6
	var wg sync.WaitGroup
	for range concurrent {
		wg.Add(1)
		go func() { defer wg.Done(); search("otters") }()
	}
	<-e.gate.arrived // the leader reached the server
	waitFollowers(t, e, concurrent)
	e.gate.open()
	wg.Wait()
	search("otters") // from the cache
	search("otters")
	search("beavers") // another query runs
	for range 3 {
		if _, err := cs.CallTool(ctx, emailCall("invoice-9")); err != nil {
			t.Fatal(err)
		}
	}
	noKey := emailCall("")
	noKey.Arguments = map[string]any{"to": "bob@example.com", "subject": "reminder"}
	for range 2 {
		if _, err := cs.CallTool(ctx, noKey); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant's call is not in alpha's report.
	if _, err := e.client(bearer{key: e.KeyB}, nil).CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "moles"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fx := e.effects()

	rep, err := ledger.BuildReport(ctx, e.DB, ledger.ReportParams{Day: time.Now(), Tenant: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RawTools  []map[string]any `json:"tools"`
		ToolTotal map[string]any   `json:"tool_total"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	byTool := map[string]map[string]any{}
	for _, r := range doc.RawTools {
		byTool[r["tool"].(string)] = r
		if r["server"] != "sim" || r["operation"] != "mcp:sim/"+r["tool"].(string) {
			t.Errorf("tool row %v: want server sim and operation mcp:sim/TOOL", r)
		}
	}
	num := func(m map[string]any, k string) int64 {
		f, _ := m[k].(float64)
		return int64(f)
	}
	s, em := byTool["search"], byTool["send_email"]
	if s == nil || em == nil || len(byTool) != 2 {
		t.Fatalf("tools %v, want search and send_email", doc.RawTools)
	}
	// What the server ran, the report of every tenant says was executed.
	all, err := ledger.BuildReport(ctx, e.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	allTools, allTotal := all.Tools()
	executed := map[string]int64{}
	for _, r := range allTools {
		executed[r.Tool] = r.Executed
	}
	if executed["search"] != fx.ToolCalls["search"] || executed["send_email"] != fx.ToolCalls["send_email"] ||
		executed["send_email"] != fx.EmailsSent || allTotal.Executed != fx.ToolCalls["search"]+fx.ToolCalls["send_email"] {
		t.Errorf("executed: %v (total %d); simulator ran %v (emails %d)", executed, allTotal.Executed, fx.ToolCalls, fx.EmailsSent)
	}
	// alpha: otters once + beavers; beta's moles is another tenant's.
	if fx.ToolCalls["search"] != 3 || fx.ToolCalls["send_email"] != 3 {
		t.Errorf("simulator ran %v, want search 3 (alpha 2, beta 1) and send_email 3", fx.ToolCalls)
	}
	want := map[string]map[string]int64{
		"search":     {"calls": concurrent + 3, "executed": 2, "cache_hits": 2, "coalesced": concurrent - 1, "replayed": 0, "suspected_duplicates": 0},
		"send_email": {"calls": 5, "executed": 3, "cache_hits": 0, "coalesced": 0, "replayed": 2, "suspected_duplicates": 1},
	}
	// Beta's search is the simulator's third search: alpha's executed
	// searches are the simulator's minus beta's one.
	want["search"]["executed"] = fx.ToolCalls["search"] - 1
	for tool, fields := range want {
		for k, v := range fields {
			if got := num(byTool[tool], k); got != v {
				t.Errorf("%s %s = %d, want %d", tool, k, got, v)
			}
			if got := num(doc.ToolTotal, k); got != want["search"][k]+want["send_email"][k] {
				t.Errorf("tool_total %s = %d, want %d", k, got, want["search"][k]+want["send_email"][k])
			}
		}
	}

	// The metric counts the same calls (both tenants: it has no tenant label).
	rec := httptest.NewRecorder()
	e.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	got := map[string]int64{}
	for _, m := range regexp.MustCompile(`(?m)^groundhog_tool_calls_total\{outcome="([^"]+)",server="sim",tool="([^"]+)"\} (\d+)$`).FindAllSubmatch(body, -1) {
		n, _ := strconv.ParseInt(string(m[3]), 10, 64)
		got[string(m[2])+"/"+string(m[1])] = n
	}
	wantMetric := map[string]int64{
		"search/" + string(groundhog.OutcomeUpstream):               fx.ToolCalls["search"],
		"search/" + string(groundhog.OutcomeCoalesced):              concurrent - 1,
		"search/" + string(groundhog.OutcomeCacheHit):               2,
		"send_email/" + string(groundhog.OutcomeUpstream):           2,
		"send_email/" + string(groundhog.OutcomeReplayed):           2,
		"send_email/" + string(groundhog.OutcomeSuspectedDuplicate): 1,
	}
	if len(got) != len(wantMetric) {
		t.Errorf("groundhog_tool_calls_total series %v, want %v", got, wantMetric)
	}
	for k, v := range wantMetric {
		if got[k] != v {
			t.Errorf("groundhog_tool_calls_total %s = %d, want %d", k, got[k], v)
		}
	}
	if executed := got["send_email/upstream"] + got["send_email/suspected_duplicate"]; executed != fx.EmailsSent {
		t.Errorf("metric: %d send_email executions, simulator sent %d emails", executed, fx.EmailsSent)
	}
}
