package mcp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/mcp"
	"github.com/groundhog-ai/groundhog/sim"
)

// askingClient is the official SDK's client with sampling and elicitation
// handlers that answer as who; hold, when set, is called by the sampling
// handler before it answers.
// It speaks MCP 2025-11-25: from 2026-07-28 on, a server asks its client
// in the tool's result (input requests), not with requests of its own.
func askingClient(e *env, key, who string, hold func(question string)) *sdk.ClientSession {
	e.t.Helper()
	cl := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			q := ""
			if len(r.Params.Messages) > 0 {
				if tc, ok := r.Params.Messages[0].Content.(*sdk.TextContent); ok {
					q = tc.Text
				}
			}
			if hold != nil {
				hold(q)
			}
			return &sdk.CreateMessageResult{Model: "client-model", Role: "assistant", Content: &sdk.TextContent{Text: who + " samples " + q}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": who + " confirms " + strings.TrimPrefix(r.Params.Message, "confirm: ")}}, nil
		},
	})
	cs, err := cl.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.URL + mcp.PathPrefix + "sim",
		HTTPClient: &http.Client{Transport: bearer{key: key}}, DisableStandaloneSSE: true, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// withAsk gives the stdio server the tool "ask".
func withAsk(s *config.MCPServer, _ *sim.Config) {
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	s.Env["STDIOSIM_ASK"] = "1"
}

func ask(question string, token any) *sdk.CallToolParams {
	p := &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"question": question}}
	if token != nil {
		p.Meta = sdk.Meta{"progressToken": token}
	}
	return p
}

// A stdio server's sampling and elicitation requests during a tool call
// reach the client that made the call, and the tool's result holds what
// that client answered.
func TestStdioServerRequestsReachTheCallingClient(t *testing.T) {
	e, _ := newStdioEnv(t, false, withAsk)
	cs := askingClient(e, e.KeyA, "alpha", nil)
	res, err := cs.CallTool(context.Background(), ask("which colour?", nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `sampled "alpha samples which colour?"; elicitation accept {"answer":"alpha confirms which colour?"}`
	if got := text(t, res); res.IsError || got != want {
		t.Fatalf("ask answered %q (error %v), want %q", got, res.IsError, want)
	}
}

// Two clients — two tenants — call the tool at the same time, each with
// its own progress token: each gets the server's requests of its own call
// (both are in flight together) and its own answers back.
func TestStdioServerRequestsOfConcurrentClients(t *testing.T) {
	e, _ := newStdioEnv(t, false, withAsk)
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	asked := make(map[string]string)
	var mu sync.Mutex
	hold := func(who string) func(string) {
		return func(q string) {
			mu.Lock()
			asked[who] = q
			mu.Unlock()
			arrived.Done()
			<-both // both sampling requests are out at once
		}
	}
	clients := map[string]*sdk.ClientSession{
		"alpha": askingClient(e, e.KeyA, "alpha", hold("alpha")),
		"beta":  askingClient(e, e.KeyB, "beta", hold("beta")),
	}
	got := make(map[string]string)
	var wg sync.WaitGroup
	for who, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), ask(who+"'s question", who+"-token"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got[who] = err.Error()
				return
			}
			got[who] = text(t, res)
		}()
	}
	wg.Wait()
	for _, who := range []string{"alpha", "beta"} {
		want := `sampled "` + who + ` samples ` + who + `'s question"; elicitation accept {"answer":"` + who + ` confirms ` + who + `'s question"}`
		if got[who] != want || asked[who] != who+"'s question" {
			t.Errorf("%s was asked %q and its call answered %q; want its own question and %q", who, asked[who], got[who], want)
		}
	}
}

// A server request that no client request in flight explains — two are,
// and it names neither — is answered by the gateway with an error, and
// the other client is not asked.
func TestStdioServerRequestWithoutItsClientIsRefused(t *testing.T) {
	e, _ := newStdioEnv(t, false, withAsk)
	holding := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	first := askingClient(e, e.KeyA, "alpha", func(string) {
		once.Do(func() { close(holding) })
		<-release
	})
	second := askingClient(e, e.KeyA, "alpha-2", nil)
	done := make(chan string, 1)
	go func() {
		res, err := first.CallTool(context.Background(), ask("first", nil))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- text(t, res)
	}()
	<-holding // the first call is in flight, its sampling request with its client
	res, err := second.CallTool(context.Background(), ask("second", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !res.IsError || !strings.Contains(got, "no client request in flight explains this one") {
		t.Fatalf("the unattributable request: %q (error %v), want the gateway's refusal", got, res.IsError)
	}
	close(release)
	if got, want := <-done, `sampled "alpha samples first"; elicitation accept {"answer":"alpha confirms first"}`; got != want {
		t.Fatalf("the first call answered %q, want %q", got, want)
	}
}
