package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An MCP server declares exactly one transport — url (Streamable HTTP) or
// command (a stdio server the gateway runs) — and only that transport's
// options; anything else is an error naming the server and the fix.
func TestMCPServerTransport(t *testing.T) {
	for _, tc := range []struct {
		name, server, err string
	}{
		{"url", `{url: "http://127.0.0.1:9/mcp", headers: {Authorization: "Bearer x"}}`, ""},
		{"command", `{command: ["mcp-server", "--stdio"], env: {TOKEN: "x"}, dir: "/tmp"}`, ""},
		{"both", `{url: "http://127.0.0.1:9/mcp", command: ["mcp-server"]}`, "mcp.servers.s: url and command are exclusive"},
		{"neither", `{tools: {search: {policy: read_only}}}`, "mcp.servers.s: url or command is required"},
		{"empty command", `{command: []}`, "mcp.servers.s.command: the program is empty"},
		{"blank program", `{command: [" ", "--stdio"]}`, "mcp.servers.s.command: the program is empty"},
		{"headers on a command", `{command: ["mcp-server"], headers: {Authorization: "Bearer x"}}`, "mcp.servers.s.headers: headers apply to a url server"},
		{"env on a url", `{url: "http://127.0.0.1:9/mcp", env: {TOKEN: "x"}}`, "mcp.servers.s: env and dir apply to a command server"},
		{"bad env name", `{command: ["mcp-server"], env: {"A=B": "x"}}`, `mcp.servers.s.env: "A=B" is not a variable name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "groundhog.yaml")
			if err := os.WriteFile(p, []byte("mcp:\n  servers:\n    s: "+tc.server+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c := Default()
			if err := c.LoadFile(p); err != nil {
				t.Fatal(err)
			}
			err := c.Finish()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("valid server refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
