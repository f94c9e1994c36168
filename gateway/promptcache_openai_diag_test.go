package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/ledger"
)

// responsesTurn is a Responses body: instructions, function tools by name,
// alternating user/assistant messages, and extra top-level fields.
func responsesTurn(model, instructions string, tools []string, extra map[string]any, turns ...string) string {
	ts := []any{}
	for _, n := range tools {
		ts = append(ts, map[string]any{"type": "function", "name": n, "description": "Tool " + n + ".", "parameters": map[string]any{"type": "object"}})
	}
	var in []any
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		in = append(in, map[string]any{"role": role, "content": t})
	}
	b := map[string]any{"model": model, "instructions": instructions, "tools": ts, "input": in, "max_output_tokens": 20}
	for k, v := range extra {
		b[k] = v
	}
	out, _ := json.Marshal(b)
	return string(out)
}

// With Groundhog-Prompt-Cache-Diagnostics: provider on Responses, the
// gateway names the chain's previous answer in
// prompt_cache_options.comparison_response_id (the client sends none); the
// request hash is the client's body's, the provider's verdict reaches the
// client untouched, and the break header carries both verdicts. A
// comparison the client named itself is left alone.
func TestPromptCacheProviderDiagnosticsResponses(t *testing.T) {
	var mu sync.Mutex
	var sent []map[string]any
	tap := func(path string, body []byte) {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, m)
	}
	h := newHarness(t, func(s *setup) { s.tap = tap })
	instr := "Now: 2026-12-05T09:00:00Z. You are a support agent.\n" + words(1500, "system")
	hdr := map[string]string{"Groundhog-Operation": "support", "Groundhog-Prompt-Cache-Diagnostics": "provider"}
	b1 := responsesTurn("sim-small", instr, []string{"lookup"}, nil, "Where is order 42?")
	res, body := h.post("/v1/responses", b1, hdr)
	var first struct {
		ID   string          `json:"id"`
		Diag json.RawMessage `json:"prompt_cache_diagnostics"`
	}
	if err := json.Unmarshal(body, &first); err != nil || res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if first.Diag != nil {
		t.Errorf("the first turn has nothing to compare with, yet got %s", first.Diag)
	}
	b2 := responsesTurn("sim-small", strings.Replace(instr, "09:00:00", "09:01:00", 1), []string{"lookup"}, nil, "Where is order 42?")
	res, body = h.post("/v1/responses", b2, hdr)
	if got, want := res.Header.Get("Groundhog-Prompt-Cache-Break"), "volatile_in_prefix; provider=input_changed"; got != want {
		t.Errorf("Groundhog-Prompt-Cache-Break %q, want %q (%s)", got, want, body)
	}
	if !strings.Contains(string(body), `"prompt_cache_diagnostics":{"type":"cache_miss","reason":"input_changed"`) {
		t.Errorf("the provider's diagnostics did not reach the client: %s", body)
	}
	if got, want := res.Header.Get("Groundhog-Request-Hash"), hashOf(t, "responses", b2); got != want {
		t.Errorf("request hash %s, want the client body's %s", got, want)
	}
	// The client's own comparison is kept.
	b3 := responsesTurn("sim-small", instr, []string{"lookup"}, map[string]any{"prompt_cache_options": map[string]any{"comparison_response_id": "resp_mine"}}, "Where is order 43?")
	if res, body = h.post("/v1/responses", b3, hdr); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 3 {
		t.Fatalf("%d upstream calls", len(sent))
	}
	if _, ok := sent[0]["prompt_cache_options"]; ok {
		t.Errorf("first upstream body has prompt_cache_options %v", sent[0]["prompt_cache_options"])
	}
	if got := fmt.Sprint(sent[1]["prompt_cache_options"]); got != "map[comparison_response_id:"+first.ID+"]" {
		t.Errorf("second upstream prompt_cache_options %s, want the first answer's id %s", got, first.ID)
	}
	if got := fmt.Sprint(sent[2]["prompt_cache_options"]); got != "map[comparison_response_id:resp_mine]" {
		t.Errorf("the client's comparison was replaced: %s", got)
	}
	for i, m := range sent {
		if _, ok := m["anthropic-beta"]; ok {
			t.Errorf("upstream body %d carries an Anthropic field", i)
		}
	}
}

