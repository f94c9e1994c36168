package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// fullBill is GET /sim/v1/bill as a user reads it, every field.
type fullBill struct {
	Calls              int64  `json:"calls"`
	InputTokens        int64  `json:"input_tokens"`
	CachedInputTokens  int64  `json:"cached_input_tokens"`
	CacheWriteTokens   int64  `json:"cache_write_tokens"`
	CacheWrite1hTokens int64  `json:"cache_write_1h_tokens"` // absent on a sim without it: 0
	OutputTokens       int64  `json:"output_tokens"`
	USD                string `json:"usd"`
	InputUSD           string `json:"input_usd"` // all input: uncached, reads and writes
}

func readFullBill(t *testing.T, h *harness) fullBill {
	t.Helper()
	res, err := http.Get(h.SimURL + "/sim/v1/bill")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b fullBill
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// mustMoney returns base − the dollar amount s, as a six-decimal string.
func mustMoney(t *testing.T, s string, base groundhog.Money) string {
	t.Helper()
	m, err := groundhog.ParseMoney(s)
	if err != nil {
		t.Fatalf("bill amount %q: %v", s, err)
	}
	return (base - m).String()
}

// words returns n distinct one-token words (the sim's tokenizer: one token
// per started 4 bytes of a word).
func words(n int, tag string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d ", tag[:1], i%1000)
	}
	return b.String()
}

