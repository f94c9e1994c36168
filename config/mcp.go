package config

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// MCPConfig declares the upstream MCP servers the gateway proxies at
// /mcp/NAME (DESIGN.md §9).
type MCPConfig struct {
	// Servers by name; the name is the last segment of the gateway path.
	Servers map[string]MCPServer `yaml:"servers"`
	// MaxMessageBytes bounds one JSON-RPC message a client posts (413 past
	// it); 0 is DefaultMCPMaxMessageBytes.
	MaxMessageBytes int64 `yaml:"max_message_bytes"`
	// Resume bounds the SSE streams the gateway keeps so that a client
	// whose connection broke can resume one (GET with Last-Event-ID).
	Resume MCPResume `yaml:"resume"`
}

// MCPResume is the retention of the gateway's answer streams: every event
// of a stream the gateway answered a POST with is kept, in the gateway's
// memory, until Retention after the stream ended, within MaxBytes for all
// streams together (the oldest streams are dropped first past it).
type MCPResume struct {
	// Retention is how long a stream stays resumable after its last event;
	// 0 is DefaultMCPResumeRetention.
	Retention time.Duration `yaml:"retention"`
	// MaxBytes bounds the events kept across all streams; 0 is
	// DefaultMCPResumeMaxBytes.
	MaxBytes int64 `yaml:"max_bytes"`
	// Disabled answers tool calls without a resumable stream (plain JSON
	// unless the server sends messages before the answer).
	Disabled bool `yaml:"disabled"`
}

// Defaults of mcp.resume.
const (
	DefaultMCPResumeRetention = 5 * time.Minute
	DefaultMCPResumeMaxBytes  = 64 << 20
)

// DefaultMCPMaxMessageBytes bounds a posted MCP message when
// mcp.max_message_bytes is not set.
const DefaultMCPMaxMessageBytes = 4 << 20

// MCPServer is one upstream MCP server: exactly one of a Streamable HTTP
// endpoint (URL, with Headers sent on every request — credentials stay
// here, never in a client's hands) or a stdio server the gateway runs
// itself (Command, with Env and Dir).
type MCPServer struct {
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Command runs a stdio MCP server: the program and its arguments. The
	// gateway starts it on first use, speaks newline-delimited JSON-RPC
	// over its stdin and stdout, and starts it again after it exits.
	Command []string `yaml:"command"`
	// Env sets variables of the command's environment. Of the gateway's
	// own environment only HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG and
	// TMPDIR are passed on: the provider keys it holds are not.
	Env map[string]string `yaml:"env"`
	// Dir is the command's working directory; empty is the gateway's.
	Dir string `yaml:"dir"`
	// Tools overrides, per tool name, the policy the server's own
	// annotations give.
	Tools map[string]MCPTool `yaml:"tools"`
}

// MCPTool is the configured policy of one tool.
type MCPTool struct {
	// Policy is "read_only" (identical concurrent calls run once; with
	// CacheTTL, repeats are answered from a tenant-scoped cache) or
	// "side_effect" (at most once per idempotency key). Empty keeps the
	// policy the tool's annotations give.
	Policy string `yaml:"policy"`
	// CacheTTL caches a read-only tool's results for this long; 0 only
	// coalesces concurrent calls.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// DedupeWindow, for a side-effect tool called without an idempotency
	// key, replays the first result of an identical call (same tenant,
	// session, arguments) made within the window instead of executing it
	// again; 0 executes every call and counts suspected duplicates.
	DedupeWindow time.Duration `yaml:"dedupe_window"`
}

// MCP tool policies.
const (
	MCPReadOnly   = "read_only"
	MCPSideEffect = "side_effect"
)

var mcpNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// finish validates the MCP servers.
func (c *MCPConfig) finish() error {
	if c.MaxMessageBytes < 0 {
		return fmt.Errorf("mcp.max_message_bytes must be ≥ 0")
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMCPMaxMessageBytes
	}
	if c.Resume.Retention < 0 || c.Resume.MaxBytes < 0 {
		return fmt.Errorf("mcp.resume.retention and mcp.resume.max_bytes must be ≥ 0")
	}
	if c.Resume.Retention == 0 {
		c.Resume.Retention = DefaultMCPResumeRetention
	}
	if c.Resume.MaxBytes == 0 {
		c.Resume.MaxBytes = DefaultMCPResumeMaxBytes
	}
	for name, s := range c.Servers {
		if !mcpNameRE.MatchString(name) {
			return fmt.Errorf("mcp.servers.%s: a server name is 1 to 64 letters, digits, '_', '.', '-'", name)
		}
		if err := s.checkTransport(name); err != nil {
			return err
		}
		for tool, t := range s.Tools {
			switch t.Policy {
			case "", MCPReadOnly, MCPSideEffect:
			default:
				return fmt.Errorf("mcp.servers.%s.tools.%s.policy %q: want %s or %s", name, tool, t.Policy, MCPReadOnly, MCPSideEffect)
			}
			if t.CacheTTL < 0 || t.DedupeWindow < 0 {
				return fmt.Errorf("mcp.servers.%s.tools.%s: cache_ttl and dedupe_window must be ≥ 0", name, tool)
			}
		}
	}
	return nil
}

// checkTransport validates that s declares exactly one transport, and
// that transport's options.
func (s *MCPServer) checkTransport(name string) error {
	switch {
	case s.URL != "" && s.Command != nil:
		return fmt.Errorf("mcp.servers.%s: url and command are exclusive: url is a Streamable HTTP server, command a stdio server the gateway runs", name)
	case s.URL == "" && s.Command == nil:
		return fmt.Errorf("mcp.servers.%s: url or command is required", name)
	case s.Command != nil:
		if len(s.Command) == 0 || strings.TrimSpace(s.Command[0]) == "" {
			return fmt.Errorf("mcp.servers.%s.command: the program is empty: want [\"program\", \"arg\", ...]", name)
		}
		if len(s.Headers) > 0 {
			return fmt.Errorf("mcp.servers.%s.headers: headers apply to a url server, not a command", name)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("mcp.servers.%s.env: %q is not a variable name", name, k)
			}
		}
		return nil
	}
	if s.Env != nil || s.Dir != "" {
		return fmt.Errorf("mcp.servers.%s: env and dir apply to a command server, not a url", name)
	}
	if err := checkURL(s.URL); err != nil {
		return fmt.Errorf("mcp.servers.%s.url: %w", name, err)
	}
	for h := range s.Headers {
		if http.CanonicalHeaderKey(h) == "" {
			return fmt.Errorf("mcp.servers.%s.headers: empty header name", name)
		}
	}
	return nil
}
