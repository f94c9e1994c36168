package promptcache

import (
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// A tool with defer_loading is not in Anthropic's prompt: the prefix model
// skips it (same segments, same chain, same tokens as without it), and
// injection never marks a deferred tool.
func TestDeferredToolNotInPrefix(t *testing.T) {
	long := strings.Repeat("Search the knowledge base for articles. ", 150)
	tool := func(name string, deferred bool) string {
		s := `{"name":"` + name + `","description":"` + long + `","input_schema":{"type":"object"}`
		if deferred {
			s += `,"defer_loading":true`
		}
		return s + "}"
	}
	body := func(tools ...string) []byte {
		return []byte(`{"model":"claude-sonnet-4-5","max_tokens":10,"tools":[` + strings.Join(tools, ",") +
			`],"system":"You are a support agent.","messages":[{"role":"user","content":"hi"}]}`)
	}
	plain := body(tool("search", false), tool("lookup", false))
	withDeferred := body(tool("search", false), tool("lookup", false), tool("send_mail", true))
	a, err := Parse(groundhog.ShapeMessages, plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(groundhog.ShapeMessages, withDeferred)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Segments) != len(b.Segments) || a.Tokens != b.Tokens {
		t.Fatalf("a deferred tool changed the prefix: %d→%d segments, %d→%d tokens", len(a.Segments), len(b.Segments), a.Tokens, b.Tokens)
	}
	for i := range a.Segments {
		if a.Segments[i].Chain != b.Segments[i].Chain {
			t.Fatalf("segment %s differs with a deferred tool", b.Segments[i].Path())
		}
	}
	out, err := Inject(groundhog.ShapeMessages, "", withDeferred, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := markerPaths(t, groundhog.ShapeMessages, out)
	if len(got) == 0 || got[0] != "system[0]" {
		t.Fatalf("injected markers at %v, want the static one on the system prompt", got)
	}
	if strings.Contains(string(out[strings.Index(string(out), `"send_mail"`):strings.Index(string(out), `"system"`)]), "cache_control") {
		t.Fatalf("a marker was injected on the deferred tool: %s", out)
	}
	// The same tool loaded is part of the prompt.
	c, err := Parse(groundhog.ShapeMessages, body(tool("search", false), tool("lookup", false), tool("send_mail", false)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tokens <= a.Tokens || len(c.Segments) != len(a.Segments)+1 {
		t.Fatalf("a loaded tool: %d tokens, %d segments; want more than %d, %d", c.Tokens, len(c.Segments), a.Tokens, len(a.Segments))
	}
}
