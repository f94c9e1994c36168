package sim

import (
	"encoding/json"
	"testing"
)

// TestAnthropicMinimums: the shortest cacheable prefix per model family,
// and a per-server override; each row sends one breakpoint of a given
// length and says whether it is written.
func TestAnthropicMinimums(t *testing.T) {
	for _, tc := range []struct {
		model     string
		overrides map[string]int
		words     int
		written   bool
	}{
		{"claude-sonnet-4-5-20250929", nil, 1500, true},
		{"claude-sonnet-4-5-20250929", nil, 900, false},
		{"claude-3-5-haiku-20241022", nil, 1500, false},
		{"claude-3-5-haiku-20241022", nil, 3000, true},
		{"claude-haiku-4-5-20251001", nil, 3000, false},
		{"claude-haiku-4-5-20251001", nil, 5000, true},
		{"claude-opus-4-8", nil, 3000, false},
		{"claude-sonnet-4-6", nil, 1500, false},
		{"claude-sonnet-4-6", nil, 3000, true},
		{"claude-sonnet-5", map[string]int{"claude-sonnet-5": 512}, 600, true},
		{"claude-haiku-4-5-20251001", map[string]int{"claude-haiku": 1024}, 1500, true},
		{"sim-large", nil, 1500, false},
	} {
		s := New(Config{AnthropicMinTokens: tc.overrides})
		body := mreq(map[string]any{"model": tc.model}, []any{ablock(tc.words, "rule", "default")}, amsg("user", ablock(1, "hi", "")))
		status, raw := serveOnce(t, s, "/v1/messages", body)
		if status != 200 {
			t.Fatalf("%s: status %d: %s", tc.model, status, raw)
		}
		var r struct {
			Usage anthUsage `json:"usage"`
		}
		json.Unmarshal(raw, &r)
		if got := r.Usage.Creation > 0; got != tc.written {
			t.Errorf("%s %v, %d words: written %d, want written=%v", tc.model, tc.overrides, tc.words, r.Usage.Creation, tc.written)
		}
	}
}

// TestAnthropicPrewarm: max_tokens 0 writes the cache and answers with no
// content (streamed: no content block), billing the write and no output;
// the next call reads what it wrote.
func TestAnthropicPrewarm(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s := New(Config{})
		sys := []any{ablock(1500, "rule", "default")}
		warm := mreq(map[string]any{"max_tokens": 0, "stream": stream}, sys, amsg("user", ablock(1, "hi", "")))
		status, raw := serveOnce(t, s, "/v1/messages", warm)
		if status != 200 {
			t.Fatalf("stream=%v: status %d: %s", stream, status, raw)
		}
		if stream {
			evs, err := readEvents(raw)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ev := range evs {
				names = append(names, ev.name)
			}
			if len(names) != 3 || names[0] != "message_start" || names[1] != "message_delta" || names[2] != "message_stop" {
				t.Errorf("pre-warm stream events %v, want message_start message_delta message_stop", names)
			}
		} else {
			var m struct {
				Content    []any  `json:"content"`
				StopReason string `json:"stop_reason"`
				Usage      struct {
					Output   int64 `json:"output_tokens"`
					Creation int64 `json:"cache_creation_input_tokens"`
				} `json:"usage"`
			}
			json.Unmarshal(raw, &m)
			if m.Content == nil || len(m.Content) != 0 || m.StopReason != "max_tokens" || m.Usage.Output != 0 || m.Usage.Creation == 0 {
				t.Errorf("pre-warm answer %s: want no content, stop_reason max_tokens, no output, a cache write", raw)
			}
		}
		b := s.Bill()
		if b.OutputTokens != 0 || b.CacheWriteTokens == 0 {
			t.Errorf("stream=%v: pre-warm bill %+v: want a write and no output", stream, b)
		}
		status, raw = serveOnce(t, s, "/v1/messages", mreq(nil, sys, amsg("user", ablock(1, "hi", ""))))
		var r struct {
			Usage anthUsage `json:"usage"`
		}
		json.Unmarshal(raw, &r)
		if status != 200 || r.Usage.Read != b.CacheWriteTokens {
			t.Errorf("stream=%v: after the pre-warm read %d, want %d", stream, r.Usage.Read, b.CacheWriteTokens)
		}
	}
	s := New(Config{})
	if status, _ := serveOnce(t, s, "/v1/messages", mreq(map[string]any{"max_tokens": -1}, nil, amsg("user", ablock(1, "hi", "")))); status != 400 {
		t.Errorf("max_tokens -1: status %d, want 400", status)
	}
}
