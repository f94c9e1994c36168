package fingerprint

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// chatBody returns a realistic OpenAI chat request of at least size bytes:
// a system prompt, a tool list with JSON schemas, and an agent transcript
// of user turns, assistant tool calls (arguments are JSON inside strings,
// so full of \" escapes), tool results and answers, with newlines and
// non-ASCII text (accents, CJK, emoji) as agents produce them. It is
// deterministic.
func chatBody(size int) []byte {
	paragraphs := []string{
		"The quarterly report shows revenue grew 12% year over year, driven mostly by the EMEA region.\nOperating costs were flat.",
		"Résumé of the meeting: the team agreed to ship the café-menu feature on Thursday; Zoë will own the rollout.",
		"用户希望在下周之前完成数据迁移，并且需要保证服务不中断。请给出详细的步骤。",
		"Here is the code:\n\n```go\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n```\nIt prints a greeting.",
		"Status: ✅ tests pass, ⚠️ two flaky ones, 🚀 deploy scheduled. Next: review the <config> & secrets.",
		"Consider the function f(x) = x² + 3x − 4; its roots are x = 1 and x = −4. The vertex lies at x = −1.5.",
	}
	type fn struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	names := []string{"search_documents", "read_file", "run_sql", "send_email"}
	if size < 4<<10 {
		names = names[:1] // a small request has a small tool list
	}
	tools := []tool{}
	for _, name := range names {
		tools = append(tools, tool{Type: "function", Function: fn{
			Name:        name,
			Description: "Use " + name + " when the user asks for it. Returns JSON.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query":  map[string]any{"type": "string", "description": "what to look for"},
					"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
					"filter": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
				},
				"required":             []string{"query"},
				"additionalProperties": false,
			},
		}})
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type msg struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCalls  []call `json:"tool_calls,omitempty"`
		ToolCallID string `json:"tool_call_id,omitempty"`
	}
	msgs := []msg{{Role: "system", Content: "You are a careful assistant for Acme Corp. Answer concisely.\nAlways cite the documents you used."}}
	// Fields in the order an SDK sends them, not sorted.
	body := struct {
		Model       string  `json:"model"`
		Messages    []msg   `json:"messages"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
		Stream      bool    `json:"stream"`
		Tools       []tool  `json:"tools"`
		ToolChoice  string  `json:"tool_choice"`
		User        string  `json:"user"`
	}{Model: "gpt-4o-mini", Temperature: 0.2, MaxTokens: 1024, Stream: true, Tools: tools, ToolChoice: "auto", User: "user-1234"}
	for i := 0; ; i++ {
		p := paragraphs[i%len(paragraphs)]
		msgs = append(msgs, msg{Role: "user", Content: fmt.Sprintf("Step %d. %s\nPlease continue.", i, p)})
		c := call{ID: fmt.Sprintf("call_%06d", i), Type: "function"}
		c.Function.Name = "search_documents"
		args, _ := json.Marshal(map[string]any{"query": p[:min(len(p), 60)], "limit": 10, "filter": map[string]string{"lang": "en"}})
		c.Function.Arguments = string(args)
		msgs = append(msgs, msg{Role: "assistant", Content: nil, ToolCalls: []call{c}})
		result, _ := json.Marshal(map[string]any{"hits": []map[string]any{{"id": i, "score": 0.87, "text": p}, {"id": i + 1, "score": 0.5, "text": paragraphs[(i+1)%len(paragraphs)]}}})
		msgs = append(msgs, msg{Role: "tool", ToolCallID: c.ID, Content: string(result)})
		msgs = append(msgs, msg{Role: "assistant", Content: strings.Repeat(p+" ", 2)})
		body.Messages = msgs
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		if len(b) >= size {
			return b
		}
	}
}

var (
	body1KB   = chatBody(1 << 10)
	body200KB = chatBody(200 << 10)
	benchSink any
)

func benchFingerprint(b *testing.B, body []byte) {
	p := Params{Shape: groundhog.ShapeChat, Tenant: "acme", Versions: "schema=3"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Compute(p, body)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = r
	}
}

func benchSHA256(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		benchSink = sha256.Sum256(body)
	}
}

// The fingerprint benchmarks and their baselines run over the same bytes:
// the goal is Fingerprint ≤ 3× SHA256 at 200 KB.
func BenchmarkFingerprint1KB(b *testing.B)   { benchFingerprint(b, body1KB) }
func BenchmarkFingerprint200KB(b *testing.B) { benchFingerprint(b, body200KB) }
func BenchmarkSHA256_1KB(b *testing.B)       { benchSHA256(b, body1KB) }
func BenchmarkSHA256_200KB(b *testing.B)     { benchSHA256(b, body200KB) }

// benchRatio alternates Compute and sha256.Sum256 over the same body and
// reports their time ratio ("x-sha256"): on a shared, noisy machine the two
// then see the same conditions, which separate benchmarks do not.
func benchRatio(b *testing.B, body []byte) {
	p := Params{Shape: groundhog.ShapeChat, Tenant: "acme", Versions: "schema=3"}
	reps := max(1, 64<<10/len(body)) // keep time.Now out of the measurement
	var fp, sh time.Duration
	for b.Loop() {
		t0 := time.Now()
		for range reps {
			r, err := Compute(p, body)
			if err != nil {
				b.Fatal(err)
			}
			benchSink = r
		}
		t1 := time.Now()
		for range reps {
			benchSink = sha256.Sum256(body)
		}
		t2 := time.Now()
		fp += t1.Sub(t0)
		sh += t2.Sub(t1)
	}
	b.ReportMetric(float64(fp)/float64(sh), "x-sha256")
}

func BenchmarkRatio1KB(b *testing.B)   { benchRatio(b, body1KB) }
func BenchmarkRatio200KB(b *testing.B) { benchRatio(b, body200KB) }

// BenchmarkCanonicalize200KB is the canonicalizer alone (no hashing).
func BenchmarkCanonicalize200KB(b *testing.B) {
	b.SetBytes(int64(len(body200KB)))
	for b.Loop() {
		out, err := Canonicalize(body200KB)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = out
	}
}

func TestChatBodyIsRealistic(t *testing.T) {
	for _, b := range [][]byte{body1KB, body200KB} {
		if !json.Valid(b) {
			t.Fatal("benchmark body is not valid JSON")
		}
		r, err := Compute(Params{Shape: groundhog.ShapeChat}, b)
		if err != nil {
			t.Fatal(err)
		}
		if r.Model != "gpt-4o-mini" || !r.Stream {
			t.Errorf("Compute = %+v", r)
		}
	}
	if n := len(body200KB); n < 200<<10 || n > 210<<10 {
		t.Errorf("200KB body is %d bytes", n)
	}
	if n := len(body1KB); n < 1<<10 || n > 2<<10 {
		t.Errorf("1KB body is %d bytes", n)
	}
}
