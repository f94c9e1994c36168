package ledger

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// pcRow is an upstream row of op with usage u, priced like the gateway does.
func pcRow(i int, op, model string, u groundhog.Usage) groundhog.LedgerEntry {
	tab := pricing.Default()
	return groundhog.LedgerEntry{
		ID: string(rune('a' + i)), Time: time.Date(2025, 3, 14, 9, 0, i, 0, time.UTC), Tenant: "t", Operation: op,
		RequestHash: "sha256:" + string(rune('a'+i)), Model: model, Outcome: groundhog.OutcomeUpstream, Status: 200,
		Usage: u, Cost: tab.Cost(model, u), FullCost: tab.Cost(model, u), Attempt: 1,
		PromptCacheSaved: tab.PromptCacheSaving(model, u),
	}
}

func TestReportPromptCache(t *testing.T) {
	// sim-small: input $1/M, read $0.10/M, write $1.25/M, 1h write $2/M
	rows := []groundhog.LedgerEntry{
		// agent: a first call writes 8000 (5m), the next reads them.
		pcRow(0, "agent", "sim-small", groundhog.Usage{InputTokens: 10_000, CacheWriteTokens: 8000, OutputTokens: 5}),
		pcRow(1, "agent", "sim-small", groundhog.Usage{InputTokens: 12_000, CachedInputTokens: 8000, CacheWriteTokens: 2000, CacheWrite1hTokens: 2000, OutputTokens: 5}),
		// writer: only writes, so caching lost money.
		pcRow(2, "writer", "sim-small", groundhog.Usage{InputTokens: 4000, CacheWriteTokens: 4000}),
		// unpriced: reads with an unknown price.
		pcRow(3, "unpriced", "no-price", groundhog.Usage{InputTokens: 3000, CachedInputTokens: 2048}),
		// plain: no prompt cache at all.
		pcRow(4, "plain", "sim-small", groundhog.Usage{InputTokens: 100}),
	}
	// Breaks and fan-out held calls.
	rows[1].PromptCacheBreak, rows[1].PromptCacheLostTokens = "ttl_gap", 1000
	rows[2].PromptCacheBreak, rows[2].PromptCacheLostTokens = "tools_reordered", 4000
	rows = append(rows, pcRow(5, "agent", "sim-small", groundhog.Usage{InputTokens: 9000, CachedInputTokens: 8192}))
	rows[5].FanOutHeld = true
	rows = append(rows, pcRow(6, "agent", "sim-small", groundhog.Usage{InputTokens: 9000}))
	rows[6].PromptCacheBreak, rows[6].PromptCacheLostTokens = "ttl_gap", 8192

	acc := NewAccumulator("")
	for i := range rows {
		acc.Add(&rows[i])
	}
	rep := acc.Report("2025-03-14")
	ops := map[string]PromptCache{}
	for _, r := range rep.Operations {
		ops[r.Operation] = r.PromptCache
	}
	agentSaved := groundhog.Money(-8000*250_000 + (8000*900_000 - 2000*1_000_000) + 8192*900_000)
	wantAgent := PromptCache{
		CachedReadTokens: 16192, CacheWriteTokens: 10_000, CacheWrite1hTokens: 2000, UncachedInputTokens: 2000 + 2000 + 808 + 9000,
		InputTokens: 40_000, HitRatio: 0.4048, Saved: agentSaved,
		Breaks:     []PromptCacheBreak{{Cause: "ttl_gap", Calls: 2, ExampleRequestHash: "sha256:b", UncachedTokens: 9192}},
		FanOutHeld: 1, FanOutWriteTokensAvoided: 8192,
	}
	if !reflect.DeepEqual(ops["agent"], wantAgent) {
		t.Errorf("agent\n got %+v\nwant %+v", ops["agent"], wantAgent)
	}
	if got := ops["writer"].Saved; got != -4000*250_000 {
		t.Errorf("writer saved = %d, want a loss of %d", got, -4000*250_000)
	}
	if p := ops["unpriced"]; p.Saved != groundhog.CostUnknown || p.UnknownCalls != 1 || p.CachedReadTokens != 2048 {
		t.Errorf("unpriced = %+v, want unknown saving (never 0)", p)
	}
	if p := ops["plain"]; p.Active() || p.Saved != 0 || p.UncachedInputTokens != 100 {
		t.Errorf("plain = %+v", p)
	}
	tot := rep.Total.PromptCache
	if tot.Saved != agentSaved-4000*250_000 || tot.UnknownCalls != 1 || tot.CachedReadTokens != 16192+2048 {
		t.Errorf("total = %+v", tot)
	}
	wantBreaks := []PromptCacheBreak{
		{Cause: "ttl_gap", Calls: 2, ExampleRequestHash: "sha256:b", UncachedTokens: 9192},
		{Cause: "tools_reordered", Calls: 1, ExampleRequestHash: "sha256:c", UncachedTokens: 4000},
	}
	if !reflect.DeepEqual(tot.Breaks, wantBreaks) {
		t.Errorf("total breaks = %+v", tot.Breaks)
	}

	t.Run("json", func(t *testing.T) {
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Operations []map[string]json.RawMessage `json:"operations"`
			Total      map[string]json.RawMessage   `json:"total"`
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"cached_read_tokens": "18240", "cache_write_tokens": "14000", "cache_write_1h_tokens": "2000",
			"uncached_input_tokens": "14860", "prompt_cache_hit_ratio": "0.3873", "prompt_cache_saved_usd": "0.009573",
			"prompt_cache_unknown_calls": "1", "fan_out_held": "1", "fan_out_write_tokens_avoided": "8192",
			"prompt_cache_breaks": `[{"cause":"ttl_gap","calls":2,"example_request_hash":"sha256:b","uncached_tokens":9192},{"cause":"tools_reordered","calls":1,"example_request_hash":"sha256:c","uncached_tokens":4000}]`,
		}
		for k, v := range want {
			var got bytes.Buffer
			json.Compact(&got, doc.Total[k])
			if got.String() != v {
				t.Errorf("total %s = %s, want %s", k, got.String(), v)
			}
		}
		for _, op := range doc.Operations {
			switch string(op["operation"]) {
			case `"unpriced"`:
				if string(op["prompt_cache_saved_usd"]) != "null" {
					t.Errorf("unpriced saving = %s, want null", op["prompt_cache_saved_usd"])
				}
			case `"writer"`:
				if string(op["prompt_cache_saved_usd"]) != "-0.001000" {
					t.Errorf("writer saving = %s, want -0.001000", op["prompt_cache_saved_usd"])
				}
			case `"plain"`:
				if string(op["prompt_cache_breaks"]) != "[]" {
					t.Errorf("plain breaks = %s, want []", op["prompt_cache_breaks"])
				}
			}
		}
	})
	t.Run("csv", func(t *testing.T) {
		var b bytes.Buffer
		if err := rep.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		last := recs[len(recs)-1]
		if last[col["operation"]] != TotalLabel || last[col["prompt_cache_saved_usd"]] != "0.009573" ||
			last[col["cached_read_tokens"]] != "18240" || !strings.HasPrefix(last[col["prompt_cache_breaks"]], `[{"cause":"ttl_gap"`) {
			t.Errorf("total line = %v", last)
		}
		for _, r := range recs[1:] {
			if r[col["operation"]] == "unpriced" && r[col["prompt_cache_saved_usd"]] != "unknown" {
				t.Errorf("unpriced saving = %q", r[col["prompt_cache_saved_usd"]])
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		var b bytes.Buffer
		if err := rep.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"provider prompt cache on 2025-03-14", "the prompt cache lost money for writer",
			"their saving is unknown", "prompt-cache breaks by cause", "tools_reordered", "sha256:b", "unknown"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "lost money for agent") {
			t.Errorf("agent saved money but the table says it lost:\n%s", out)
		}
	})
	t.Run("no prompt cache, no section", func(t *testing.T) {
		acc := NewAccumulator("")
		r := pcRow(0, "plain", "sim-small", groundhog.Usage{InputTokens: 100})
		acc.Add(&r)
		var b bytes.Buffer
		acc.Report("2025-03-14").WriteTable(&b)
		if strings.Contains(b.String(), "prompt cache") {
			t.Errorf("table without caching has a prompt-cache section:\n%s", b.String())
		}
	})
}

