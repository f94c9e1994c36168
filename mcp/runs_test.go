package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/mcp"
	"github.com/groundhog-ai/groundhog/sim"
)

// bill reads the simulated provider's bill over HTTP.
func (e *env) bill() sim.Bill {
	e.t.Helper()
	res, err := http.Get(e.SimURL + "/sim/v1/bill")
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var b sim.Bill
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		e.t.Fatal(err)
	}
	return b
}

// A two-level agent run: a parent run and 3 subagent runs, each making
// model calls through the official OpenAI SDK and tool calls through the
// official MCP SDK, all through the gateway with Groundhog-Session (and
// Groundhog-Parent-Session from the subagents). The report's tree for the
// parent sums to the simulator's bill to the micro-dollar, each subagent's
// own figures are its calls, and a subagent that asks the same question
// twice shows its repeat spend in its waste ratio.
func TestAgentRunTreeMatchesSimulatorBill(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	model := func(session, parent string) openai.Client {
		opts := []option.RequestOption{option.WithBaseURL(e.URL + "/v1"), option.WithAPIKey(e.KeyA),
			option.WithMaxRetries(0), option.WithHeader(groundhog.HeaderSession, session)}
		if parent != "" {
			opts = append(opts, option.WithHeader(groundhog.HeaderParentSession, parent))
		}
		return openai.NewClient(opts...)
	}
	tools := func(session, parent string) *sdk.ClientSession {
		extra := map[string]string{groundhog.HeaderSession: session}
		if parent != "" {
			extra[groundhog.HeaderParentSession] = parent
		}
		return e.client(bearer{key: e.KeyA, extra: extra}, nil)
	}
	ask := func(c openai.Client, q string) {
		t.Helper()
		if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-small",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(cs *sdk.ClientSession, q string) {
		t.Helper()
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": q}}); err != nil {
			t.Fatal(err)
		}
	}

	parent := model("run-1", "")
	ask(parent, "plan the research on tide tables")
	ask(parent, "summarize the three findings")
	search(tools("run-1", ""), "tide tables")
	for i := range 3 {
		sub := fmt.Sprintf("run-1.sub-%d", i)
		c := model(sub, "run-1")
		for j := range i + 1 { // subagent i makes i+1 distinct model calls
			ask(c, fmt.Sprintf("subagent %d step %d: read the sources", i, j))
		}
		cs := tools(sub, "run-1")
		search(cs, fmt.Sprintf("source %d", i))
		_, _ = cs.CallTool(ctx, emailCall(fmt.Sprintf("report-%d", i)))
	}
	sub2 := model("run-1.sub-2", "run-1")
	ask(sub2, "subagent 2 step 0: read the sources") // the same question again: a repeat, paid again (cache off)
	// A run of another tenant is never part of this one.
	other := openai.NewClient(option.WithBaseURL(e.URL+"/v1"), option.WithAPIKey(e.KeyB), option.WithMaxRetries(0),
		option.WithHeader(groundhog.HeaderSession, "run-1"))
	if _, err := other.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-small",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("beta's own question")}}); err != nil {
		t.Fatal(err)
	}
	betaBill := e.bill() // everything so far
	if err := e.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	rep, err := ledger.BuildSessionReport(ctx, e.DB, ledger.ReportParams{Day: time.Now(), Tenant: "alpha"}, "")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]ledger.Run{}
	var order []string
	for _, r := range rep.Runs {
		runs[r.Session] = r
		order = append(order, strings.Repeat(" ", r.Depth)+r.Session)
	}
	if want := []string{"run-1", " run-1.sub-0", " run-1.sub-1", " run-1.sub-2"}; strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("runs in tree order = %q, want %q", order, want)
	}
	// The simulator billed alpha's calls and beta's one; beta's is its own
	// report's.
	betaRep, err := ledger.BuildSessionReport(ctx, e.DB, ledger.ReportParams{Day: time.Now(), Tenant: "beta"}, "run-1")
	if err != nil || len(betaRep.Runs) != 1 || betaRep.Runs[0].Tree.ModelCalls != 1 {
		t.Fatalf("beta's run-1 = %+v (%v), want its 1 model call only", betaRep, err)
	}
	root := runs["run-1"]
	sum := root.Tree.Spend.Plus(betaRep.Runs[0].Tree.Spend)
	if got, ok := sum.Money(); !ok || got != betaBill.USD {
		t.Fatalf("alpha's tree spend %s + beta's %s = %s, the simulator billed %s", root.Tree.Spend, betaRep.Runs[0].Tree.Spend, sum, betaBill.USD)
	}
	if root.Tree.ModelCalls+betaRep.Runs[0].Tree.ModelCalls != betaBill.Calls {
		t.Fatalf("model calls in the trees = %d + %d, the simulator billed %d calls", root.Tree.ModelCalls, betaRep.Runs[0].Tree.ModelCalls, betaBill.Calls)
	}
	if root.Own.ModelCalls != 2 || root.Own.ToolCalls != 1 || root.Tree.ModelCalls != 2+1+2+3+1 || root.Tree.ToolCalls != 1+3*2 {
		t.Fatalf("run-1 own %d model / %d tool calls, tree %d / %d; want 2/1 and 9/7",
			root.Own.ModelCalls, root.Own.ToolCalls, root.Tree.ModelCalls, root.Tree.ToolCalls)
	}
	var ownSum groundhog.Total
	for _, s := range []string{"run-1", "run-1.sub-0", "run-1.sub-1", "run-1.sub-2"} {
		ownSum = ownSum.Plus(runs[s].Own.Spend)
	}
	if ownSum != root.Tree.Spend {
		t.Fatalf("own spends sum to %s, the tree's is %s", ownSum, root.Tree.Spend)
	}
	// sub-2 repeats its own question (paid again) and sends the email text
	// sub-0 sent first (the same tool and arguments, another key: a repeat
	// by the hash rule that cost nothing at the provider).
	s2 := runs["run-1.sub-2"]
	if s2.Parent != "run-1" || s2.Own.Repeats != 2 || s2.Own.RepeatSpend.Sign() <= 0 || s2.Own.WasteRatio() <= 0 || s2.Own.WasteRatio() >= 1 {
		t.Fatalf("run-1.sub-2 = %+v: want parent run-1, 2 repeats with its spend and a waste ratio in (0, 1)", s2)
	}
	if runs["run-1.sub-0"].Own.Repeats != 0 || runs["run-1.sub-0"].Own.WasteRatio() != 0 {
		t.Fatalf("run-1.sub-0 has repeats: %+v", runs["run-1.sub-0"])
	}
	if fx := e.effects(); fx.EmailsSent != 3 {
		t.Fatalf("emails sent = %d, want 3", fx.EmailsSent)
	}
}

