package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/groundhog-ai/groundhog"
)

// A tool with defer_loading is not part of Anthropic's cached prompt (tool
// search loads it into the conversation when it is found): an agent loop
// that adds one on its second turn keeps its prefix. Through the gateway
// with breakpoint injection, no turn reports a break and groundhog's
// predicted read equals the provider's cache_read_input_tokens on every
// turn. The same tool added without defer_loading is a tools_changed break.
func TestPromptCacheDeferredToolKeepsPrefix(t *testing.T) {
	send := func(t *testing.T, g *pcRig, c pcConvo) (*http.Response, int64) {
		t.Helper()
		var res *http.Response
		opts := []aoption.RequestOption{aoption.WithRequestBody("application/json", c.body()), aoption.WithResponseInto(&res)}
		for k, v := range g.hdr {
			opts = append(opts, aoption.WithHeader(k, v))
		}
		an := anthropicClient(g.h)
		msg, err := an.Messages.New(context.Background(), anthropic.MessageNewParams{}, opts...)
		if err != nil {
			t.Fatalf("messages call: %v", err)
		}
		return res, msg.Usage.CacheReadInputTokens
	}
	mail := pcTool{name: "send_mail", desc: "Send an email to the customer. " + words(200, "mail")}
	sys := baseAgent(groundhog.ShapeMessages).system
	cases := []struct {
		name     string
		deferred bool
		clock    bool   // the system prompt renders the time, which moves on turn 2
		want     string // turn 2's break
	}{
		{"deferred", true, false, ""},
		{"loaded", false, false, "tools_changed"},
		// The tool search list changed along with a real break: the
		// cause is the timestamp, not the tools.
		{"deferred_and_timestamp", true, true, "volatile_in_prefix"},
		{"loaded_and_timestamp", false, true, "tools_changed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newPCRig(t, true)
			c := baseAgent(groundhog.ShapeMessages)
			if tc.clock {
				c.system = "Now: 2026-12-01T09:00:00Z. " + sys
			}
			for i := range 3 {
				if i > 0 {
					c = c.next(i)
				}
				if i == 1 {
					tool := mail
					tool.deferred = tc.deferred
					// In the middle of the list: a deferred tool has no
					// place in the prompt wherever it stands.
					c.tools = []pcTool{c.tools[0], tool, c.tools[1], c.tools[2]}
					if tc.clock {
						c.system = "Now: 2026-12-01T09:00:30Z. " + sys
					}
				}
				res, simRead := send(t, g, c)
				read, _ := pcHeader(t, res)
				brk := res.Header.Get("Groundhog-Prompt-Cache-Break")
				t.Logf("turn %d: %s break=%q, provider read %d", i+1, res.Header.Get("Groundhog-Prompt-Cache"), brk, simRead)
				want := ""
				if i == 1 {
					want = tc.want
				}
				if brk != want {
					t.Fatalf("turn %d: break %q, want %q", i+1, brk, want)
				}
				if read != simRead {
					t.Fatalf("turn %d: groundhog reports read %d, the provider read %d", i+1, read, simRead)
				}
				if want == "" && i > 0 && simRead == 0 {
					t.Fatalf("turn %d: the provider read nothing", i+1)
				}
			}
		})
	}
}