// TestAnalyzePromptCache: offline analysis computes the prompt-cache figures
// from the usage in the log lines, in every provider's spelling, the same as
// the ledger report over the same calls.
func TestAnalyzePromptCache(t *testing.T) {
	line := func(ts, model, usage, extra string) string {
		return `{"timestamp":"` + ts + `","operation":"op","request":{"model":"` + model + `","messages":[{"role":"user","content":"` + ts + `"}]},"usage":` + usage + extra + `}`
	}
	in := strings.Join([]string{
		line("2025-03-14T10:00:00Z", "sim-small", `{"prompt_tokens":4096,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2048,"cache_write_tokens":1024}}`, ""),
		line("2025-03-14T10:00:01Z", "sim-small", `{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":3000,"cache_creation_input_tokens":1500,"cache_creation":{"ephemeral_5m_input_tokens":500,"ephemeral_1h_input_tokens":1000}}`, ""),
		line("2025-03-14T10:00:02Z", "sim-small", `{"inputTokens":20,"outputTokens":2,"cacheReadInputTokens":1000,"cacheWriteInputTokens":100}`, `,"cost_usd":0.5`),
	}, "\n")
	reps, _, err := Analyze(t.Context(), strings.NewReader(in), AnalyzeOptions{Shape: groundhog.ShapeChat})
	if err != nil {
		t.Fatal(err)
	}
	usages := []groundhog.Usage{
		{InputTokens: 4096, CachedInputTokens: 2048, CacheWriteTokens: 1024, OutputTokens: 1},
		{InputTokens: 4510, CachedInputTokens: 3000, CacheWriteTokens: 1500, CacheWrite1hTokens: 1000, OutputTokens: 1},
		{InputTokens: 1120, CachedInputTokens: 1000, CacheWriteTokens: 100, OutputTokens: 2},
	}
	tab := pricing.Default()
	var want PromptCache
	for _, u := range usages {
		want.add(&groundhog.LedgerEntry{Usage: u, PromptCacheSaved: tab.PromptCacheSaving("sim-small", u)})
	}
	want = want.finish()
	if len(reps) != 1 || !reflect.DeepEqual(reps[0].Total.PromptCache, want) {
		t.Fatalf("analyze prompt cache\n got %+v\nwant %+v", reps[0].Total.PromptCache, want)
	}
	if bad := line("2025-03-14T10:00:03Z", "sim-small", `{"input_tokens":1,"cache_creation_input_tokens":5,"cache_creation":{"ephemeral_1h_input_tokens":9}}`, ""); true {
		if _, _, err := Analyze(t.Context(), strings.NewReader(bad), AnalyzeOptions{}); err == nil {
			t.Fatal("a 1h write count over the writes was accepted")
		}
	}
}

