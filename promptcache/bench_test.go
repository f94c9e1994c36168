package promptcache

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// agentBody returns a deterministic Anthropic agent request of about size
// bytes and msgs messages: tools with schemas, a system prompt, then user
// turns, assistant tool calls and tool results of mixed prose, code, JSON
// and non-ASCII text (the idea of fingerprint's 200 KB chat body).
func agentBody(size, msgs int) []byte { return agentPrefix(size, msgs, msgs) }

// agentPrefix is agentBody(size, msgs) cut to its first emit messages: the
// same conversation an earlier turn.
func agentPrefix(size, msgs, emit int) []byte {
	paragraphs := []string{
		"The quarterly report shows revenue grew 12% year over year, driven mostly by the EMEA region.\nOperating costs were flat.",
		"Résumé of the meeting: the team agreed to ship the café-menu feature on Thursday; Zoë will own the rollout.",
		"用户希望在下周之前完成数据迁移，并且需要保证服务不中断。请给出详细的步骤。",
		"Here is the code:\n\n```go\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n```\nIt prints a greeting.",
		"Status: ✅ tests pass, ⚠️ two flaky ones, 🚀 deploy scheduled at 2026-12-01T09:30:00Z. Next: review the <config>.",
	}
	var tools []any
	for _, n := range []string{"search_documents", "read_file", "run_sql", "send_email"} {
		tools = append(tools, map[string]any{"name": n, "description": "Use " + n + " when asked. Returns JSON.",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}}})
	}
	per := size / msgs
	text := func(i int) string {
		var b strings.Builder
		for k := i; b.Len() < per-60; k++ {
			b.WriteString(paragraphs[k%len(paragraphs)])
			b.WriteString(" ")
		}
		return b.String()
	}
	var ms []any
	for i := range emit {
		switch i % 3 {
		case 0:
			ms = append(ms, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text(i)}}})
		case 1:
			ms = append(ms, map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "Let me look."},
				map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%03d", i), "name": "read_file", "input": map[string]any{"query": text(i)[:per/2]}}}})
		case 2:
			ms = append(ms, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%03d", i-1), "content": text(i)}}})
		}
	}
	b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": tools,
		"system": []any{map[string]any{"type": "text", "text": "You are a careful assistant for Acme Corp. " + text(0)}}, "messages": ms})
	return b
}

// BenchmarkAgent200KB: what the diagnosis stage (Before with injection +
// After) adds to a request, against fingerprint.Compute alone on the same
// 200 KB, 300-message body (the ratio is the figure to report).
func BenchmarkAgent200KB(b *testing.B) {
	body := agentBody(200<<10, 300)
	prev := agentPrefix(200<<10, 300, 297) // the previous turn
	b.Run("fingerprint", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := fingerprint.Compute(fingerprint.Params{Shape: messages, Tenant: "t"}, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := Parse(messages, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("inject", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := Inject(messages, "", body, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("diagnose+inject-cold", func(b *testing.B) {
		// A chain seen for the first time: every segment counted.
		ctx := context.Background()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			tr := NewTracker(Config{})
			call, err := tr.Before(ctx, &Request{Tenant: "t", Operation: "agent", Shape: messages, Body: body, Breakpoints: true})
			if err != nil {
				b.Fatal(err)
			}
			tr.After(ctx, call, groundhog.Usage{})
		}
	})
	b.Run("diagnose+inject", func(b *testing.B) {
		// The next turn of a known conversation (the gateway's common case).
		tr := NewTracker(Config{})
		ctx := context.Background()
		req := &Request{Tenant: "t", Operation: "agent", Shape: messages, Body: prev, Breakpoints: true}
		call, _ := tr.Before(ctx, req)
		tr.After(ctx, call, groundhog.Usage{})
		req.Body = body
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			call, err := tr.Before(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			tr.After(ctx, call, groundhog.Usage{CachedInputTokens: int64(call.Diagnosis.Expected)})
		}
	})
}

// BenchmarkChainMemory reports the diagnosis state per tracked chain
// (Tracker.Bytes and the Go heap) for a support-agent prompt and for the
// 300-message agent, and the total for 100,000 support-agent chains.
func BenchmarkChainMemory(b *testing.B) {
	for b.Loop() {
		ctx := context.Background()
		const n = 100_000
		body := baseConvo(chat).next(1).body()
		call, _ := NewTracker(Config{}).Before(ctx, &Request{Tenant: "t", Operation: "o", Shape: chat, Body: body})
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		tr := NewTracker(Config{MaxChains: n, MaxBytes: 1 << 40})
		for i := range n {
			c := *call
			c.chainKey, c.opKey = chainKeys(fmt.Sprint("tenant", i), "support", "", groundhog.ShapeMessages, "sim-small")
			tr.After(ctx, &c, groundhog.Usage{})
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(tr.Bytes())/n, "bytes/chain")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "heap-bytes/chain")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/(1<<20), "heap-MiB/100k-chains")
		b.ReportMetric(float64(len(call.prefix.Segments)), "segments/chain")
		runtime.KeepAlive(tr)

		agent := NewTracker(Config{})
		ac, _ := agent.Before(ctx, &Request{Tenant: "t", Operation: "o", Shape: messages, Body: agentBody(200<<10, 300)})
		agent.After(ctx, ac, groundhog.Usage{})
		b.ReportMetric(float64(agent.Bytes()), "bytes/agent-chain")
	}
}

// BenchmarkAgent200KBRatio interleaves fingerprint.Compute and the
// diagnosis stage (warm: the next turn of a known conversation) call by
// call, so a loaded machine slows both alike, and reports the ratio of
// their total times (the goal: ≤ 1.5).
func BenchmarkAgent200KBRatio(b *testing.B) {
	body := agentBody(200<<10, 300)
	prev := agentPrefix(200<<10, 300, 297)
	tr := NewTracker(Config{})
	ctx := context.Background()
	req := &Request{Tenant: "t", Operation: "agent", Shape: messages, Body: prev, Breakpoints: true}
	call, _ := tr.Before(ctx, req)
	tr.After(ctx, call, groundhog.Usage{})
	req.Body = body
	var fp, diag time.Duration
	var ratios, coldRatios []float64
	for b.Loop() {
		t0 := time.Now()
		if _, err := fingerprint.Compute(fingerprint.Params{Shape: messages, Tenant: "t"}, body); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		call, err := tr.Before(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		tr.After(ctx, call, groundhog.Usage{CachedInputTokens: int64(call.Diagnosis.Expected)})
		t2 := time.Now()
		fp += t1.Sub(t0)
		diag += t2.Sub(t1)
		ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
		// Cold: the same body in a chain never seen (every segment counted).
		cold := NewTracker(Config{})
		t3 := time.Now()
		cc, err := cold.Before(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		cold.After(ctx, cc, groundhog.Usage{})
		coldRatios = append(coldRatios, float64(time.Since(t3))/float64(t1.Sub(t0)))
	}
	sort.Float64s(coldRatios)
	b.ReportMetric(coldRatios[len(coldRatios)/2], "cold-median-x-fingerprint")
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-x-fingerprint")
	b.ReportMetric(float64(diag)/float64(fp), "total-x-fingerprint")
}