// Bad Groundhog-Session values are refused with a 400 naming the header,
// on model calls and on MCP calls, and nothing reaches the simulator.
func TestAgentRunBadSessionHeaders(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bad := []map[string]string{
		{groundhog.HeaderSession: strings.Repeat("r", 129)},
		{groundhog.HeaderSession: "run 1"},
		{groundhog.HeaderSession: "run/1"},
		{groundhog.HeaderParentSession: "run-1"}, // a parent without a session
		{groundhog.HeaderSession: "run-1", groundhog.HeaderParentSession: "run-1"},
		{groundhog.HeaderSession: "run-1", groundhog.HeaderParentSession: "ü"},
	}
	for _, h := range bad {
		name := groundhog.HeaderSession
		if _, ok := h[groundhog.HeaderParentSession]; ok {
			name = groundhog.HeaderParentSession
		}
		opts := []option.RequestOption{option.WithBaseURL(e.URL + "/v1"), option.WithAPIKey(e.KeyA), option.WithMaxRetries(0)}
		for k, v := range h {
			opts = append(opts, option.WithHeader(k, v))
		}
		c := openai.NewClient(opts...)
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-small",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, name) {
			t.Errorf("model call with %q: %v, want a 400 naming %s", h, err, name)
		}
		req, _ := http.NewRequest(http.MethodPost, e.URL+mcp.PathPrefix+"sim", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"a@b.c"}}}`))
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(res)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, name) {
			t.Errorf("MCP call with %q: %d %s, want a 400 naming %s", h, res.StatusCode, body, name)
		}
	}
	if b := e.bill(); b.Calls != 0 {
		t.Fatalf("the simulator billed %d calls for refused requests", b.Calls)
	}
	if fx := e.effects(); fx.EmailsSent != 0 || fx.ToolCalls["send_email"] != 0 {
		t.Fatalf("the simulated MCP server ran %+v for refused requests", fx)
	}
}