// TestPromptCacheReportEqualsSimBill sends a mixed workload through the
// gateway to the simulated provider with the official SDKs — chat and
// responses with OpenAI's automatic caching (prefixes of 1,024 tokens and
// more), messages with Anthropic cache_control breakpoints (5m and 1h),
// streams and bodies, a prefix under the minimum and an exact-cache hit —
// and checks that every prompt-cache figure of the report equals what the
// sim billed, to the micro-dollar (in fact to the picodollar).
func TestPromptCacheReportEqualsSimBill(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	oa := openaiClient(h)
	an := anthropicClient(h)
	op := func(name string) option.RequestOption { return option.WithHeader("Groundhog-Operation", name) }
	aop := func(name string) aoption.RequestOption { return aoption.WithHeader("Groundhog-Operation", name) }
	// The prefix: about 3,000 tokens of instructions shared by each shape's calls.
	prefix := "You are the support agent. " + words(3000, "rule")

	// chat: four calls sharing the system prompt (the first writes, the
	// next read), one of them streamed with usage; then an exact repeat
	// answered by the gateway's cache (no provider call, zero usage).
	for i := range 4 {
		p := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(prefix), openai.UserMessage(fmt.Sprintf("question %d about the invoice", i))}}
		if i == 2 {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			st := oa.Chat.Completions.NewStreaming(ctx, p, op("chat-agent"))
			for st.Next() {
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		hdr := []option.RequestOption{op("chat-agent")}
		if i == 3 {
			hdr = append(hdr, option.WithHeader("Groundhog-Cache", "use"))
		}
		c, err := oa.Chat.Completions.New(ctx, p, hdr...)
		if err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if c.Usage.PromptTokensDetails.CachedTokens == 0 {
				t.Fatalf("chat call %d read nothing from the prompt cache: %s", i, c.Usage.RawJSON())
			}
			var hit *http.Response
			if _, err := oa.Chat.Completions.New(ctx, p, append(hdr, option.WithResponseInto(&hit))...); err != nil {
				t.Fatal(err)
			}
			if hit.Header.Get("Groundhog-Cache") != "hit" {
				t.Fatalf("repeat was %q, want an exact-cache hit", hit.Header.Get("Groundhog-Cache"))
			}
		}
	}
	// responses: three calls sharing the instructions, the last streamed.
	for i := range 3 {
		p := responses.ResponseNewParams{Model: "sim-small", Instructions: openai.String(prefix),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fmt.Sprintf("order %d status", i))}}
		if i == 2 {
			st := oa.Responses.NewStreaming(ctx, p, op("responses-agent"))
			for st.Next() {
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := oa.Responses.New(ctx, p, op("responses-agent")); err != nil {
			t.Fatal(err)
		}
	}
	// messages: a 5m breakpoint after the system block, then a 1h one on a
	// second prefix; the last call of each streamed.
	for _, ttl := range []anthropic.CacheControlEphemeralTTL{anthropic.CacheControlEphemeralTTLTTL5m, anthropic.CacheControlEphemeralTTLTTL1h} {
		sys := anthropic.TextBlockParam{Text: string(ttl) + " " + prefix, CacheControl: anthropic.CacheControlEphemeralParam{TTL: ttl}}
		for i := range 3 {
			p := anthropic.MessageNewParams{Model: "sim-small", MaxTokens: 50, System: []anthropic.TextBlockParam{sys},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("ticket %d", i)))}}
			if i == 2 {
				st := an.Messages.NewStreaming(ctx, p, aop("messages-agent"))
				for st.Next() {
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := an.Messages.New(ctx, p, aop("messages-agent")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Under the minimum: nothing cached.
	if _, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-small",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("short")}}, op("short")); err != nil {
		t.Fatal(err)
	}

	rep, pc := checkReportEqualsBill(t, h, time.Now())
	if pc.Saved <= 0 {
		t.Errorf("caching a 3,000-token prefix over 12 calls saved %s", pc.Saved)
	}
	// Every shape read from the prompt cache, and the short call did not.
	for _, r := range rep.Operations {
		reads := r.PromptCache.CachedReadTokens
		if (r.Operation == "short") != (reads == 0) {
			t.Errorf("operation %s read %d prompt-cache tokens", r.Operation, reads)
		}
	}
}

// checkReportEqualsBill checks every prompt-cache figure of the report of
// day against the sim's bill (one model, sim-small, so one price) and
// returns the report.
func checkReportEqualsBill(t *testing.T, h *harness, day time.Time) (*ledger.Report, ledger.PromptCache) {
	t.Helper()
	ctx := context.Background()
	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: day})
	if err != nil {
		t.Fatal(err)
	}
	bill := readFullBill(t, h)
	billUSD, err := groundhog.ParseMoney(bill.USD)
	if err != nil {
		t.Fatal(err)
	}
	pc := rep.Total.PromptCache
	t.Logf("sim bill %+v; report: read %d write %d uncached %d hit %.4f saved %s", bill,
		pc.CachedReadTokens, pc.CacheWriteTokens, pc.UncachedInputTokens, pc.HitRatio, pc.Saved)
	if bill.CachedInputTokens == 0 || bill.CacheWriteTokens == 0 {
		t.Fatalf("the workload did not exercise the prompt cache: bill %+v", bill)
	}
	// What the same tokens would have cost without a prompt cache, from the
	// bill's totals alone (one model, so one price).
	p, _ := h.Cfg.PriceTable.Lookup("sim-small")
	none := groundhog.Money(bill.InputTokens*p.Input + bill.OutputTokens*p.Output)
	checks := []struct {
		name      string
		got, want string
	}{
		{"cached_read_tokens", fmt.Sprint(pc.CachedReadTokens), fmt.Sprint(bill.CachedInputTokens)},
		{"cache_write_tokens", fmt.Sprint(pc.CacheWriteTokens), fmt.Sprint(bill.CacheWriteTokens)},
		{"cache_write_1h_tokens", fmt.Sprint(pc.CacheWrite1hTokens), fmt.Sprint(bill.CacheWrite1hTokens)},
		{"uncached_input_tokens", fmt.Sprint(pc.UncachedInputTokens), fmt.Sprint(bill.InputTokens - bill.CachedInputTokens - bill.CacheWriteTokens)},
		{"input tokens", fmt.Sprint(pc.InputTokens), fmt.Sprint(bill.InputTokens)},
		{"prompt_cache_hit_ratio", fmt.Sprintf("%.4f", pc.HitRatio), fmt.Sprintf("%.4f", math.Round(float64(bill.CachedInputTokens)/float64(bill.InputTokens)*1e4)/1e4)},
		{"prompt_cache_saved_usd", pc.Saved.String(), (none - billUSD).String()},
		// The HTTP bill rounds to the micro-dollar; the sim's own exact
		// figure agrees to the picodollar.
		{"prompt_cache_saved picodollars", fmt.Sprint(int64(pc.Saved)), fmt.Sprint(int64(none - h.Sim.Bill().USD))},
		{"spend_usd", rep.Total.Spend.String(), bill.USD},
		// The input side alone: uncached-rate input minus what the sim
		// billed for input is the net saving too.
		{"prompt_cache_saved_usd vs input_usd", pc.Saved.String(), mustMoney(t, bill.InputUSD, groundhog.Money(bill.InputTokens*p.Input))},
		{"prompt_cache_unknown_calls", fmt.Sprint(pc.UnknownCalls), "0"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("report %s = %s, sim bill says %s", c.name, c.got, c.want)
		}
	}
	// The JSON report (what GET /groundhog/v1/report serves) carries the same.
	var b strings.Builder
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Total map[string]json.RawMessage `json:"total"`
	}
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if got := string(doc.Total["prompt_cache_saved_usd"]); got != (none - billUSD).String() {
		t.Errorf("JSON prompt_cache_saved_usd = %s, want %s", got, (none - billUSD).String())
	}
	if got := string(doc.Total["cached_read_tokens"]); got != fmt.Sprint(bill.CachedInputTokens) {
		t.Errorf("JSON cached_read_tokens = %s, want %d", got, bill.CachedInputTokens)
	}
	return rep, pc
}
