package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// rmsg is a Responses message item of n one-token words (word repeated),
// with a prompt_cache_breakpoint after its text when bp is set. It costs
// n + MessageOverhead tokens; its breakpoint sits 3 + n tokens in.
type rmsg struct {
	role, word string
	n          int
	bp         bool
}

func (m rmsg) item() map[string]any {
	part := map[string]any{"type": "input_text", "text": longText(m.n, m.word)}
	if m.bp {
		part["prompt_cache_breakpoint"] = map[string]any{"mode": "explicit"}
	}
	return map[string]any{"type": "message", "role": m.role, "content": []any{part}}
}

// respReq is a Responses request body: top-level fields and input items
// (rmsg or raw maps).
func respReq(fields map[string]any, items ...any) string {
	b := map[string]any{"model": "sim-small"}
	for k, v := range fields {
		b[k] = v
	}
	in := make([]any, len(items))
	for i, it := range items {
		if m, ok := it.(rmsg); ok {
			in[i] = m.item()
		} else {
			in[i] = it
		}
	}
	b["input"] = in
	out, _ := json.Marshal(b)
	return string(out)
}

// cacheUsage is the prompt-cache part of a response's usage.
type cacheUsage struct{ prompt, cached, written int64 }

// callResponses posts body to /v1/responses and returns its cache usage
// (failing on a non-200).
func callResponses(t *testing.T, base, body string, headers ...string) (cacheUsage, map[string]any) {
	t.Helper()
	status, _, raw := post(t, base, "/v1/responses", body, headers...)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	var r struct {
		Usage struct {
			InputTokens        int64 `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens     int64 `json:"cached_tokens"`
				CacheWriteTokens int64 `json:"cache_write_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	d := r.Usage.InputTokensDetails
	var all map[string]any
	json.Unmarshal(raw, &all)
	return cacheUsage{r.Usage.InputTokens, d.CachedTokens, d.CacheWriteTokens}, all
}

var (
	explicitMode = map[string]any{"prompt_cache_options": map[string]any{"mode": "explicit"}}
	implicitMode = map[string]any{"prompt_cache_options": map[string]any{"mode": "implicit", "ttl": "30m"}}
)

// TestOpenAIExplicitCaching: one case per rule of prompt_cache_options
// mode on /v1/responses. Each step is a request and the cached and written
// tokens it must report; every case runs on a fresh sim.
func TestOpenAIExplicitCaching(t *testing.T) {
	sys := rmsg{"developer", "rule", 1200, true} // breakpoint at 1203, message end 1204
	sysNoBP := sys
	sysNoBP.bp = false
	q := func(word string, bp bool) rmsg { return rmsg{"user", word, 10, bp} }
	a := func(word string) rmsg { return rmsg{"assistant", word, 10, false} }
	// Positions: sys ends at 1204; each 10-word message adds 14 tokens,
	// its breakpoint 13 into it.
	type step struct {
		body            string
		cached, written int64
	}
	// many is a 1100-word message then n−1 one-token messages, each with
	// a breakpoint: at 1103, then every 5 tokens (1108, 1113, …).
	many := func(n int, word string) []any {
		items := []any{rmsg{"developer", "big", 1100, true}}
		for i := 1; i < n; i++ {
			items = append(items, rmsg{"user", fmt.Sprintf("%s%d", word, i), 1, true})
		}
		return items
	}
	addTools := map[string]any{"type": "additional_tools", "role": "developer",
		"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}}
	addToolsTokens := int64(MessageOverhead + CountTokens(`{"name":"lookup","parameters":{"type":"object"},"type":"function"}`))
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"explicit: a breakpoint is written, then read exactly", []step{
			{respReq(explicitMode, sys, q("one", false)), 0, 1203},
			{respReq(explicitMode, sys, q("two", false)), 1203, 0},
		}},
		{"explicit: no breakpoint, no caching", []step{
			{respReq(explicitMode, sysNoBP, q("one", false)), 0, 0},
			{respReq(explicitMode, sysNoBP, q("one", false)), 0, 0},
		}},
		{"explicit: a breakpoint under the minimum writes nothing", []step{
			{respReq(explicitMode, rmsg{"developer", "tiny", 1000, true}, q("one", false)), 0, 0},
			{respReq(explicitMode, rmsg{"developer", "tiny", 1000, true}, q("one", false)), 0, 0},
		}},
		{"explicit: no read at an unmarked prefix (breakpoint moved)", []step{
			{respReq(explicitMode, sysNoBP, q("one", true)), 0, 1204 + 13},
			// The turn-1 breakpoint is dropped: the new one finds nothing.
			{respReq(explicitMode, sysNoBP, q("one", false), a("ans"), q("two", true)), 0, 1204 + 14 + 14 + 13},
		}},
		{"explicit: moving breakpoints kept across turns", []step{
			{respReq(explicitMode, sys, q("one", true)), 0, 1204 + 13},
			{respReq(explicitMode, sys, q("one", true), a("ans"), q("two", true)), 1204 + 13, 14 + 14},
			{respReq(explicitMode, sys, q("one", true), a("ans"), q("two", true), a("more"), q("tri", true)), 1204 + 14 + 14 + 13, 14 + 14},
		}},
		{"explicit: at most 4 written, the latest", []step{
			// 6 breakpoints at 1103, 1108, …, 1128: 1113..1128 are written.
			{respReq(explicitMode, many(6, "m")...), 0, 1128},
			{respReq(explicitMode, many(2, "m")...), 0, 1108}, // 1108 was not written (nor 1103)
			{respReq(explicitMode, many(3, "m")...), 1113, 0},
		}},
		{"explicit: a read considers the latest 80 breakpoints", []step{
			{respReq(explicitMode, many(1, "m")...), 0, 1103},
			{respReq(explicitMode, many(81, "x")...), 0, 1503},           // 1103 is the 81st latest
			{respReq(explicitMode, many(80, "m")...), 1103, 1498 - 1103}, // here it is the 80th
		}},
		{"implicit: saves through the last message, read at a message end", []step{
			{respReq(implicitMode, sysNoBP, q("one", false)), 0, 1204 + 14},
			{respReq(implicitMode, sysNoBP, q("one", false), a("ans"), q("two", false)), 1204 + 14, 28},
		}},
		{"implicit without a breakpoint loses the prefix when history changes", []step{
			{respReq(implicitMode, sysNoBP, q("one", false)), 0, 1218},
			{respReq(implicitMode, sysNoBP, q("edit", false)), 0, 1218},
		}},
		{"both: the explicit save point survives a changed last message", []step{
			{respReq(implicitMode, sys, q("one", false)), 0, 1218},
			{respReq(implicitMode, sys, q("edit", false)), 1203, 15},
		}},
		{"a breakpoint alone means implicit mode with 30m writes", []step{
			{respReq(nil, sys, q("one", false)), 0, 1218},
			{respReq(nil, sys, q("two", false)), 1203, 15},
		}},
		{"additional_tools after the prefix keep it readable", []step{
			{respReq(explicitMode, sys, q("one", false)), 0, 1203},
			{respReq(explicitMode, sys, q("one", false), addTools, q("two", true)), 1203, 15 + addToolsTokens + 13},
		}},
		{"tool_choice allowed_tools does not change the cached catalog", []step{
			{respReq(map[string]any{"prompt_cache_options": map[string]any{"mode": "explicit"}, "tools": twoTools}, sys, q("one", false)), 0, 1203 + twoToolsTokens},
			{respReq(map[string]any{"prompt_cache_options": map[string]any{"mode": "explicit"}, "tools": twoTools,
				"tool_choice": map[string]any{"type": "allowed_tools", "mode": "required", "tools": []any{map[string]any{"type": "function", "name": "beta"}}}},
				sys, q("one", false)), 1203 + twoToolsTokens, 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, base := startSim(t, Config{})
			for i, s := range c.steps {
				u, _ := callResponses(t, base, s.body)
				if u.cached != s.cached || u.written != s.written {
					t.Fatalf("step %d: cached %d written %d (prompt %d), want cached %d written %d", i, u.cached, u.written, u.prompt, s.cached, s.written)
				}
			}
		})
	}
}

// twoTools are two function tools; they cost twoToolsTokens prompt tokens.
var twoTools = []any{
	map[string]any{"type": "function", "name": "alpha", "parameters": map[string]any{"type": "object"}},
	map[string]any{"type": "function", "name": "beta", "parameters": map[string]any{"type": "object"}},
}

var twoToolsTokens = func() int64 {
	ts := newTokenStream(0)
	for _, tl := range twoTools {
		raw, _ := json.Marshal(tl)
		ts.begin("tool")
		ts.text(compactJSON(raw))
		ts.end()
	}
	return int64(ts.n)
}()

func TestOpenAIExplicitTools(t *testing.T) {
	_, base := startSim(t, Config{})
	sys := rmsg{"developer", "rule", 1200, true}
	// allowed_tools restricts the call to beta although alpha comes first.
	_, r := callResponses(t, base, respReq(map[string]any{"tools": twoTools,
		"tool_choice": map[string]any{"type": "allowed_tools", "mode": "required", "tools": []any{map[string]any{"type": "function", "name": "beta"}}}},
		sys, rmsg{"user", "go", 1, false}))
	if out := r["output"].([]any)[0].(map[string]any); out["type"] != "function_call" || out["name"] != "beta" {
		t.Fatalf("allowed_tools output %v, want a call of beta", out)
	}
	// A tool added by additional_tools is callable.
	_, r = callResponses(t, base, respReq(map[string]any{"tool_choice": map[string]any{"type": "function", "name": "lookup"}},
		sys, map[string]any{"type": "additional_tools", "tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}},
		rmsg{"user", "go", 1, false}))
	if out := r["output"].([]any)[0].(map[string]any); out["name"] != "lookup" {
		t.Fatalf("additional_tools output %v, want a call of lookup", out)
	}
}

func TestOpenAIExplicitErrors(t *testing.T) {
	s, base := startSim(t, Config{})
	sys := rmsg{"developer", "rule", 10, true}
	withBP := func(part map[string]any) map[string]any {
		part["prompt_cache_breakpoint"] = map[string]any{"mode": "explicit"}
		return part
	}
	for _, c := range []struct {
		name, path, body, msgHas string
	}{
		{"ttl and retention", "/v1/responses", respReq(map[string]any{"prompt_cache_options": map[string]any{"ttl": "30m"}, "prompt_cache_retention": "24h"}, sys), "cannot both be set"},
		{"bad mode", "/v1/responses", respReq(map[string]any{"prompt_cache_options": map[string]any{"mode": "always"}}, sys), "prompt_cache_options.mode"},
		{"bad ttl", "/v1/responses", respReq(map[string]any{"prompt_cache_options": map[string]any{"ttl": "5m"}}, sys), "prompt_cache_options.ttl"},
		{"bad retention", "/v1/responses", respReq(map[string]any{"prompt_cache_retention": "forever"}, sys), "prompt_cache_retention"},
		{"options not an object", "/v1/responses", respReq(map[string]any{"prompt_cache_options": "explicit"}, sys), "prompt_cache_options"},
		{"breakpoint in additional_tools", "/v1/responses", respReq(nil, sys, map[string]any{"type": "additional_tools",
			"tools": []any{withBP(map[string]any{"type": "function", "name": "x"})}}), "input[1]"},
		{"breakpoint with another mode", "/v1/responses", respReq(nil, map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": "x", "prompt_cache_breakpoint": map[string]any{"mode": "implicit"}}}}), "input[0].content[0].prompt_cache_breakpoint"},
		{"breakpoint on output_text", "/v1/responses", respReq(nil, map[string]any{"type": "message", "role": "assistant",
			"content": []any{withBP(map[string]any{"type": "output_text", "text": "x"})}}), "Unknown parameter"},
		{"breakpoint in a tool output on a non-text part", "/v1/responses", respReq(nil, map[string]any{"type": "function_call_output", "call_id": "c",
			"output": []any{withBP(map[string]any{"type": "refusal", "text": "x"})}}), "input[0].output[0]"},
		{"chat: ttl and retention", "/v1/chat/completions", `{"model":"sim-small","prompt_cache_options":{"ttl":"30m"},"prompt_cache_retention":"in_memory","messages":[{"role":"user","content":"hi"}]}`, "cannot both be set"},
		{"chat: breakpoint on image_url", "/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"},"prompt_cache_breakpoint":{"mode":"explicit"}}]}]}`, "messages[0].content[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.Bill()
			status, _, body := post(t, base, c.path, c.body)
			if status != 400 {
				t.Fatalf("status %d: %s", status, body)
			}
			if fam, typ, msg := errorShape(t, body); fam != "openai" || typ != "invalid_request_error" || !strings.Contains(msg, c.msgHas) {
				t.Fatalf("error %s/%s %q, want one containing %q", fam, typ, msg, c.msgHas)
			}
			checkNotBilled(t, s, before)
		})
	}
	// A breakpoint inside a function_call_output list is accepted.
	body := respReq(nil, map[string]any{"type": "function_call_output", "call_id": "c",
		"output": []any{withBP(map[string]any{"type": "input_text", "text": "x"})}})
	if status, _, raw := post(t, base, "/v1/responses", body); status != 200 {
		t.Fatalf("breakpoint in function_call_output: %d %s", status, raw)
	}
}

// TestOpenAICacheScope: automatic caching is scoped by API key and
// prompt_cache_key; one key shares across sessions (users).
func TestOpenAICacheScope(t *testing.T) {
	_, base := startSim(t, Config{})
	body := func(key, user string) string {
		f := map[string]any{"user": user}
		if key != "" {
			f["prompt_cache_key"] = key
		}
		return respReq(f, rmsg{"developer", "rule", 1200, false}, rmsg{"user", "hi", 1, false})
	}
	auth := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	for i, s := range []struct {
		apiKey, cacheKey, user string
		cached                 int64
	}{
		{"sk-a", "agent:v1", "session-1", 0},
		{"sk-a", "agent:v1", "session-2", 1152}, // same key, another session: shared (1209 tokens, 9 blocks)
		{"sk-a", "agent:v2", "session-1", 0},    // another prompt_cache_key: never shared
		{"sk-a", "", "session-1", 0},            // no key is a scope of its own
		{"sk-b", "agent:v1", "session-1", 0},    // another account
		{"sk-a", "agent:v2", "session-9", 1152},
	} {
		if u, _ := callResponses(t, base, body(s.cacheKey, s.user), auth(s.apiKey)...); u.cached != s.cached || u.written != 0 {
			t.Fatalf("step %d (%+v): cached %d written %d", i, s, u.cached, u.written)
		}
	}
}

// TestOpenAIExplicitTTLAndBill: prompt_cache_options writes live 30
// minutes, refreshed by every read, and are billed at the write rate.
func TestOpenAIExplicitTTLAndBill(t *testing.T) {
	clock := newFakeClock()
	s, base := startSim(t, Config{Clock: clock})
	body := respReq(explicitMode, rmsg{"developer", "rule", 1200, true}, rmsg{"user", "hi", 1, false})
	before := s.Bill()
	u, r := callResponses(t, base, body)
	if u.written != 1203 || u.prompt != 1209 {
		t.Fatalf("first call %+v", u)
	}
	out := int64(r["usage"].(map[string]any)["output_tokens"].(float64))
	checkBilled(t, s, before, "sim-small", groundhog.Usage{InputTokens: 1209, CacheWriteTokens: 1203, OutputTokens: out})
	p := pricing.Default()["sim-small"]
	if got := s.Bill().InputUSD - before.InputUSD; got != groundhog.Money(6*p.Input+1203*p.CacheWrite) {
		t.Fatalf("input_usd grew by %s", got)
	}
	for i, step := range []struct {
		advance time.Duration
		cached  int64
	}{
		{29 * time.Minute, 1203},
		{29 * time.Minute, 1203}, // refreshed at 29m
		{30*time.Minute + time.Second, 0},
	} {
		clock.Advance(step.advance)
		if u, _ := callResponses(t, base, body); u.cached != step.cached {
			t.Fatalf("step %d: cached %d, want %d", i, u.cached, step.cached)
		}
	}
	// Automatic caching: 5 minutes, or 24 hours with prompt_cache_retention.
	for _, c := range []struct {
		retention string
		after     time.Duration
		cached    int64
	}{
		{"", 5*time.Minute + time.Second, 0},
		{"in_memory", 5*time.Minute + time.Second, 0},
		{"24h", 23 * time.Hour, 1152},
	} {
		f := map[string]any{"prompt_cache_key": "retention-" + c.retention}
		if c.retention != "" {
			f["prompt_cache_retention"] = c.retention
		}
		body := respReq(f, rmsg{"developer", "rule", 1200, false}, rmsg{"user", "hi", 1, false})
		callResponses(t, base, body)
		clock.Advance(c.after)
		if u, _ := callResponses(t, base, body); u.cached != c.cached || u.written != 0 {
			t.Fatalf("retention %q after %v: %+v, want cached %d", c.retention, c.after, u, c.cached)
		}
	}
}

// TestOpenAIExplicitChat: chat accepts prompt_cache_options and
// prompt_cache_breakpoint on text parts, and reports
// prompt_tokens_details.cache_write_tokens.
func TestOpenAIExplicitChat(t *testing.T) {
	s, base := startSim(t, Config{})
	client := openaiClient(base)
	ctx := context.Background()
	sys := openai.ChatCompletionSystemMessageParam{Content: openai.ChatCompletionSystemMessageParamContentUnion{
		OfArrayOfContentParts: []openai.ChatCompletionContentPartTextParam{{Text: longText(1200, "rule")}}}}
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{
		{OfSystem: &sys}, openai.UserMessage("hi")}}
	opts := []option.RequestOption{
		option.WithJSONSet("prompt_cache_options", map[string]any{"mode": "explicit"}),
		option.WithJSONSet("messages.0.content.0.prompt_cache_breakpoint", map[string]any{"mode": "explicit"}),
	}
	var got [][2]int64
	for range 2 {
		before := s.Bill()
		cc, err := client.Chat.Completions.New(ctx, params, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		}
		json.Unmarshal([]byte(cc.Usage.PromptTokensDetails.RawJSON()), &d)
		got = append(got, [2]int64{cc.Usage.PromptTokensDetails.CachedTokens, d.CacheWriteTokens})
		checkBilled(t, s, before, "sim-small", groundhog.Usage{InputTokens: cc.Usage.PromptTokens,
			CachedInputTokens: cc.Usage.PromptTokensDetails.CachedTokens, CacheWriteTokens: d.CacheWriteTokens, OutputTokens: cc.Usage.CompletionTokens})
	}
	if got[0] != [2]int64{0, 1203} || got[1] != [2]int64{1203, 0} {
		t.Fatalf("chat (cached, written) = %v, want [[0 1203] [1203 0]]", got)
	}
}

// TestOpenAIExplicitSDK: the openai-go SDK's own prompt_cache_options and
// prompt_cache_breakpoint params, and its usage fields.
func TestOpenAIExplicitSDK(t *testing.T) {
	_, base := startSim(t, Config{})
	client := openaiClient(base)
	ctx := context.Background()
	text := func(s string, bp bool) responses.ResponseInputContentUnionParam {
		p := responses.ResponseInputTextParam{Text: s}
		if bp {
			p.PromptCacheBreakpoint = responses.ResponseInputTextPromptCacheBreakpointParam{Ttl: "30m"}
		}
		return responses.ResponseInputContentUnionParam{OfInputText: &p}
	}
	params := responses.ResponseNewParams{
		Model:              "sim-small",
		PromptCacheOptions: responses.ResponseNewParamsPromptCacheOptions{Mode: "explicit", Ttl: "30m"},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{text(longText(1200, "rule"), true)}, responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{text("hi", false)}, responses.EasyInputMessageRoleUser),
		}},
	}
	var got [][2]int64
	for range 2 {
		r, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		d := r.Usage.InputTokensDetails
		got = append(got, [2]int64{d.CachedTokens, d.CacheWriteTokens})
	}
	if got[0] != [2]int64{0, 1203} || got[1] != [2]int64{1203, 0} {
		t.Fatalf("responses (cached, written) = %v, want [[0 1203] [1203 0]]", got)
	}
	// The stream's terminal event reports the same usage.
	st := client.Responses.NewStreaming(ctx, params)
	var final responses.Response
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if d := final.Usage.InputTokensDetails; d.CachedTokens != 1203 || d.CacheWriteTokens != 0 {
		t.Fatalf("streamed usage %s", final.Usage.RawJSON())
	}
}
