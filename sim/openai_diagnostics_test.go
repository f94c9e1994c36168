package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// OpenAI Responses prompt-cache diagnostics: each request names the
// baseline's response in prompt_cache_options.comparison_response_id and
// gets the first level that differs, with token counts that agree with
// what the simulated cache read.
func TestOpenAICacheDiagnostics(t *testing.T) {
	_, base := startSim(t, Config{})
	tools := []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}
	instr := "You are a support agent. " + longText(1500, "policy")
	turn := func(word string) rmsg { return rmsg{"user", word, 40, false} }
	// body is the baseline with edits applied to its top-level fields.
	body := func(edit func(b map[string]any), items ...any) map[string]any {
		b := map[string]any{"model": "sim-small", "instructions": instr, "tools": tools, "prompt_cache_key": "support:v1"}
		in := []any{}
		for _, it := range items {
			if m, ok := it.(rmsg); ok {
				it = m.item()
			}
			in = append(in, it)
		}
		b["input"] = in
		if edit != nil {
			edit(b)
		}
		return b
	}
	type answer struct {
		ID    string `json:"id"`
		Usage struct {
			InputTokens        int `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
		Diag json.RawMessage `json:"prompt_cache_diagnostics"`
	}
	send := func(b map[string]any, compare string) answer {
		t.Helper()
		if compare != "" {
			b["prompt_cache_options"] = map[string]any{"comparison_response_id": compare}
		}
		raw, _ := json.Marshal(b)
		status, _, out := post(t, base, "/v1/responses", string(raw))
		if status != 200 {
			t.Fatalf("%d %s", status, out)
		}
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	q1, q2 := turn("first"), turn("second")
	// The baseline asks for nothing: every response can be compared with.
	first := send(body(nil, q1, rmsg{"assistant", "answer", 40, false}, q2), "")
	if first.Diag != nil {
		t.Fatalf("a request without comparison_response_id got diagnostics %s", first.Diag)
	}
	repeat := send(body(nil, q1, rmsg{"assistant", "answer", 40, false}, q2), first.ID)
	if string(repeat.Diag) != `{"type":"cache_hit"}` {
		t.Fatalf("a repeat: %s", repeat.Diag)
	}
	// What the baseline made reusable is what a repeat of it reads.
	reusable := repeat.Usage.InputTokensDetails.CachedTokens
	if reusable < 1024 {
		t.Fatalf("the repeat read %d tokens: the baseline wrote too little for the test", reusable)
	}
	edited := rmsg{"assistant", "rewritten", 40, false}
	compaction := map[string]any{"type": "compaction", "encrypted_content": "gAAAA" + strings.Repeat("x", 200)}
	for _, c := range []struct {
		name   string
		body   map[string]any
		reason string // "" for cache_hit
		// from is where the request diverges (tokens kept), -1 when
		// nothing diverged.
		from int
	}{
		{"extended", body(nil, q1, rmsg{"assistant", "answer", 40, false}, q2, rmsg{"assistant", "more", 5, false}, turn("third")), "", -1},
		{"model", body(func(b map[string]any) { b["model"] = "sim-large" }, q1, rmsg{"assistant", "answer", 40, false}, q2), "model_changed", 0},
		{"key", body(func(b map[string]any) { b["prompt_cache_key"] = "support:v2" }, q1, rmsg{"assistant", "answer", 40, false}, q2), "prompt_cache_key_changed", 0},
		{"tools", body(func(b map[string]any) {
			b["tools"] = []any{map[string]any{"type": "function", "name": "lookup_v2", "parameters": map[string]any{"type": "object"}}}
		}, q1, rmsg{"assistant", "answer", 40, false}, q2), "tools_changed", 0},
		{"text format", body(func(b map[string]any) {
			b["text"] = map[string]any{"format": map[string]any{"type": "json_object"}}
		}, q1, rmsg{"assistant", "answer", 40, false}, q2), "text_format_changed", 0},
		{"reasoning effort", body(func(b map[string]any) { b["reasoning"] = map[string]any{"effort": "high"} }, q1, rmsg{"assistant", "answer", 40, false}, q2), "reasoning_effort_changed", 0},
		{"verbosity", body(func(b map[string]any) { b["text"] = map[string]any{"verbosity": "low"} }, q1, rmsg{"assistant", "answer", 40, false}, q2), "verbosity_changed", 0},
		{"defaults spelled out", body(func(b map[string]any) {
			b["text"] = map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "medium"}
			b["service_tier"] = "auto"
		}, q1, rmsg{"assistant", "answer", 40, false}, q2), "", -1},
		{"compacted", body(nil, q1, compaction, q2), "context_compacted", 1},
		{"history edited", body(nil, q1, edited, q2), "input_changed", 1},
		{"instructions", body(func(b map[string]any) { b["instructions"] = "Now: 09:01. " + instr }, q1, rmsg{"assistant", "answer", 40, false}, q2), "input_changed", -2},
		{"service tier", body(func(b map[string]any) { b["service_tier"] = "flex" }, q1, rmsg{"assistant", "answer", 40, false}, q2), "service_tier_changed", 0},
		{"model and tools", body(func(b map[string]any) {
			b["model"] = "sim-large"
			b["tools"] = []any{}
		}, q1, rmsg{"assistant", "answer", 40, false}, q2), "model_changed", 0},
	} {
		a := send(c.body, first.ID)
		var d struct {
			Type     string `json:"type"`
			Reason   string `json:"reason"`
			Missed   *int   `json:"cache_missed_tokens"`
			Reusable *int   `json:"comparison_reusable_tokens"`
		}
		if err := json.Unmarshal(a.Diag, &d); err != nil {
			t.Fatalf("%s: %s: %v", c.name, a.Diag, err)
		}
		cached, total := a.Usage.InputTokensDetails.CachedTokens, a.Usage.InputTokens
		if c.reason == "" {
			if string(a.Diag) != `{"type":"cache_hit"}` {
				t.Errorf("%s: %s, want cache_hit", c.name, a.Diag)
			}
			if cached < reusable {
				t.Errorf("%s: cache_hit but %d tokens read, the baseline made %d reusable", c.name, cached, reusable)
			}
			continue
		}
		if d.Type != "cache_miss" || d.Reason != c.reason || d.Missed == nil || d.Reusable == nil {
			t.Errorf("%s: %s, want a cache_miss for %s with both counts", c.name, a.Diag, c.reason)
			continue
		}
		if *d.Reusable != reusable {
			t.Errorf("%s: comparison_reusable_tokens %d, want %d (what a repeat of the baseline reads)", c.name, *d.Reusable, reusable)
		}
		switch {
		case c.from == 0:
			if *d.Missed != total || cached != 0 {
				t.Errorf("%s: %d tokens missed of %d, %d read; want all missed and none read", c.name, *d.Missed, total, cached)
			}
		default:
			// The cache never reads past the divergence.
			if *d.Missed <= 0 || *d.Missed >= total || cached > total-*d.Missed {
				t.Errorf("%s: %d tokens missed of %d, %d read", c.name, *d.Missed, total, cached)
			}
			if c.from == -2 && *d.Missed < 1500 {
				t.Errorf("%s: %d tokens missed, want the instructions and all after them", c.name, *d.Missed)
			}
		}
	}
	if a := send(body(nil, q1), "resp_unknown"); string(a.Diag) != `{"type":"comparison_response_not_found"}` {
		t.Errorf("unknown comparison id: %s", a.Diag)
	}
	bad, _ := json.Marshal(body(func(b map[string]any) { b["prompt_cache_options"] = map[string]any{"comparison_response_id": 42} }, q1))
	if status, _, out := post(t, base, "/v1/responses", string(bad)); status != 400 || !strings.Contains(string(out), "comparison_response_id") {
		t.Errorf("a numeric comparison id: %d %s", status, out)
	}
}

// Asking for diagnostics leaves the caching mode alone: a request whose
// prompt_cache_options holds only comparison_response_id caches as one
// without options (automatic, writes unreported), and a stream carries the
// verdict on response.completed only.
func TestOpenAICacheDiagnosticsStream(t *testing.T) {
	_, base := startSim(t, Config{})
	items := []any{rmsg{"developer", "rule", 1500, false}, rmsg{"user", "q", 20, false}}
	u0, first := callResponses(t, base, respReq(nil, items...))
	u1, _ := callResponses(t, base, respReq(map[string]any{"prompt_cache_options": map[string]any{"comparison_response_id": first["id"]}}, items...))
	if u1.written != u0.written || u1.cached == 0 {
		t.Errorf("with comparison_response_id: %+v after %+v; want the automatic mode's read and no reported write", u1, u0)
	}
	body := respReq(map[string]any{"stream": true, "prompt_cache_options": map[string]any{"comparison_response_id": first["id"]}},
		append(items, rmsg{"assistant", "a", 5, false}, rmsg{"user", "r", 5, false})...)
	status, _, raw := post(t, base, "/v1/responses", body)
	if status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	seen := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type     string `json:"type"`
			Response *struct {
				Diag json.RawMessage `json:"prompt_cache_diagnostics"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(d), &ev) == nil && ev.Response != nil {
			seen[ev.Type] = string(ev.Response.Diag)
		}
	}
	if seen["response.completed"] != `{"type":"cache_hit"}` || seen["response.created"] != "" || seen["response.in_progress"] != "" {
		t.Errorf("stream diagnostics by event: %v", seen)
	}
}
