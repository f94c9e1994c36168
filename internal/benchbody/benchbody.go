// Package benchbody generates the deterministic request bodies groundhog's
// benchmarks share: the fingerprint micro-benchmarks and the `groundhog
// bench` load tool measure the same bytes, so their figures compare.
package benchbody

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Options shape a generated chat request.
type Options struct {
	Model  string // the "model" field (default "gpt-4o-mini")
	Stream bool   // the "stream" field
	// Tools is the number of function tools (default: 8, or 1 below 4 KB,
	// where a small request has a small tool list).
	Tools int
}

var paragraphs = []string{
	"The quarterly report shows revenue grew 12% year over year, driven mostly by the EMEA region.\nOperating costs were flat.",
	"Résumé of the meeting: the team agreed to ship the café-menu feature on Thursday; Zoë will own the rollout.",
	"用户希望在下周之前完成数据迁移，并且需要保证服务不中断。请给出详细的步骤。",
	"Here is the code:\n\n```go\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n```\nIt prints a greeting.",
	"Status: ✅ tests pass, ⚠️ two flaky ones, 🚀 deploy scheduled. Next: review the <config> & secrets.",
	"Consider the function f(x) = x² + 3x − 4; its roots are x = 1 and x = −4. The vertex lies at x = −1.5.",
}

var toolNames = []string{"search_documents", "read_file", "run_sql", "send_email", "create_ticket", "list_calendar", "fetch_url", "summarize_thread"}

// Chat returns a realistic OpenAI chat request of at least size bytes (and
// at most a few hundred more): a system prompt, a tool list with JSON
// schemas, and an agent transcript of user turns, assistant tool calls
// (arguments are JSON inside strings, so full of \" escapes), tool results
// and answers, with newlines and non-ASCII text (accents, CJK, emoji) as
// agents produce them. Fields come in the order an SDK sends them, not
// sorted. From 4 KB on the system prompt is long (about 3 KB of rules), as
// an agent's is; a 200 KB body holds about 340 messages. The same
// arguments always give the same bytes.
func Chat(size int, o Options) []byte {
	if o.Model == "" {
		o.Model = "gpt-4o-mini"
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
	var tools []tool
	for i := range toolCount(size, o) {
		name := toolName(i)
		tools = append(tools, tool{Type: "function", Function: fn{Name: name, Description: toolDescription(name), Parameters: toolSchema()}})
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
	system := systemPrompt(size)
	nhits, repeat := turnSizes(size)
	msgs := []msg{{Role: "system", Content: system}}
	body := struct {
		Model       string  `json:"model"`
		Messages    []msg   `json:"messages"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
		Stream      bool    `json:"stream"`
		Tools       []tool  `json:"tools"`
		ToolChoice  string  `json:"tool_choice"`
		User        string  `json:"user"`
	}{Model: o.Model, Temperature: 0.2, MaxTokens: 1024, Stream: o.Stream, Tools: tools, ToolChoice: "auto", User: "user-1234"}
	for i := 0; ; i++ {
		p := paragraphs[i%len(paragraphs)]
		msgs = append(msgs, msg{Role: "user", Content: fmt.Sprintf("Step %d. %s\nPlease continue.", i, p)})
		c := call{ID: fmt.Sprintf("call_%06d", i), Type: "function"}
		c.Function.Name = toolNames[0]
		args, _ := json.Marshal(toolInput(p))
		c.Function.Arguments = string(args)
		msgs = append(msgs, msg{Role: "assistant", Content: nil, ToolCalls: []call{c}})
		result := toolResult(i, nhits)
		msgs = append(msgs, msg{Role: "tool", ToolCallID: c.ID, Content: result})
		msgs = append(msgs, msg{Role: "assistant", Content: strings.Repeat(p+" ", repeat)})
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

// Messages returns the number of messages of a chat or Messages body, or
// of input items of a Responses body.
func Messages(body []byte) int {
	var v struct {
		Messages []json.RawMessage `json:"messages"`
		Input    []json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &v) != nil {
		return 0
	}
	return max(len(v.Messages), len(v.Input))
}

// toolCount is the number of tools of a request of size bytes: o.Tools,
// else 8, or 1 below 4 KB (a small request has a small tool list).
func toolCount(size int, o Options) int {
	switch {
	case o.Tools > 0:
		return o.Tools
	case size < 4<<10:
		return 1
	}
	return len(toolNames)
}

// toolName is the name of the i-th tool.
func toolName(i int) string {
	name := toolNames[i%len(toolNames)]
	if i >= len(toolNames) {
		name = fmt.Sprintf("%s_%d", name, i)
	}
	return name
}

func toolDescription(name string) string {
	return "Use " + name + " when the user asks for it. Returns JSON."
}

// toolSchema is every tool's JSON schema of its input.
func toolSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query":  map[string]any{"type": "string", "description": "what to look for"},
			"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
			"filter": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		},
		"required":             []string{"query"},
		"additionalProperties": false,
	}
}

// systemPrompt is the system prompt of a request of size bytes: from 4 KB
// on, about 3 KB of rules, as an agent's is.
func systemPrompt(size int) string {
	system := "You are a careful assistant for Acme Corp. Answer concisely.\nAlways cite the documents you used."
	if size < 4<<10 {
		return system
	}
	var b strings.Builder
	b.WriteString(system)
	for i := range 24 {
		fmt.Fprintf(&b, "\n%d. Rule: %s", i+1, paragraphs[i%len(paragraphs)])
	}
	return b.String()
}

// toolInput is the input of the tool call of the turn about paragraph p.
func toolInput(p string) map[string]any {
	return map[string]any{"query": p[:min(len(p), 60)], "limit": 10, "filter": map[string]string{"lang": "en"}}
}

// toolResult is the JSON output of the i-th turn's tool call: nhits
// search hits.
func toolResult(i, nhits int) string {
	var hits []map[string]any
	for h := range nhits {
		hits = append(hits, map[string]any{"id": i + h, "score": 0.87 - 0.1*float64(h), "text": paragraphs[(i+h)%len(paragraphs)]})
	}
	result, _ := json.Marshal(map[string]any{"hits": hits})
	return string(result)
}

// turnSizes are the search hits of a tool result and the times an answer
// repeats its paragraph: a small request has short turns; a large one,
// turns of the size an agent's are (about 600 bytes a message on average).
func turnSizes(size int) (hits, repeat int) {
	if size >= 4<<10 {
		return 4, 9
	}
	return 2, 2
}
