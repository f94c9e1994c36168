package gateway_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog/config"
)

// anthropicTurn is an Anthropic Messages body: a string system prompt,
// tools by name, and plain-string turns (the client places no markers and
// asks for no diagnostics).
func anthropicTurn(system string, tools []string, turns ...string) string {
	var ts []any
	for _, n := range tools {
		ts = append(ts, map[string]any{"name": n, "description": "Tool " + n + ".", "input_schema": map[string]any{"type": "object"}})
	}
	var ms []any
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, map[string]any{"role": role, "content": t})
	}
	b := map[string]any{"model": "sim-small", "max_tokens": 20, "system": system, "messages": ms}
	if ts != nil {
		b["tools"] = ts
	}
	out, _ := json.Marshal(b)
	return string(out)
}

// With Groundhog-Prompt-Cache-Diagnostics: provider the gateway asks the
// provider for its own verdict — the client sends no diagnostics and no
// beta header — using the id of the chain's previous answer; the answer's
// diagnostics reach the client untouched, and the break header carries
// both verdicts.
func TestPromptCacheProviderDiagnostics(t *testing.T) {
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
	sys := "Now: 2026-12-05T09:00:00Z. You are a support agent.\n" + words(1500, "system")
	hdr := map[string]string{"Groundhog-Operation": "support", "Groundhog-Prompt-Cache-Breakpoints": "auto",
		"Groundhog-Prompt-Cache-Diagnostics": "provider", "anthropic-version": "2023-06-01"}
	res, body := h.post("/v1/messages", anthropicTurn(sys, []string{"lookup"}, "Where is order 42?"), hdr)
	var first struct {
		ID          string          `json:"id"`
		Diagnostics json.RawMessage `json:"diagnostics"`
	}
	if err := json.Unmarshal(body, &first); err != nil || res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if string(first.Diagnostics) != `{"cache_miss_reason":null}` {
		t.Errorf("first answer's diagnostics %s", first.Diagnostics)
	}
	sys2 := strings.Replace(sys, "09:00:00", "09:01:00", 1)
	res, body = h.post("/v1/messages", anthropicTurn(sys2, []string{"lookup"}, "Where is order 42?"), hdr)
	if got, want := res.Header.Get("Groundhog-Prompt-Cache-Break"), "volatile_in_prefix; provider=system_changed"; got != want {
		t.Errorf("Groundhog-Prompt-Cache-Break %q, want %q (%s)", got, want, body)
	}
	if !strings.Contains(string(body), `"cache_miss_reason":{"type":"system_changed"`) {
		t.Errorf("the provider's diagnostics did not reach the client: %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 {
		t.Fatalf("%d upstream calls", len(sent))
	}
	if d := fmt.Sprint(sent[0]["diagnostics"]); d != "map[previous_message_id:<nil>]" {
		t.Errorf("first upstream diagnostics %s", d)
	}
	if d := fmt.Sprint(sent[1]["diagnostics"]); d != "map[previous_message_id:"+first.ID+"]" {
		t.Errorf("second upstream diagnostics %s, want the first answer's id %s", d, first.ID)
	}
}

// The agreement matrix between groundhog's causes and the simulated
// provider's own diagnostics, over one conversation per kind of change
// (turned on per operation with prompt_cache.ask_provider). Each cell
// counts the calls and the tokens groundhog says were lost.
func TestPromptCacheProviderAgreementMatrix(t *testing.T) {
	h := newHarness(t, withConfig(func(c *config.Config) {
		c.Operations = map[string]config.Operation{}
		for _, op := range []string{"stable", "volatile", "instructions", "tools", "history"} {
			c.Operations[op] = config.Operation{PromptCache: config.OperationPromptCache{Breakpoints: "auto", AskProvider: true}}
		}
	}))
	base := "You are a support agent.\n" + words(1500, "system")
	a1, a2 := "Answer one. "+words(60, "a"), "Answer two. "+words(60, "b")
	warm := []string{"First question. " + words(40, "q"), a1, "Second question. " + words(40, "r"), a2, "Third question."}
	edited := append([]string(nil), warm...)
	edited[2] = "Second question, edited. " + words(40, "r")
	cases := []struct {
		op         string
		turn       string
		wantCause  string
		wantReason string
	}{
		{"stable", anthropicTurn(base, []string{"lookup", "refund"}, append(warm, a2, "Fourth question.")...), "", "none"},
		{"volatile", anthropicTurn("Now: 2026-12-05T09:01:00Z. "+base, []string{"lookup", "refund"}, warm...), "volatile_in_prefix", "system_changed"},
		{"instructions", anthropicTurn("You are a friendly support agent.\n"+base, []string{"lookup", "refund"}, warm...), "instructions_changed", "system_changed"},
		{"tools", anthropicTurn(base, []string{"lookup", "refund_v2"}, warm...), "tools_changed", "tools_changed"},
		{"history", anthropicTurn(base, []string{"lookup", "refund"}, edited...), "history_edited", "messages_changed"},
	}
	type cell struct{ calls, tokens int64 }
	matrix := map[[2]string]*cell{}
	for _, c := range cases {
		sys := base
		if c.op == "volatile" {
			sys = "Now: 2026-12-05T09:00:00Z. " + base
		}
		hdr := map[string]string{"Groundhog-Operation": c.op, "anthropic-version": "2023-06-01"}
		if res, body := h.post("/v1/messages", anthropicTurn(sys, []string{"lookup", "refund"}, warm...), hdr); res.StatusCode != 200 {
			t.Fatalf("%s warm-up: %d %s", c.op, res.StatusCode, body)
		}
		res, body := h.post("/v1/messages", c.turn, hdr)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.op, res.StatusCode, body)
		}
		var m struct {
			Diagnostics struct {
				Reason *struct {
					Type string `json:"type"`
				} `json:"cache_miss_reason"`
			} `json:"diagnostics"`
		}
		_ = json.Unmarshal(body, &m)
		reason := "none"
		if m.Diagnostics.Reason != nil {
			reason = m.Diagnostics.Reason.Type
		}
		cause, _, _ := strings.Cut(res.Header.Get("Groundhog-Prompt-Cache-Break"), ";")
		if cause != c.wantCause || reason != c.wantReason {
			t.Errorf("%s: groundhog %q, provider %q; want %q, %q (header %q)", c.op, cause, reason, c.wantCause, c.wantReason, res.Header.Get("Groundhog-Prompt-Cache-Break"))
		}
		if c.wantCause != "" {
			if want := c.wantCause + "; provider=" + c.wantReason; res.Header.Get("Groundhog-Prompt-Cache-Break") != want {
				t.Errorf("%s: header %q, want %q", c.op, res.Header.Get("Groundhog-Prompt-Cache-Break"), want)
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
		for _, r := range h.ledgerRows() {
			if r.RequestHash == res.Header.Get("Groundhog-Request-Hash") {
				matrix[k].tokens += r.PromptCacheLostTokens
			}
		}
	}
	keys := make([][2]string, 0, len(matrix))
	for k := range matrix {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	var b strings.Builder
	fmt.Fprintf(&b, "agreement with the simulated provider's diagnostics\n%-22s %-18s %6s %12s\n", "groundhog cause", "provider reason", "calls", "lost tokens")
	for _, k := range keys {
		fmt.Fprintf(&b, "%-22s %-18s %6d %12d\n", k[0], k[1], matrix[k].calls, matrix[k].tokens)
	}
	t.Log(b.String())
}
