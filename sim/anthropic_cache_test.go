package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// ablock is an Anthropic text block of n one-token words; cc is its
// cache_control: "" none, "default" (no ttl), "5m" or "1h".
func ablock(n int, word, cc string) map[string]any {
	b := map[string]any{"type": "text", "text": longText(n, word)}
	if cc != "" {
		b["cache_control"] = ccOf(cc)
	}
	return b
}

func ccOf(ttl string) map[string]any {
	cc := map[string]any{"type": "ephemeral"}
	if ttl != "default" {
		cc["ttl"] = ttl
	}
	return cc
}

// mreq is a Messages request: top-level fields, system blocks, messages
// (role, blocks…).
func mreq(fields map[string]any, system []any, msgs ...any) string {
	b := map[string]any{"model": "sim-small", "max_tokens": 50, "messages": msgs}
	if system != nil {
		b["system"] = system
	}
	for k, v := range fields {
		b[k] = v
	}
	out, _ := json.Marshal(b)
	return string(out)
}

func amsg(role string, blocks ...any) map[string]any {
	return map[string]any{"role": role, "content": blocks}
}

// anthUsage is a Messages usage as the sim reports it.
type anthUsage struct {
	Input    int64 `json:"input_tokens"`
	Read     int64 `json:"cache_read_input_tokens"`
	Creation int64 `json:"cache_creation_input_tokens"`
	Split    struct {
		M5 int64 `json:"ephemeral_5m_input_tokens"`
		H1 int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

func callMessages(t *testing.T, base, body string) anthUsage {
	t.Helper()
	status, _, raw := post(t, base, "/v1/messages", body, "x-api-key", "sk-ant-test")
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	var r struct {
		Usage anthUsage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Usage.Split.M5+r.Usage.Split.H1 != r.Usage.Creation {
		t.Fatalf("cache_creation split does not add up: %s", raw)
	}
	return r.Usage
}

// TestAnthropicCacheRules: one case per Anthropic rule. Each step is a
// request and the read, written (of which 1h) tokens it must report; every
// case runs on a fresh sim.
func TestAnthropicCacheRules(t *testing.T) {
	// System blocks start 3 tokens in (framing); the system ends 1 token
	// after its last block; a message's first block starts 3 tokens in.
	sys := func(cc string) []any { return []any{ablock(1100, "rule", cc)} } // boundary at 1103, system ends 1104
	user := func(word, cc string) map[string]any { return amsg("user", ablock(1, word, cc)) }
	// user(…) after sys: its block boundary is at 1104+3+1 = 1108.
	tool := map[string]any{"name": "lookup", "description": longText(1100, "desc"), "input_schema": map[string]any{"type": "object"},
		"cache_control": ccOf("default")}
	toolTokens := func() int64 {
		ts := newTokenStream(0)
		raw, _ := json.Marshal(tool)
		ts.begin("tool")
		ts.text(compactJSON(raw))
		ts.end()
		return int64(ts.n)
	}()
	blocks := func(n int, last string) map[string]any { // "q" then n one-token blocks, the last with cc
		bs := []any{ablock(1, "q", "")}
		for i := 1; i <= n; i++ {
			cc := ""
			if i == n {
				cc = last
			}
			bs = append(bs, ablock(1, fmt.Sprintf("b%d", i), cc))
		}
		return amsg("user", bs...)
	}
	type step struct {
		body                  string
		read, written, long1h int64
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"minimum: sim-small caches 1,103 tokens", []step{
			{mreq(nil, sys("default"), user("hi", "")), 0, 1103, 0},
		}},
		{"minimum: sim-large needs 2,048", []step{
			{mreq(map[string]any{"model": "sim-large"}, sys("default"), user("hi", "")), 0, 0, 0},
			{mreq(map[string]any{"model": "sim-large"}, []any{ablock(2100, "rule", "default")}, user("hi", "")), 0, 2103, 0},
		}},
		{"tools are the first level: a system change still reads them", []step{
			{mreq(map[string]any{"tools": []any{tool}}, []any{ablock(10, "a", "")}, user("hi", "")), 0, toolTokens, 0},
			{mreq(map[string]any{"tools": []any{tool}}, []any{ablock(10, "b", "")}, user("hi", "")), toolTokens, 0, 0},
		}},
		{"1h before 5m: writes split by TTL", []step{
			{mreq(nil, []any{ablock(1100, "rule", "1h"), ablock(100, "more", "5m")}, user("hi", "")), 0, 1203, 1103},
			{mreq(nil, []any{ablock(1100, "rule", "1h"), ablock(100, "more", "5m")}, user("hi", "")), 1203, 0, 0},
		}},
		{"lookback: 20 blocks before the breakpoint are checked", []step{
			{mreq(nil, sys(""), blocks(0, "default")), 0, 0, 0}, // "q" alone carries no marker
			{mreq(nil, sys(""), amsg("user", ablock(1, "q", "default"))), 0, 1108, 0},
			{mreq(nil, sys(""), blocks(20, "default")), 1108, 20, 0},
		}},
		{"lookback: a change 21 blocks back is not found", []step{
			{mreq(nil, sys(""), amsg("user", ablock(1, "q", "default"))), 0, 1108, 0},
			{mreq(nil, sys(""), blocks(21, "default")), 0, 1108 + 21, 0},
		}},
		{"automatic: a top-level cache_control marks the last block", []step{
			{mreq(map[string]any{"cache_control": ccOf("default")}, sys(""), user("hi", "")), 0, 1108, 0},
			{mreq(map[string]any{"cache_control": ccOf("1h")}, sys(""), user("hi", "")), 1108, 0, 0},
		}},
		{"tool_choice change invalidates the messages level only", []step{
			{mreq(nil, sys("default"), user("hi", "default")), 0, 1108, 0},
			{mreq(map[string]any{"tool_choice": map[string]any{"type": "none"}}, sys("default"), user("hi", "default")), 1103, 5, 0},
			{mreq(map[string]any{"tool_choice": map[string]any{"type": "none"}}, sys("default"), user("hi", "default")), 1108, 0, 0},
		}},
		{"thinking change invalidates the messages level only", []step{
			{mreq(nil, sys("default"), user("hi", "default")), 0, 1108, 0},
			{mreq(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}}, sys("default"), user("hi", "default")), 1103, 5, 0},
		}},
		{"adding an image invalidates the messages level only", []step{
			{mreq(nil, sys("default"), user("hi", "default")), 0, 1108, 0},
			{mreq(nil, sys("default"), user("hi", ""), amsg("assistant", ablock(1, "ok", "")),
				amsg("user", map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
					ablock(1, "see", "default"))), 1103, -1, 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, base := startSim(t, Config{})
			for i, s := range c.steps {
				u := callMessages(t, base, s.body)
				if u.Read != s.read || (s.written >= 0 && u.Creation != s.written) || u.Split.H1 != s.long1h {
					t.Fatalf("step %d: usage %+v, want read %d written %d (1h %d)", i, u, s.read, s.written, s.long1h)
				}
			}
		})
	}
}

func TestAnthropicCacheErrors(t *testing.T) {
	s, base := startSim(t, Config{})
	five := []any{}
	for i := range 5 {
		five = append(five, ablock(1, fmt.Sprintf("w%d", i), "default"))
	}
	for _, c := range []struct{ name, body, msg string }{
		{"a 5th breakpoint", mreq(nil, nil, amsg("user", five...)), "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"a 5th breakpoint by the top-level one", mreq(map[string]any{"cache_control": ccOf("default")}, nil, amsg("user", append(five[:4:4], ablock(1, "x", ""))...)),
			"A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"empty text", mreq(nil, nil, amsg("user", ablock(0, "", "default"))), "messages.0.content.0.text: cache_control cannot be set for empty text blocks"},
		{"empty system text", mreq(nil, []any{ablock(0, "", "default")}, amsg("user", ablock(1, "x", ""))), "system.0.text: cache_control cannot be set for empty text blocks"},
		{"1h after 5m", mreq(nil, []any{ablock(1, "a", "5m")}, amsg("user", ablock(1, "x", "1h"))), "ttl='1h'"},
		{"1h after a default 5m", mreq(map[string]any{"cache_control": ccOf("1h")}, []any{ablock(1, "a", "default")}, amsg("user", ablock(1, "x", ""))), "ttl='1h'"},
		{"unknown ttl", mreq(nil, nil, amsg("user", ablock(1, "x", "10m"))), "ttl"},
		{"unknown type", mreq(nil, nil, amsg("user", map[string]any{"type": "text", "text": "x", "cache_control": map[string]any{"type": "persistent"}})), "'ephemeral'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.Bill()
			status, _, body := post(t, base, "/v1/messages", c.body)
			if status != 400 {
				t.Fatalf("status %d: %s", status, body)
			}
			if fam, typ, msg := errorShape(t, body); fam != "anthropic" || typ != "invalid_request_error" || !strings.Contains(msg, c.msg) {
				t.Fatalf("error %s/%s %q, want one containing %q", fam, typ, msg, c.msg)
			}
			checkNotBilled(t, s, before)
		})
	}
	// 5m after 1h is the allowed order.
	if status, _, body := post(t, base, "/v1/messages", mreq(nil, []any{ablock(1, "a", "1h")}, amsg("user", ablock(1, "x", "5m")))); status != 200 {
		t.Fatalf("5m after 1h: %d %s", status, body)
	}
}

// TestAnthropicLongTTLSDK: through the SDK, a 1h breakpoint outlives a 5m
// one, its writes are reported and billed apart (at 2× input), and input_tokens
// is what follows the last breakpoint.
func TestAnthropicLongTTLSDK(t *testing.T) {
	clock := newFakeClock()
	s, base := startSim(t, Config{Clock: clock})
	client := anthropicClient(base)
	ctx := context.Background()
	cc := func(ttl anthropic.CacheControlEphemeralTTL) anthropic.CacheControlEphemeralParam {
		return anthropic.CacheControlEphemeralParam{TTL: ttl}
	}
	params := anthropic.MessageNewParams{Model: "sim-small", MaxTokens: 50,
		System: []anthropic.TextBlockParam{
			{Text: longText(1100, "rule"), CacheControl: cc(anthropic.CacheControlEphemeralTTLTTL1h)}, // 1103
			{Text: longText(100, "more"), CacheControl: cc(anthropic.CacheControlEphemeralTTLTTL5m)},  // 1203
		},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}, // total 1203+1+3+1+1
	}
	const total = 1209
	p := pricing.Default()["sim-small"]
	for i, step := range []struct {
		advance                    time.Duration
		read, written5m, written1h int64
	}{
		{0, 0, 100, 1103},
		{4 * time.Minute, 1203, 0, 0},
		{10 * time.Minute, 1103, 100, 0}, // the 5m entry expired, the 1h one lives
		{59 * time.Minute, 1103, 100, 0}, // the 1h entry, rewritten at 14m, still lives
		{61 * time.Minute, 0, 100, 1103},
	} {
		clock.Advance(step.advance)
		before := s.Bill()
		var u anthropic.Usage
		if i%2 == 0 {
			msg, err := client.Messages.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			u = msg.Usage
		} else { // the stream reports the same, split included
			st := client.Messages.NewStreaming(ctx, params)
			var acc anthropic.Message
			for st.Next() {
				if err := acc.Accumulate(st.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			u = acc.Usage
		}
		if u.CacheReadInputTokens != step.read || u.CacheCreation.Ephemeral5mInputTokens != step.written5m ||
			u.CacheCreation.Ephemeral1hInputTokens != step.written1h || u.CacheCreationInputTokens != step.written5m+step.written1h ||
			u.InputTokens != total-1203 {
			t.Fatalf("step %d: usage %s", i, u.RawJSON())
		}
		after := s.Bill()
		wantIn := groundhog.Money((total-1203)*p.Input + step.read*p.CachedInput + step.written5m*p.CacheWrite + step.written1h*2*p.Input)
		if after.CacheWrite1hTokens-before.CacheWrite1hTokens != step.written1h || after.InputUSD-before.InputUSD != wantIn ||
			after.OutputUSD-before.OutputUSD != groundhog.Money(u.OutputTokens*p.Output) || after.USD-before.USD != wantIn+groundhog.Money(u.OutputTokens*p.Output) {
			t.Fatalf("step %d: bill grew from %+v to %+v, want input_usd +%s", i, before, after, wantIn)
		}
	}
}
