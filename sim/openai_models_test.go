package sim

import (
	"encoding/json"
	"testing"
	"time"
)

// TestOpenAIModelRules: the OpenAI model families' prompt-cache rules, one
// row per family and setting. Before gpt-5.6, prompt_cache_retention picks
// the lifetime ("in_memory": minutes, "24h"; gpt-5.5 takes "24h" only) of
// free block writes, and prompt_cache_options or a breakpoint is a 400.
// From gpt-5.6 on, every request caches at breakpoints (implicit mode: the
// end of the newest message), writes are reported and billed and live 30
// minutes, "24h" is echoed but changes nothing, "in_memory" is a 400, and
// the options' ttl beside a retention is a 400. The bill is what the usage
// says.
func TestOpenAIModelRules(t *testing.T) {
	implicit := map[string]any{"mode": "implicit"}
	explicit := map[string]any{"mode": "explicit"}
	for _, tc := range []struct {
		name      string
		model     string
		retention any // prompt_cache_retention; nil = unset
		options   any // prompt_cache_options; nil = unset
		bp        bool
		status    int
		echo      string
		// the first call's reported writes, the second's reads, and the
		// reads of a third call 31 minutes later
		written, read, readLater int64
	}{
		{"gpt-4o default", "gpt-4o-2024-08-06", nil, nil, false, 200, "in_memory", 0, 1152, 0},
		{"gpt-5-mini default", "gpt-5-mini", nil, nil, false, 200, "in_memory", 0, 1152, 0},
		{"gpt-5.4 default", "gpt-5.4-2026-03-05", nil, nil, false, 200, "24h", 0, 1152, 1152},
		{"gpt-5.4 in_memory", "gpt-5.4-2026-03-05", "in_memory", nil, false, 200, "in_memory", 0, 1152, 0},
		{"gpt-5.4-mini default", "gpt-5.4-mini-2026-03-17", nil, nil, false, 200, "in_memory", 0, 1152, 0},
		{"gpt-5.5 default", "gpt-5.5-2026-04-23", nil, nil, false, 200, "24h", 0, 1152, 1152},
		{"gpt-5.5 in_memory", "gpt-5.5-2026-04-23", "in_memory", nil, false, 400, "", 0, 0, 0},
		{"gpt-4o options", "gpt-4o-2024-08-06", nil, implicit, false, 400, "", 0, 0, 0},
		{"gpt-5.5 breakpoint", "gpt-5.5-2026-04-23", nil, nil, true, 400, "", 0, 0, 0},
		{"gpt-5.6 default", "gpt-5.6-sol", nil, nil, false, 200, "24h", 1209, 1209, 0},
		{"gpt-5.6 24h", "gpt-5.6-sol", "24h", nil, false, 200, "24h", 1209, 1209, 0},
		{"gpt-5.6 in_memory", "gpt-5.6-sol", "in_memory", nil, false, 400, "", 0, 0, 0},
		{"gpt-5.6 explicit without breakpoint", "gpt-5.6", nil, explicit, false, 200, "24h", 0, 0, 0},
		{"gpt-5.6 explicit breakpoint", "gpt-5.6-terra", nil, explicit, true, 200, "24h", 1203, 1203, 0},
		{"gpt-5.6 ttl and retention", "gpt-5.6-sol", "24h", map[string]any{"mode": "implicit", "ttl": "30m"}, false, 400, "", 0, 0, 0},
	} {
		clock := newFakeClock()
		s := New(Config{Clock: clock})
		fields := map[string]any{"model": tc.model}
		if tc.retention != nil {
			fields["prompt_cache_retention"] = tc.retention
		}
		if tc.options != nil {
			fields["prompt_cache_options"] = tc.options
		}
		body := respReq(fields, rmsg{"developer", "rule", 1200, tc.bp}, rmsg{"user", "hi", 1, false})
		var firstWrite, firstRead int64
		for call := range 3 {
			if call == 2 {
				clock.Advance(31 * time.Minute)
			}
			status, raw := serveOnce(t, s, "/v1/responses", body)
			if status != tc.status {
				t.Fatalf("%s: status %d, want %d: %s", tc.name, status, tc.status, raw)
			}
			if status != 200 {
				if b := s.Bill(); b.Calls != 0 {
					t.Errorf("%s: a 400 was billed: %+v", tc.name, b)
				}
				break
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
				t.Errorf("%s: prompt_cache_retention %q, want %q", tc.name, r.Retention, tc.echo)
			}
			d := r.Usage.Details
			switch {
			case call == 0 && d.Write != tc.written:
				t.Errorf("%s: first call reported %d written, want %d", tc.name, d.Write, tc.written)
			case call == 1 && (d.Cached != tc.read || d.Write != 0):
				t.Errorf("%s: second call cached %d written %d, want %d and 0", tc.name, d.Cached, d.Write, tc.read)
			case call == 2 && d.Cached != tc.readLater:
				t.Errorf("%s: 31 minutes later cached %d, want %d", tc.name, d.Cached, tc.readLater)
			}
			switch call {
			case 0:
				firstWrite = d.Write
			case 1:
				firstRead = d.Cached
			}
			if call == 1 {
				if b := s.Bill(); b.CacheWriteTokens != firstWrite || b.CachedInputTokens != firstRead {
					t.Errorf("%s: bill writes %d reads %d, want %d and %d", tc.name, b.CacheWriteTokens, b.CachedInputTokens, firstWrite, firstRead)
				}
			}
		}
	}
}
