package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where the simulated MCP server answers (Streamable HTTP).
const MCPPath = "/mcp"

// MCPEffectsPath reports the simulated MCP server's side effects (GET) —
// the emails send_email sent — and its tool calls.
const MCPEffectsPath = "/sim/v1/mcp/effects"

// MCPFaultsPath arms faults of the simulated MCP server (POST):
// {"drop_after_execute": n} makes the next n tool calls execute and then
// close the connection without an answer.
const MCPFaultsPath = "/sim/v1/mcp/faults"

// Email is one email the simulated send_email tool sent.
type Email struct {
	ID      string `json:"id"`
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// MCPEffects is what the simulated MCP server did: the emails it sent and
// how many times each tool ran.
type MCPEffects struct {
	EmailsSent int64            `json:"emails_sent"`
	Emails     []Email          `json:"emails"`
	ToolCalls  map[string]int64 `json:"tool_calls"`
}

// mcpSim is the simulated MCP server: a read-only search tool, a
// side-effect send_email tool, one resource and one prompt.
type mcpSim struct {
	s       *Server
	latency time.Duration
	srv     *mcp.Server
	handler http.Handler

	mu      sync.Mutex
	emails  []Email
	calls   map[string]int64
	dropped int // armed drop-after-execute faults left
}

// SearchInput is the argument of the simulated search tool.
type SearchInput struct {
	Query string `json:"query" jsonschema:"what to search for"`
}

// EmailInput is the argument of the simulated send_email tool.
type EmailInput struct {
	To      string `json:"to" jsonschema:"recipient address"`
	Subject string `json:"subject" jsonschema:"subject line"`
	Body    string `json:"body,omitempty" jsonschema:"message text"`
}

func newMCPSim(s *Server, latency time.Duration) *mcpSim {
	m := &mcpSim{s: s, latency: latency, calls: map[string]int64{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "groundhog-sim-mcp", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "search",
		Description: "Search the simulated corpus (read-only).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, m.search)
	f := false
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "send_email",
		Description: "Send an email (a side effect: every execution sends one).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f},
	}, m.sendEmail)
	srv.AddResource(&mcp.Resource{URI: "sim://readme", Name: "readme", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "the simulated MCP server's readme"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "summarize", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize " + r.Params.Arguments["topic"]}}}}, nil
		})
	m.srv = srv
	m.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return m
}

// begin counts a call of tool and waits the configured latency.
func (m *mcpSim) begin(ctx context.Context, tool string) error {
	m.mu.Lock()
	m.calls[tool]++
	m.mu.Unlock()
	return m.s.wait(ctx, m.latency)
}

func (m *mcpSim) search(ctx context.Context, req *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, any, error) {
	if err := m.begin(ctx, "search"); err != nil {
		return nil, nil, err
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 1, Message: "searched " + in.Query})
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("3 results for %q", in.Query)}}}, nil, nil
}

func (m *mcpSim) sendEmail(ctx context.Context, _ *mcp.CallToolRequest, in EmailInput) (*mcp.CallToolResult, any, error) {
	if err := m.begin(ctx, "send_email"); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	e := Email{ID: fmt.Sprintf("email-%d", len(m.emails)+1), To: in.To, Subject: in.Subject}
	m.emails = append(m.emails, e)
	m.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent " + e.ID + " to " + e.To}}}, nil, nil
}

// ServeMCP serves the simulated MCP server (Config.MCP) over t — an
// [mcp.StdioTransport], say — until the connection ends or ctx is done.
func (s *Server) ServeMCP(ctx context.Context, t mcp.Transport) error {
	return s.mcp.srv.Run(ctx, t)
}

// MCPServer returns the simulated MCP server (Config.MCP) itself, for a
// harness that adds tools of its own before serving it.
func (s *Server) MCPServer() *mcp.Server { return s.mcp.srv }

// Effects returns what the simulated MCP server did so far.
func (s *Server) Effects() MCPEffects {
	m := s.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	calls := make(map[string]int64, len(m.calls))
	for k, v := range m.calls {
		calls[k] = v
	}
	return MCPEffects{EmailsSent: int64(len(m.emails)), Emails: append([]Email{}, m.emails...), ToolCalls: calls}
}

// DropAfterExecute arms the next n tool calls to execute and then close the
// connection without an answer.
func (s *Server) DropAfterExecute(n int) {
	s.mcp.mu.Lock()
	s.mcp.dropped = n
	s.mcp.mu.Unlock()
}

// serveMCP answers the MCP endpoint, applying an armed drop-after-execute
// fault to a tools/call: the tool runs to its end, its answer is thrown
// away and the connection is aborted.
func (m *mcpSim) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		m.handler.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	drop := false
	if msg.Method == "tools/call" {
		m.mu.Lock()
		if m.dropped > 0 {
			m.dropped--
			drop = true
		}
		m.mu.Unlock()
	}
	if !drop {
		m.handler.ServeHTTP(w, r)
		return
	}
	m.handler.ServeHTTP(&discardWriter{h: http.Header{}}, r)
	panic(http.ErrAbortHandler)
}

func (m *mcpSim) serveFaults(w http.ResponseWriter, r *http.Request) {
	var f struct {
		DropAfterExecute int `json:"drop_after_execute"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&f); err != nil || f.DropAfterExecute < 0 {
		writeError(w, familyOpenAI, http.StatusBadRequest, `want {"drop_after_execute": n} with n >= 0`)
		return
	}
	m.s.DropAfterExecute(f.DropAfterExecute)
	writeJSON(w, http.StatusOK, f)
}

// discardWriter is the ResponseWriter of a call whose answer a fault
// throws away.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}
