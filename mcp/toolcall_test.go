package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/mcp"
)

func emailCall(key string) *sdk.CallToolParams {
	p := &sdk.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "ana@example.com", "subject": "invoice"}}
	if key != "" {
		p.Meta = sdk.Meta{mcp.MetaIdempotencyKey: key}
	}
	return p
}

// An agent sends an email with an idempotency key; the answer is lost on
// the way back (the connection drops after the server executed it) and the
// agent retries five times: one email, five identical results, and the
// ledger shows 1 executed + 5 replayed.
func TestSendEmailWithKeyRunsOnceAcrossRetries(t *testing.T) {
	e := newEnv(t)
	var dropped sync.Once
	drop := func(body string) bool {
		hit := false
		if strings.Contains(body, `"tools/call"`) {
			dropped.Do(func() { hit = true })
		}
		return hit
	}
	cs := e.client(bearer{key: e.KeyA, drop: drop}, nil)
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, emailCall("email-42")); err == nil {
		t.Fatal("the first call's answer was dropped, yet the client got one")
	}
	var results []string
	for i := 0; i < 5; i++ {
		res, err := cs.CallTool(ctx, emailCall("email-42"))
		if err != nil {
			t.Fatalf("retry %d: %v", i+1, err)
		}
		results = append(results, text(t, res))
	}
	for _, r := range results {
		if r != "sent email-1 to ana@example.com" {
			t.Fatalf("retries answered %q, want the first execution's result every time", results)
		}
	}
	if fx := e.effects(); fx.EmailsSent != 1 {
		t.Fatalf("%d emails sent, want 1", fx.EmailsSent)
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 1 || got[groundhog.OutcomeReplayed] != 5 || len(got) != 2 {
		t.Fatalf("ledger %v, want 1 upstream + 5 replayed", got)
	}
}

// When the MCP server itself drops the connection after executing, the
// gateway cannot know whether the email went out: it stores "outcome
// unknown" under the key and never runs it again for a retry.
func TestSendEmailServerDropIsNeverRunTwice(t *testing.T) {
	e := newEnv(t)
	e.Sim.DropAfterExecute(1)
	cs := e.client(bearer{key: e.KeyA}, nil)
	ctx := context.Background()
	var msgs []string
	for i := 0; i < 6; i++ {
		_, err := cs.CallTool(ctx, emailCall("email-7"))
		var je *jsonrpc.Error
		if !errors.As(err, &je) || !strings.Contains(je.Message, "outcome unknown") {
			t.Fatalf("call %d: %v, want the stored outcome-unknown error", i+1, err)
		}
		msgs = append(msgs, je.Message)
	}
	if fx := e.effects(); fx.EmailsSent != 1 {
		t.Fatalf("%d emails sent, want 1 (the one the dropped call sent)", fx.EmailsSent)
	}
	if got := e.rows(); got[groundhog.OutcomeError] != 1 || got[groundhog.OutcomeReplayed] != 5 {
		t.Fatalf("ledger %v, want 1 error + 5 replayed", got)
	}
}

// Without a key every call executes — identical text is not the same
// intention — and the repeat is booked as a suspected duplicate.
func TestSendEmailWithoutKeySuspectedDuplicate(t *testing.T) {
	e := newEnv(t)
	cs := e.client(bearer{key: e.KeyA}, nil)
	for i := 0; i < 2; i++ {
		if _, err := cs.CallTool(context.Background(), emailCall("")); err != nil {
			t.Fatal(err)
		}
	}
	if fx := e.effects(); fx.EmailsSent != 2 {
		t.Fatalf("%d emails sent, want 2", fx.EmailsSent)
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 1 || got[groundhog.OutcomeSuspectedDuplicate] != 1 {
		t.Fatalf("ledger %v, want 1 upstream + 1 suspected_duplicate", got)
	}
}

// A key reused with other arguments is a JSON-RPC error naming the
// conflict, and nothing is executed for it.
func TestKeyReusedWithOtherArguments(t *testing.T) {
	e := newEnv(t)
	cs := e.client(bearer{key: e.KeyA}, nil)
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, emailCall("k1")); err != nil {
		t.Fatal(err)
	}
	other := emailCall("k1")
	other.Arguments = map[string]any{"to": "bob@example.com", "subject": "invoice"}
	_, err := cs.CallTool(ctx, other)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, `idempotency key "k1" was already used with other arguments`) {
		t.Fatalf("reused key: %v, want the conflict named", err)
	}
	if fx := e.effects(); fx.EmailsSent != 1 {
		t.Fatalf("%d emails sent, want 1", fx.EmailsSent)
	}
}

