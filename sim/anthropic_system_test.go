package sim

import (
	"testing"
)

// TestAnthropicConversationChanges: what keeps Anthropic's cached prefix
// and what does not, per change between two turns of one conversation on
// claude-opus-4-8 (tools, a 5,000-token system block with a breakpoint, a
// breakpoint on the newest user block). A mid-conversation system message
// and adding or removing a deferred tool (defer_loading: tool search loads
// it into the conversation, not the prompt) keep the whole prefix; a block
// appended to the top-level system keeps only the prefix up to the system
// breakpoint; editing the system or adding a loaded tool changes the start
// of the prompt and reads nothing. A system message on a model without the
// feature, first, after an assistant message, or followed by a user
// message is a 400.
func TestAnthropicConversationChanges(t *testing.T) {
	const model = "claude-opus-4-8"
	loaded := map[string]any{"name": "lookup", "description": "look a word up",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"word": map[string]any{"type": "string"}}}}
	deferred := func(name string) map[string]any {
		return map[string]any{"name": name, "description": "a rarely needed tool", "defer_loading": true,
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}
	}
	system := []any{ablock(5000, "rule", "5m")}
	turns := []any{amsg("user", ablock(10, "ask", "")), amsg("assistant", ablock(10, "reply", "")),
		amsg("user", ablock(10, "more", "5m"))}
	sysMsg := amsg("system", ablock(20, "now", ""))
	with := func(msgs ...any) []any { return append(append([]any{}, turns...), msgs...) }
	base := mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive")}}, system, turns...)
	for _, tc := range []struct {
		name   string
		next   string
		status int
		keeps  string // what the second call reads: "all" the first call's prefix, "system" up to the system breakpoint, "none"
	}{
		{"system message appended", mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive")}}, system,
			with(sysMsg)...), 200, "all"},
		{"system message before the answer", mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive")}}, system,
			with(sysMsg, amsg("assistant", ablock(5, "ok", "")), amsg("user", ablock(5, "go", "")))...), 200, "all"},
		{"deferred tool added", mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive"), deferred("billing")}}, system,
			turns...), 200, "all"},
		{"deferred tool removed", mreq(map[string]any{"model": model, "tools": []any{loaded}}, system, turns...), 200, "all"},
		{"top-level system extended", mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive")}},
			[]any{ablock(5000, "rule", "5m"), ablock(20, "now", "")}, turns...), 200, "system"},
		{"top-level system edited", mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive")}},
			[]any{ablock(5000, "law", "5m")}, turns...), 200, "none"},
		{"loaded tool added", mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive"),
			map[string]any{"name": "extra", "input_schema": map[string]any{"type": "object"}}}}, system, turns...), 200, "none"},
		{"system message on an older model", mreq(map[string]any{"model": "claude-sonnet-4-5"}, system, with(sysMsg)...), 400, ""},
		{"system message first", mreq(map[string]any{"model": model}, system, sysMsg, amsg("user", ablock(3, "hi", ""))), 400, ""},
		{"system message after the assistant", mreq(map[string]any{"model": model}, system,
			amsg("user", ablock(3, "hi", "")), amsg("assistant", ablock(3, "yo", "")), sysMsg), 400, ""},
		{"system message before a user message", mreq(map[string]any{"model": model}, system,
			amsg("user", ablock(3, "hi", "")), sysMsg, amsg("user", ablock(3, "hi", ""))), 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status != 200 {
				if status, raw := serveOnce(t, New(Config{}), "/v1/messages", tc.next); status != tc.status {
					t.Fatalf("status %d, want %d: %s", status, tc.status, raw)
				}
				return
			}
			_, url := startSim(t, Config{})
			first := callMessages(t, url, base)
			written := first.Creation
			if first.Read != 0 || written < 5000 {
				t.Fatalf("first call read %d wrote %d", first.Read, written)
			}
			// The system-level prefix: what a request with the same tools
			// and system but another conversation reads.
			sysLevel := callMessages(t, url, mreq(map[string]any{"model": model, "tools": []any{loaded, deferred("archive")}},
				system, amsg("user", ablock(3, "other", "")))).Read
			if sysLevel < 5000 || sysLevel >= written {
				t.Fatalf("system-level prefix %d of %d written", sysLevel, written)
			}
			got := callMessages(t, url, tc.next)
			want := map[string]int64{"all": written, "system": sysLevel, "none": 0}[tc.keeps]
			if got.Read != want {
				t.Errorf("second call read %d, want %d (the first wrote %d)", got.Read, want, written)
			}
		})
	}
}
