// Command stdiosim serves the simulated MCP server over stdio for the MCP
// stage's tests. Its environment:
//
//	STDIOSIM_CALLS  a file it appends each tools/call's tool name to, on
//	                arrival, before the server runs it
//	STDIOSIM_PIDS   a file it appends its process id to when it starts
//	STDIOSIM_GATE   a file whose existence every tool call waits for
//	STDIOSIM_ASK    "1" adds the tool "ask"
//
// With STDIOSIM_ASK, besides the simulated server's tools it offers "ask", which asks its
// client before it answers: a sampling/createMessage with the question,
// then an elicitation/create, both carrying the call's progress token in
// _meta; the result says what the client answered to each.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog/sim"
)

func main() {
	appendLine(os.Getenv("STDIOSIM_PIDS"), fmt.Sprint(os.Getpid()))
	fmt.Fprintln(os.Stderr, "stdiosim: serving the simulated MCP server on stdin and stdout")
	cfg := sim.Config{MCP: true}
	if gate := os.Getenv("STDIOSIM_GATE"); gate != "" {
		cfg.MCPLatency = time.Nanosecond
		cfg.Sleep = func(ctx context.Context, _ time.Duration) error {
			for {
				if _, err := os.Stat(gate); err == nil {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(2 * time.Millisecond):
				}
			}
		}
	}
	s := sim.New(cfg)
	if os.Getenv("STDIOSIM_ASK") == "1" {
		mcp.AddTool(s.MCPServer(), &mcp.Tool{Name: "ask", Description: "Ask the client (sampling, then elicitation) and report its answers."}, ask)
	}
	// Every message passes through here, so the calls file counts the tool
	// calls that reached the process.
	pr, pw := io.Pipe()
	go func() {
		in := bufio.NewReader(os.Stdin)
		for {
			line, err := in.ReadBytes('\n')
			if len(line) > 0 {
				var m struct {
					Method string `json:"method"`
					Params struct {
						Name string `json:"name"`
					} `json:"params"`
				}
				if json.Unmarshal(line, &m) == nil && m.Method == "tools/call" {
					appendLine(os.Getenv("STDIOSIM_CALLS"), m.Params.Name)
				}
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.Close()
				return
			}
		}
	}()
	if err := s.ServeMCP(context.Background(), &mcp.IOTransport{Reader: pr, Writer: nopCloser{os.Stdout}}); err != nil {
		fmt.Fprintln(os.Stderr, "stdiosim:", err)
	}
}

// AskInput is the argument of the ask tool.
type AskInput struct {
	Question string `json:"question" jsonschema:"what to ask the client"`
}

func ask(ctx context.Context, req *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, any, error) {
	var meta mcp.Meta
	if tok := req.Params.GetProgressToken(); tok != nil {
		meta = mcp.Meta{"progressToken": tok}
	}
	failed := func(what string, err error) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: what + ": " + err.Error()}}}, nil, nil
	}
	msg, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Meta: meta, MaxTokens: 16,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Question}}}})
	if err != nil {
		return failed("sampling", err)
	}
	sampled := ""
	if tc, ok := msg.Content.(*mcp.TextContent); ok {
		sampled = tc.Text
	}
	el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Meta: meta, Message: "confirm: " + in.Question})
	if err != nil {
		return failed("elicitation", err)
	}
	content, _ := json.Marshal(el.Content)
	text := fmt.Sprintf("sampled %q; elicitation %s %s", sampled, el.Action, content)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

func appendLine(path, line string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiosim:", err)
		os.Exit(1)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