// 50 identical concurrent searches make one upstream call and get one
// result; other arguments, or another tenant, never share it.
func TestConcurrentSearchCoalesced(t *testing.T) {
	e := newEnv(t, withGate())
	csA := e.client(bearer{key: e.KeyA}, nil)
	ctx := context.Background()
	const n = 50
	results := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	search := func(cs *sdk.ClientSession, q string) (string, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": q}})
		if err != nil {
			return "", err
		}
		return text(t, res), nil
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = search(csA, "otters")
		}()
	}
	<-e.gate.arrived // the leader reached the server
	waitFollowers(t, e, n)
	e.gate.open()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] != results[0] {
			t.Fatalf("call %d: %q, %v; want %q", i, results[i], errs[i], results[0])
		}
	}
	if got := e.effects().ToolCalls["search"]; got != 1 {
		t.Fatalf("%d upstream search calls for %d identical concurrent ones, want 1", got, n)
	}
	if _, err := search(csA, "beavers"); err != nil {
		t.Fatal(err)
	}
	csB := e.client(bearer{key: e.KeyB}, nil)
	if _, err := search(csB, "otters"); err != nil {
		t.Fatal(err)
	}
	if got := e.effects().ToolCalls["search"]; got != 3 {
		t.Fatalf("%d upstream search calls, want 3: other arguments and another tenant run on their own", got)
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 3 || got[groundhog.OutcomeCoalesced] != n-1 {
		t.Fatalf("ledger %v, want 3 upstream + %d coalesced", got, n-1)
	}
}

// waitFollowers waits until every one of n calls has reached the gateway's
// stage (one leader waits upstream, the others on it).
func waitFollowers(t *testing.T, e *env, n int) {
	t.Helper()
	hash, err := mcp.CallHash("alpha", "sim", "search", []byte(`{"query":"otters"}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; e.MCP.Followers("alpha", hash) < n-1; i++ {
		if i > 1_000_000 {
			t.Fatal("the calls never all reached the gateway")
		}
		runtimeGosched()
	}
}

// Bad input gets a clear error and executes nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"malformed", "sim", `{"jsonrpc":"2.0","id":1,"method":`, http.StatusBadRequest, "malformed JSON-RPC"},
		{"not 2.0", "sim", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"send_email"}}`, http.StatusBadRequest, `must be \"2.0\"`},
		{"batch", "sim", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}]`, http.StatusBadRequest, "batches are not supported"},
		{"unknown server", "nope", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email"}}`, http.StatusNotFound, `unknown MCP server \"nope\"`},
		{"oversized", "sim", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_email","arguments":{"body":"` + strings.Repeat("x", 70<<10) + `"}}}`, http.StatusRequestEntityTooLarge, "max_message_bytes"},
		{"no tool name", "sim", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, http.StatusBadRequest, "need a tool name"},
		{"object id", "sim", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`, http.StatusBadRequest, "id must be a string, a number or null"},
		{"array id", "sim", `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, http.StatusBadRequest, "id must be a string, a number or null"},
		{"boolean id", "sim", `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, http.StatusBadRequest, "id must be a string, a number or null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.URL+mcp.PathPrefix+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+e.KeyA)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b := new(strings.Builder)
			_, _ = fmt.Fprint(b, readAll(res))
			if res.StatusCode != c.status || !strings.Contains(b.String(), c.want) || !strings.Contains(b.String(), `"error"`) {
				t.Fatalf("status %d body %s; want %d with %q", res.StatusCode, b, c.status, c.want)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		res, err := http.Post(e.URL+mcp.PathPrefix+"sim", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d without a gateway key, want 401", res.StatusCode)
		}
	})
	if fx := e.effects(); fx.EmailsSent != 0 || len(fx.ToolCalls) != 0 {
		t.Fatalf("bad input executed tools: %+v", fx)
	}
}
