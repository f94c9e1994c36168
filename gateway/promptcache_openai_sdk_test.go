package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog/ledger"
)

// The official OpenAI SDK, unmodified, through a real gateway to the
// simulated provider, asking for the provider's cache verdict with
// Groundhog-Prompt-Cache-Diagnostics: provider: a timestamp moved in the
// instructions (streamed: the verdict on response.completed, the break
// header a trailer) and a changed tool list each carry both verdicts, and
// the day's report shows them side by side.
func TestOpenAISDKProviderCacheDiagnostics(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	client := openaiClient(h, option.WithHeader("Groundhog-Operation", "support"),
		option.WithHeader("Groundhog-Prompt-Cache-Diagnostics", "provider"))
	policy := "You are a support agent for Acme.\n" + words(1500, "policy")
	params := func(now string, tools ...string) responses.ResponseNewParams {
		p := responses.ResponseNewParams{
			Model:           "sim-small",
			Instructions:    openai.String("Now: " + now + ". " + policy),
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Where is order 42?")},
			MaxOutputTokens: openai.Int(20),
		}
		for _, n := range tools {
			p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
				Name: n, Parameters: map[string]any{"type": "object"}, Strict: openai.Bool(false)}})
		}
		return p
	}

	first, err := client.Responses.New(ctx, params("2026-12-05T09:00:00Z", "lookup"))
	if err != nil {
		t.Fatal(err)
	}
	if first.PromptCacheDiagnostics.Type != "" {
		t.Errorf("the first turn got diagnostics %s", first.PromptCacheDiagnostics.RawJSON())
	}

	// Streamed: the instructions' timestamp moved.
	var res *http.Response
	stream := client.Responses.NewStreaming(ctx, params("2026-12-05T09:01:00Z", "lookup"), option.WithResponseInto(&res))
	var completed responses.Response
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.completed" {
			completed = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if d := completed.PromptCacheDiagnostics; d.Type != "cache_miss" || d.Reason != "input_changed" || d.CacheMissedTokens <= 0 {
		t.Errorf("streamed verdict %s, want an input_changed cache_miss", d.RawJSON())
	}
	if got, want := res.Trailer.Get("Groundhog-Prompt-Cache-Break"), "volatile_in_prefix; provider=input_changed"; got != want {
		t.Errorf("stream trailer Groundhog-Prompt-Cache-Break %q, want %q", got, want)
	}

	// The tool list changed.
	third, err := client.Responses.New(ctx, params("2026-12-05T09:01:00Z", "lookup", "refund"), option.WithResponseInto(&res))
	if err != nil {
		t.Fatal(err)
	}
	if d := third.PromptCacheDiagnostics; d.Type != "cache_miss" || d.Reason != "tools_changed" {
		t.Errorf("verdict %s, want tools_changed", d.RawJSON())
	}
	if got, want := res.Header.Get("Groundhog-Prompt-Cache-Break"), "tools_changed; provider=tools_changed"; got != want {
		t.Errorf("Groundhog-Prompt-Cache-Break %q, want %q", got, want)
	}

	// A repeat of the last turn: the provider reads it all.
	if _, err := client.Responses.New(ctx, params("2026-12-05T09:01:00Z", "lookup", "refund"),
		option.WithHeader("Groundhog-Cache", "bypass"), option.WithResponseInto(&res)); err != nil {
		t.Fatal(err)
	}
	if got := res.Header.Get("Groundhog-Prompt-Cache-Break"); got != "" {
		t.Errorf("a repeat broke the cache: %q", got)
	}

	h.ledgerRows() // flushes the ledger
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log(text[strings.Index(text, "prompt-cache verdicts"):])
	for _, line := range []string{
		"groundhog_cause     provider_reason  calls  lost_tokens",
		"(no break)          cache_hit        1      0",
		"tools_changed       tools_changed    1      ",
		"volatile_in_prefix  input_changed    1      ",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("the report lacks %q", line)
		}
	}
}
