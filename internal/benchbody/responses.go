package benchbody

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Responses returns the OpenAI Responses API request (POST /v1/responses)
// of the same agent transcript as Chat, at least size bytes, in the shape a
// coding agent on that API sends it (Codex CLI, the OpenAI Agents SDK):
// the system prompt as "instructions", the tool list as flat function
// tools, and the transcript as input items — a user message of input_text,
// the reasoning item the model returned (its encrypted_content sent back,
// as a stateless agent with "store": false must), the function_call (its
// arguments JSON inside a string), the function_call_output, the
// assistant's output_text message — then the next user message. A
// prompt_cache_key names the conversation, as those agents send one. A 200 KB
// body holds about as many items as Chat's has messages. The same
// arguments always give the same bytes.
func Responses(size int, o Options) []byte {
	if o.Model == "" {
		o.Model = "gpt-5-codex"
	}
	type tool struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Strict      bool           `json:"strict"`
		Parameters  map[string]any `json:"parameters"`
	}
	var tools []tool
	for i := range toolCount(size, o) {
		name := toolName(i)
		tools = append(tools, tool{Type: "function", Name: name, Description: toolDescription(name), Parameters: toolSchema()})
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type summary struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type item struct {
		Type             string     `json:"type"`
		Role             string     `json:"role,omitempty"`
		Content          []part     `json:"content,omitempty"`
		Summary          *[]summary `json:"summary,omitempty"`
		EncryptedContent string     `json:"encrypted_content,omitempty"`
		Name             string     `json:"name,omitempty"`
		Arguments        string     `json:"arguments,omitempty"`
		CallID           string     `json:"call_id,omitempty"`
		Output           string     `json:"output,omitempty"`
	}
	nhits, repeat := turnSizes(size)
	body := struct {
		Model             string            `json:"model"`
		Instructions      string            `json:"instructions"`
		Input             []item            `json:"input"`
		Tools             []tool            `json:"tools"`
		ToolChoice        string            `json:"tool_choice"`
		ParallelToolCalls bool              `json:"parallel_tool_calls"`
		Reasoning         map[string]string `json:"reasoning"`
		Store             bool              `json:"store"`
		Stream            bool              `json:"stream"`
		Include           []string          `json:"include"`
		PromptCacheKey    string            `json:"prompt_cache_key"`
	}{Model: o.Model, Instructions: systemPrompt(size), Tools: tools, ToolChoice: "auto",
		Reasoning: map[string]string{"effort": "medium", "summary": "auto"}, Stream: o.Stream,
		Include: []string{"reasoning.encrypted_content"}, PromptCacheKey: "0199a3c4-5be1-7f21-9d0e-bench0000conv"}
	var items []item
	for i := 0; ; i++ {
		p := paragraphs[i%len(paragraphs)]
		id := fmt.Sprintf("call_%06d", i)
		args, _ := json.Marshal(toolInput(p))
		result := toolResult(i, nhits)
		items = append(items,
			item{Type: "message", Role: "user", Content: []part{{Type: "input_text", Text: fmt.Sprintf("Step %d. %s\nPlease continue.", i, p)}}},
			item{Type: "reasoning", Summary: &[]summary{}, EncryptedContent: encrypted(i, size)},
			item{Type: "function_call", Name: toolNames[0], Arguments: string(args), CallID: id},
			item{Type: "function_call_output", CallID: id, Output: result},
			item{Type: "message", Role: "assistant", Content: []part{{Type: "output_text", Text: strings.Repeat(p+" ", repeat)}}})
		body.Input = append(items[:len(items):len(items)], item{Type: "message", Role: "user", Content: []part{{Type: "input_text", Text: "Go on."}}})
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		if len(b) >= size {
			return b
		}
	}
}

// encrypted is the i-th reasoning item's encrypted_content: opaque base64
// as the provider returns it (about 400 bytes in a large body, where real
// ones run from a few hundred bytes to a few kilobytes; 64 in a small one),
// the same for the same arguments.
func encrypted(i, size int) string {
	n := 48
	if size >= 4<<10 {
		n = 300
	}
	b := make([]byte, n)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
	return "gAAAAA" + base64.URLEncoding.EncodeToString(b)
}
