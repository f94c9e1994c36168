package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/pricing"
)

// A streamed legacy completion (/v1/completions, a passthrough route) with
// the official OpenAI SDK: without stream_options.include_usage the stream
// carries no usage, and its ledger row and the report say its cost is
// unknown, never 0; with it, the final chunk's usage is read and the row is
// priced exactly.
func TestPassthroughStreamedCompletionCost(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		if r.URL.Path != "/v1/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"cmpl-2","object":"text_completion","created":1,"model":%q,"choices":[{"text":"Once upon a time","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`, req.Model)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, text := range []string{"Once", " upon", " a time"} {
			usage := ""
			if req.StreamOptions.IncludeUsage {
				usage = `,"usage":null`
			}
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":%q,\"choices\":[{\"text\":%q,\"index\":%d,\"logprobs\":null,\"finish_reason\":null}]%s}\n\n", req.Model, text, 0, usage)
		}
		if req.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":500,\"total_tokens\":1500}}\n\n", req.Model)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-provider"), withConfig(func(c *config.Config) {
		c.Prices = map[string]pricing.YAMLPrice{"legacy-instruct": {Input: "2.00", CachedInput: "0.50", CacheWrite: "2.00", Output: "8.00"}}
	}))
	client := openaiClient(h)
	stream := func(includeUsage bool) string {
		params := openai.CompletionNewParams{Model: "legacy-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Tell a story.")}}
		if includeUsage {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}
		s := client.Completions.NewStreaming(context.Background(), params, option.WithHeader("Groundhog-Operation", "story"))
		var text strings.Builder
		for s.Next() {
			if c := s.Current(); len(c.Choices) > 0 {
				text.WriteString(c.Choices[0].Text)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		return text.String()
	}
	if got := stream(false); got != "Once upon a time" {
		t.Fatalf("streamed text %q", got)
	}
	// The SDK stops at [DONE]; the relay books the row as the stream ends.
	waitFor(t, func() bool { return h.Running.Load() == 0 })
	rows := h.ledgerRows()
	if len(rows) != 1 || rows[0].Outcome != groundhog.OutcomePassthrough || rows[0].Cost != groundhog.CostUnknown || rows[0].FullCost != groundhog.CostUnknown {
		t.Fatalf("rows %+v: a stream whose usage was not read must cost unknown", rows)
	}
	rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.UnknownCostCalls != 1 {
		t.Fatalf("report: %d calls of unknown cost, want 1", rep.Total.UnknownCostCalls)
	}

	if got := stream(true); got != "Once upon a time" {
		t.Fatalf("streamed text %q", got)
	}
	waitFor(t, func() bool { return h.Running.Load() == 0 })
	rows = h.ledgerRows()
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	// 1,000 prompt tokens at $2.00/M + 500 completion tokens at $8.00/M.
	want := money(t, "0.006")
	priced := func(r groundhog.LedgerEntry) {
		t.Helper()
		if r.Model != "legacy-instruct" || r.Usage.InputTokens != 1000 || r.Usage.OutputTokens != 500 || r.Cost != want || r.FullCost != want {
			t.Fatalf("row %+v: want model legacy-instruct, usage 1000/500 and cost %s", r, want)
		}
	}
	priced(rows[1])

	// The same completion not streamed: its body's usage (prompt_tokens,
	// completion_tokens) is priced as well.
	c, err := client.Completions.New(context.Background(), openai.CompletionNewParams{Model: "legacy-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Tell a story.")}})
	if err != nil || len(c.Choices) != 1 || c.Choices[0].Text != "Once upon a time" {
		t.Fatalf("completion %+v, %v", c, err)
	}
	rows = h.ledgerRows()
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	priced(rows[2])
}