// The agreement matrix between groundhog's causes and the simulated
// provider's own diagnostics on Responses, over one conversation per kind
// of change (turned on per operation with prompt_cache.ask_provider). Each
// cell counts the calls and the tokens groundhog says were lost.
func TestPromptCacheProviderAgreementMatrixResponses(t *testing.T) {
	ops := []string{"stable", "model", "key", "tools", "history", "history-breakpoints", "volatile"}
	h := newHarness(t, withConfig(func(c *config.Config) {
		c.Operations = map[string]config.Operation{}
		for _, op := range ops {
			c.Operations[op] = config.Operation{PromptCache: config.OperationPromptCache{AskProvider: true}}
		}
		c.Operations["history-breakpoints"] = config.Operation{PromptCache: config.OperationPromptCache{AskProvider: true, Breakpoints: "auto"}}
	}))
	base := "You are a support agent.\n" + words(2500, "system") // over sim-large's minimum too
	a1, a2 := "Answer one. "+words(60, "a"), "Answer two. "+words(60, "b")
	warm := []string{"First question. " + words(40, "q"), a1, "Second question. " + words(40, "r"), a2, "Third question."}
	edited := append([]string(nil), warm...)
	edited[2] = "Second question, edited. " + words(40, "r")
	tools := []string{"lookup", "refund"}
	key := func(op, v string) map[string]any { return map[string]any{"prompt_cache_key": op + ":" + v} }
	withBP := func(op string) map[string]any {
		return map[string]any{"prompt_cache_key": op + ":v1", "prompt_cache_options": map[string]any{"mode": "implicit"}}
	}
	cases := []struct {
		op                    string
		turn                  string
		wantCause, wantReason string
	}{
		{"stable", responsesTurn("sim-small", base, tools, key("stable", "v1"), append(warm, a2, "Fourth question.")...), "", "cache_hit"},
		{"model", responsesTurn("sim-large", base, tools, key("model", "v1"), warm...), "model_changed", "model_changed"},
		{"key", responsesTurn("sim-small", base, tools, key("key", "v2"), warm...), "cache_key_changed", "prompt_cache_key_changed"},
		{"tools", responsesTurn("sim-small", base, []string{"lookup", "refund_v2"}, key("tools", "v1"), warm...), "tools_changed", "tools_changed"},
		// Automatic caching reads every whole block before the edit: the
		// provider names the divergence, yet nothing reusable was lost.
		{"history", responsesTurn("sim-small", base, tools, key("history", "v1"), edited...), "", "input_changed"},
		// With breakpoints the edit loses what follows the last one before it.
		{"history-breakpoints", responsesTurn("sim-small", base, tools, withBP("history-breakpoints"), edited...), "history_edited", "input_changed"},
		{"volatile", responsesTurn("sim-small", "Now: 2026-12-05T09:01:00Z. "+base, tools, key("volatile", "v1"), warm...), "volatile_in_prefix", "input_changed"},
	}
	type cell struct{ calls, tokens int64 }
	matrix := map[[2]string]*cell{}
	for _, c := range cases {
		instr := base
		if c.op == "volatile" {
			instr = "Now: 2026-12-05T09:00:00Z. " + base
		}
		hdr := map[string]string{"Groundhog-Operation": c.op}
		first := key(c.op, "v1")
		if c.op == "history-breakpoints" {
			first = withBP(c.op)
		}
		if res, body := h.post("/v1/responses", responsesTurn("sim-small", instr, tools, first, warm...), hdr); res.StatusCode != 200 {
			t.Fatalf("%s warm-up: %d %s", c.op, res.StatusCode, body)
		}
		res, body := h.post("/v1/responses", c.turn, hdr)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.op, res.StatusCode, body)
		}
		var m struct {
			Diag struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"prompt_cache_diagnostics"`
		}
		_ = json.Unmarshal(body, &m)
		reason := m.Diag.Reason
		if reason == "" {
			reason = m.Diag.Type
		}
		hdrBreak := res.Header.Get("Groundhog-Prompt-Cache-Break")
		cause, _, _ := strings.Cut(hdrBreak, ";")
		if cause != c.wantCause || reason != c.wantReason {
			t.Errorf("%s: groundhog %q, provider %q; want %q, %q (header %q)", c.op, cause, reason, c.wantCause, c.wantReason, hdrBreak)
		}
		if c.wantCause != "" {
			if want := c.wantCause + "; provider=" + c.wantReason; hdrBreak != want {
				t.Errorf("%s: header %q, want %q", c.op, hdrBreak, want)
			}
		}
		if cause == "" {
			cause = "(no break)"
		}
		k := [2]string{cause, reason}
		if matrix[k] == nil {
			matrix[k] = &cell{}
		}
		matrix[k].calls++
		// The call's row is the newest of its hash (prompt_cache_key is not
		// part of it: the key case's warm-up shares it).
		var row groundhog.LedgerEntry
		for _, r := range h.ledgerRows() {
			if r.RequestHash == res.Header.Get("Groundhog-Request-Hash") {
				row = r
			}
		}
		matrix[k].tokens += row.PromptCacheLostTokens
		if row.ProviderCacheReason != reason {
			t.Errorf("%s: ledger books the provider's reason %q, the answer said %q", c.op, row.ProviderCacheReason, reason)
		}
	}
	keys := make([][2]string, 0, len(matrix))
	for k := range matrix {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	// The report's agreement holds the same cells (the warm-ups asked too:
	// the first of each operation had nothing to compare with).
	rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Total.PromptCache.Agreement {
		cause := a.Cause
		if cause == "" {
			cause = "(no break)"
		}
		if m := matrix[[2]string{cause, a.ProviderReason}]; m == nil || m.calls != a.Calls || m.tokens != a.LostTokens {
			t.Errorf("report cell %+v is not the matrix's %+v", a, m)
		}
	}
	if len(rep.Total.PromptCache.Agreement) != len(matrix) {
		t.Errorf("report has %d agreement cells, the matrix %d", len(rep.Total.PromptCache.Agreement), len(matrix))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agreement with the simulated provider's diagnostics (Responses)\n%-22s %-26s %6s %12s\n", "groundhog cause", "provider reason", "calls", "lost tokens")
	for _, k := range keys {
		fmt.Fprintf(&b, "%-22s %-26s %6d %12d\n", k[0], k[1], matrix[k].calls, matrix[k].tokens)
	}
	t.Log(b.String())
}
