package benchbody

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Anthropic returns the Messages API request (POST /v1/messages) of the
// same agent transcript as Chat, at least size bytes, in the shape a coding
// agent sends it: the system prompt as a text block marked for the prompt
// cache, the tool list with input schemas, and turns of content blocks —
// a user's text, the assistant's tool_use (its input a JSON object, not a
// string), the user's tool_result (its content the tool's JSON output as
// text), the assistant's answer — the last user turn marked for the
// prompt cache too. A 200 KB body holds about the same number of messages
// as Chat's. The same arguments always give the same bytes.
func Anthropic(size int, o Options) []byte {
	if o.Model == "" {
		o.Model = "claude-sonnet-4-5"
	}
	type cacheControl struct {
		Type string `json:"type"`
	}
	type tool struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	}
	var tools []tool
	for i := range toolCount(size, o) {
		name := toolName(i)
		tools = append(tools, tool{Name: name, Description: toolDescription(name), InputSchema: toolSchema()})
	}
	type block struct {
		Type         string         `json:"type"`
		Text         string         `json:"text,omitempty"`
		ID           string         `json:"id,omitempty"`
		Name         string         `json:"name,omitempty"`
		Input        map[string]any `json:"input,omitempty"`
		ToolUseID    string         `json:"tool_use_id,omitempty"`
		Content      string         `json:"content,omitempty"`
		CacheControl *cacheControl  `json:"cache_control,omitempty"`
	}
	type msg struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	system := systemPrompt(size)
	nhits, repeat := turnSizes(size)
	ephemeral := &cacheControl{Type: "ephemeral"}
	body := struct {
		Model       string  `json:"model"`
		MaxTokens   int     `json:"max_tokens"`
		System      []block `json:"system"`
		Messages    []msg   `json:"messages"`
		Temperature float64 `json:"temperature"`
		Stream      bool    `json:"stream"`
		Tools       []tool  `json:"tools"`
	}{Model: o.Model, MaxTokens: 1024, System: []block{{Type: "text", Text: system, CacheControl: ephemeral}},
		Temperature: 0.2, Stream: o.Stream, Tools: tools}
	var msgs []msg
	for i := 0; ; i++ {
		p := paragraphs[i%len(paragraphs)]
		id := fmt.Sprintf("toolu_%06d", i)
		result := toolResult(i, nhits)
		msgs = append(msgs,
			msg{Role: "user", Content: []block{{Type: "text", Text: fmt.Sprintf("Step %d. %s\nPlease continue.", i, p)}}},
			msg{Role: "assistant", Content: []block{{Type: "tool_use", ID: id, Name: toolNames[0],
				Input: toolInput(p)}}},
			msg{Role: "user", Content: []block{{Type: "tool_result", ToolUseID: id, Content: result}}},
			msg{Role: "assistant", Content: []block{{Type: "text", Text: strings.Repeat(p+" ", repeat)}}})
		// The agent's next turn, marked for the prompt cache as coding
		// agents mark their last message.
		last := msg{Role: "user", Content: []block{{Type: "text", Text: "Go on.", CacheControl: ephemeral}}}
		body.Messages = append(msgs[:len(msgs):len(msgs)], last)
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		if len(b) >= size {
			return b
		}
	}
}