// The report puts groundhog's causes beside the provider's own verdicts:
// one cell per (cause, provider reason) over the calls that asked the
// provider, with their calls and lost tokens, in the JSON and in the
// terminal table; a day rolled up gives the same cells.
func TestReportPromptCacheAgreement(t *testing.T) {
	u := groundhog.Usage{InputTokens: 3000, CachedInputTokens: 1024}
	rows := []groundhog.LedgerEntry{
		pcRow(0, "agent", "sim-small", u),
		pcRow(1, "agent", "sim-small", u),
		pcRow(2, "agent", "sim-small", u),
		pcRow(3, "agent", "sim-small", u),
		pcRow(4, "other", "sim-small", u),
		pcRow(5, "other", "sim-small", u), // did not ask the provider
	}
	rows[0].ProviderCacheReason = "cache_hit"
	rows[1].PromptCacheBreak, rows[1].PromptCacheLostTokens, rows[1].ProviderCacheReason = "tools_changed", 2000, "tools_changed"
	rows[2].PromptCacheBreak, rows[2].PromptCacheLostTokens, rows[2].ProviderCacheReason = "volatile_in_prefix", 1500, "input_changed"
	rows[3].ProviderCacheReason = "input_changed" // the provider saw a change, nothing reusable was lost
	rows[4].PromptCacheBreak, rows[4].PromptCacheLostTokens, rows[4].ProviderCacheReason = "tools_changed", 1000, "tools_changed"
	rows[5].PromptCacheBreak, rows[5].PromptCacheLostTokens = "ttl_gap", 700
	acc := NewAccumulator("")
	for i := range rows {
		acc.Add(&rows[i])
	}
	rep := acc.Report("2025-03-14")
	want := []PromptCacheAgreement{
		{Cause: "tools_changed", ProviderReason: "tools_changed", Calls: 2, LostTokens: 3000},
		{Cause: "", ProviderReason: "cache_hit", Calls: 1},
		{Cause: "", ProviderReason: "input_changed", Calls: 1},
		{Cause: "volatile_in_prefix", ProviderReason: "input_changed", Calls: 1, LostTokens: 1500},
	}
	if got := rep.Total.PromptCache.Agreement; !reflect.DeepEqual(got, want) {
		t.Errorf("agreement\n got %+v\nwant %+v", got, want)
	}
	var text bytes.Buffer
	if err := rep.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	t.Log(text.String())
	for _, line := range []string{
		"groundhog_cause     provider_reason  calls  lost_tokens",
		"tools_changed       tools_changed    2      3000",
		"(no break)          input_changed    1      0",
		"volatile_in_prefix  input_changed    1      1500",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("the table lacks %q", line)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Total struct {
			Agreement []map[string]any `json:"prompt_cache_agreement"`
		} `json:"total"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Total.Agreement) != 4 || doc.Total.Agreement[0]["cause"] != "tools_changed" ||
		doc.Total.Agreement[0]["provider_reason"] != "tools_changed" || doc.Total.Agreement[0]["calls"] != 2.0 ||
		doc.Total.Agreement[0]["lost_tokens"] != 3000.0 || doc.Total.Agreement[1]["cause"] != "" {
		t.Errorf("JSON agreement %v", doc.Total.Agreement)
	}
	// From a rollup of the same day.
	ru := &Rollup{Agreement: []RollupAgreement{
		{Tenant: "t", Operation: "agent", Cause: "tools_changed", ProviderReason: "tools_changed", Calls: 1, LostTokens: 2000},
		{Tenant: "t", Operation: "agent", ProviderReason: "cache_hit", Calls: 1},
		{Tenant: "t", Operation: "agent", Cause: "volatile_in_prefix", ProviderReason: "input_changed", Calls: 1, LostTokens: 1500},
		{Tenant: "t", Operation: "agent", ProviderReason: "input_changed", Calls: 1},
		{Tenant: "t", Operation: "other", Cause: "tools_changed", ProviderReason: "tools_changed", Calls: 1, LostTokens: 1000},
	}, Counts: []RollupCounts{{Tenant: "t", Operation: "agent", Calls: 4}, {Tenant: "t", Operation: "other", Calls: 2}}}
	rr, err := ru.Report("2025-03-14", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Total.PromptCache.Agreement; !reflect.DeepEqual(got, want) {
		t.Errorf("rollup agreement\n got %+v\nwant %+v", got, want)
	}
}
