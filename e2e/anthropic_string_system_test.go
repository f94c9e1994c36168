package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// An agent loop as the Anthropic Python SDK and LangChain send it — the
// system prompt and every message content a plain JSON string, no
// cache_control anywhere — through a real `groundhog serve` (built-in
// simulated provider) with Groundhog-Prompt-Cache-Breakpoints: auto. The
// Go SDK sends blocks, so the strings are set with option.WithJSONSet: the
// request on the wire is the string form. The first turn writes the
// ~8,400-token system prompt to the provider's cache, every later turn
// reads at least that much back, and the request hash is the one the
// same call has without injection.
func TestAnthropicSDKStringSystemPromptReadsFromTurnTwo(t *testing.T) {
	gw := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"))
	cl := anthropic.NewClient(option.WithBaseURL(gw.URL), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	var sys strings.Builder
	sys.WriteString("You are a careful research assistant. ")
	for i := range 8366 {
		fmt.Fprintf(&sys, "r%d ", i%1000) // one token a word
	}
	ctx := context.Background()
	var history []map[string]any
	for turn := range 5 {
		history = append(history, map[string]any{"role": "user", "content": fmt.Sprintf("Question %d: summarize section %d.", turn, turn)})
		send := func(inject string) (*anthropic.Message, *http.Response) {
			var res *http.Response
			msg, err := cl.Messages.New(ctx, anthropic.MessageNewParams{Model: "sim-small", MaxTokens: 60},
				option.WithJSONSet("system", sys.String()), option.WithJSONSet("messages", history),
				option.WithHeader("Groundhog-Operation", "research"),
				option.WithHeader("Groundhog-Prompt-Cache-Breakpoints", inject), option.WithResponseInto(&res))
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
			return msg, res
		}
		msg, res := send("auto")
		u := msg.Usage
		t.Logf("turn %d: input %d, cache read %d, cache write %d", turn, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
		if turn == 0 && (u.CacheCreationInputTokens < 8366 || u.CacheReadInputTokens != 0) {
			t.Errorf("turn 0: write %d read %d, want the system prompt (≥ 8,366 tokens) written", u.CacheCreationInputTokens, u.CacheReadInputTokens)
		}
		if turn > 0 && u.CacheReadInputTokens < 8366 {
			t.Errorf("turn %d: read %d, want at least the 8,366-token system prompt", turn, u.CacheReadInputTokens)
		}
		if got := res.Header.Get("Groundhog-Prompt-Cache"); got != fmt.Sprintf("read=%d write=%d", u.CacheReadInputTokens, u.CacheCreationInputTokens) {
			t.Errorf("turn %d: Groundhog-Prompt-Cache %q", turn, got)
		}
		if b := res.Header.Get("Groundhog-Prompt-Cache-Break"); b != "" {
			t.Errorf("turn %d: a break %q on a stable prefix", turn, b)
		}
		if turn == 0 {
			// The same call without injection has the same request hash.
			_, plain := send("off")
			if a, b := res.Header.Get("Groundhog-Request-Hash"), plain.Header.Get("Groundhog-Request-Hash"); a == "" || a != b {
				t.Errorf("request hash with injection %q, without %q", a, b)
			}
		}
		text := ""
		for _, c := range msg.Content {
			text += c.Text
		}
		history = append(history, map[string]any{"role": "assistant", "content": text})
	}
}
