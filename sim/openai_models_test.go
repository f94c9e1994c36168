package sim

import (
	"encoding/json"
	"testing"
)

// TestOpenAIModelRules: the OpenAI model families' prompt-cache rules, one
// row per family — the prompt_cache_retention a Responses answer echoes,
// and whether automatic caching reports and bills its writes — with the
// bill exactly what the usage says.
func TestOpenAIModelRules(t *testing.T) {
	for _, tc := range []struct {
		model     string
		retention any // the request's prompt_cache_retention; nil = unset
		echo      string
		writes    bool
	}{
		{"gpt-4o-2024-08-06", nil, "in_memory", false},
		{"gpt-5-mini", nil, "in_memory", false},
		{"gpt-5.4-2026-03-05", nil, "24h", false},
		{"gpt-5.4-2026-03-05", "in_memory", "in_memory", false},
		{"gpt-5.4-mini-2026-03-17", nil, "in_memory", false},
		{"gpt-5.5-2026-04-23", nil, "24h", false},
		{"gpt-5.6-sol", nil, "24h", true},
		{"gpt-5.6-sol", "in_memory", "in_memory", true},
	} {
		s := New(Config{})
		fields := map[string]any{"model": tc.model}
		if tc.retention != nil {
			fields["prompt_cache_retention"] = tc.retention
		}
		body := respReq(fields, rmsg{"developer", "rule", 1200, false}, rmsg{"user", "hi", 1, false})
		var firstWrite int64
		for call := range 2 {
			status, raw := serveOnce(t, s, "/v1/responses", body)
			if status != 200 {
				t.Fatalf("%s: status %d: %s", tc.model, status, raw)
			}
			var r struct {
				Retention string `json:"prompt_cache_retention"`
				Usage     struct {
					Details struct {
						Cached int64 `json:"cached_tokens"`
						Write  int64 `json:"cache_write_tokens"`
					} `json:"input_tokens_details"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if r.Retention != tc.echo {
				t.Errorf("%s %v: prompt_cache_retention %q, want %q", tc.model, tc.retention, r.Retention, tc.echo)
			}
			d := r.Usage.Details
			switch {
			case call == 0 && tc.writes && d.Write != 1152: // whole blocks of 128 up to 1,206 tokens
				t.Errorf("%s: first call wrote %d, want 1152 reported", tc.model, d.Write)
			case call == 0 && !tc.writes && d.Write != 0:
				t.Errorf("%s: first call reported %d written, want none (free writes)", tc.model, d.Write)
			case call == 1 && (d.Cached != 1152 || d.Write != 0):
				t.Errorf("%s: second call cached %d written %d, want 1152 and 0", tc.model, d.Cached, d.Write)
			}
			if call == 0 {
				firstWrite = d.Write
			}
		}
		if b := s.Bill(); b.CacheWriteTokens != firstWrite || b.CachedInputTokens != 1152 {
			t.Errorf("%s: bill writes %d reads %d, want %d and 1152", tc.model, b.CacheWriteTokens, b.CachedInputTokens, firstWrite)
		}
	}
	// The explicit mode's TTL and the retention together are a 400.
	s := New(Config{})
	body := respReq(map[string]any{"model": "gpt-5.6-sol", "prompt_cache_retention": "24h",
		"prompt_cache_options": map[string]any{"mode": "implicit", "ttl": "30m"}}, rmsg{"user", "hi", 1, false})
	if status, raw := serveOnce(t, s, "/v1/responses", body); status != 400 {
		t.Errorf("ttl and retention together: status %d: %s", status, raw)
	}
}
