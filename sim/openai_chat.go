package sim

import (
	"encoding/json"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// chatRequest is the part of a POST /v1/chat/completions body the sim reads.
type chatRequest struct {
	Model         string            `json:"model"`
	Messages      []chatMessage     `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *count `json:"max_tokens"`
	MaxCompletionTokens *count `json:"max_completion_tokens"`
	N                   *count `json:"n"`
	openaiCacheFields

	// ResponseFormat json_schema asks for structured output (structured.go).
	ResponseFormat json.RawMessage `json:"response_format"`
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parseChat validates a chat request and generates its answer. The prompt is
// the tools (one framed message each, as their JSON), then the messages.
func parseChat(body []byte, sd seed) (*job, error) {
	var req chatRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Missing required parameter: 'messages'.")
	}
	limit, err := maxTokens("max_completion_tokens", req.MaxCompletionTokens)
	if err != nil {
		return nil, err
	}
	if limit == 0 {
		if limit, err = maxTokens("max_tokens", req.MaxTokens); err != nil {
			return nil, err
		}
	}
	n := 1
	if req.N != nil {
		if *req.N < 1 || *req.N > 128 {
			return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid 'n': integer must be between 1 and 128.")
		}
		n = int(*req.N)
	}

	pc, err := newOpenAICache(req.Model, &req.openaiCacheFields, "text")
	if err != nil {
		return nil, err
	}
	ts := pc.ts
	var tools []toolSpec
	for _, raw := range req.Tools {
		ts.begin("tool")
		ts.text(compactJSON(raw))
		ts.end()
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Type == "function" && t.Function.Name != "" {
			tools = append(tools, toolSpec{name: t.Function.Name, schema: t.Function.Parameters})
		}
	}
	for i, m := range req.Messages {
		ts.begin(m.Role)
		if _, err = pc.content(m.Content, fmt.Sprintf("messages[%d].content", i)); err != nil {
			return nil, err
		}
		for _, tc := range m.ToolCalls {
			ts.text(tc.Function.Name)
			ts.text(tc.Function.Arguments)
		}
		pc.endMessage()
	}
	last := req.Messages[len(req.Messages)-1]
	mode, name := chatToolChoice(req.ToolChoice)
	if m, allowed, ok := allowedTools(req.ToolChoice, tools); ok {
		mode, tools = m, allowed
	}
	call, err := pickTool(tools, mode, name, last.Role == "user")
	if err != nil {
		return nil, err
	}

	j := &job{model: req.Model, stream: req.Stream, seed: sd}
	pc.apply(j)
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	j.respond = func(x *exchange) {
		writes := j.reportWrites || openaiRules(req.Model).BillsWrites
		comps := make([]*completion, n)
		for i := range comps {
			comps[i] = generateFor(j.seed, i, limit, call, responseSchema(req.ResponseFormat))
		}
		if j.stream {
			streamChat(x, req.Model, comps, includeUsage, writes)
		} else {
			x.respondJSON(chatCompletion(x, req.Model, comps, writes))
		}
	}
	// Generation is deterministic and cheap: run it now for the usage, and
	// again when responding (keeps the job free of per-choice state).
	for i := 0; i < n; i++ {
		j.output += generateFor(j.seed, i, limit, call, responseSchema(req.ResponseFormat)).tokens
	}
	return j, nil
}

// maxTokens validates an optional max-token limit; 0 means none.
func maxTokens(field string, v *count) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, groundhog.Errorf(groundhog.EINVALID, "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", field, *v)
	}
	return int(*v), nil
}

// chatToolChoice normalizes a chat tool_choice: mode none, auto or required,
// and the forced function name if any.
func chatToolChoice(raw json.RawMessage) (mode, name string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var o struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Function.Name != "" {
		return "required", o.Function.Name
	}
	return "auto", ""
}

// pickTool decides whether the answer is a tool call and of which tool: none
// when there are no function tools or the mode is "none"; the named tool when
// one is forced; the first tool when a call is required or asked for (the
// last message is the user's: a tool result is answered with text).
func pickTool(tools []toolSpec, mode, name string, asked bool) (*toolSpec, error) {
	if len(tools) == 0 || mode == "none" {
		return nil, nil
	}
	if name != "" {
		for i := range tools {
			if tools[i].name == name {
				return &tools[i], nil
			}
		}
		return nil, groundhog.Errorf(groundhog.EINVALID, "tool_choice names a function %q that is not among the tools", name)
	}
	if mode == "required" || asked {
		return &tools[0], nil
	}
	return nil, nil
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64  `json:"cached_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens,omitempty"`
		AudioTokens      int64  `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int64 `json:"reasoning_tokens"`
		AudioTokens              int64 `json:"audio_tokens"`
		AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

// newChatUsage converts u; writes says the usage reports cache writes
// (prompt_cache_options mode, or a model that bills them): the chat usage of
// older models has no cache_write_tokens field.
func newChatUsage(u groundhog.Usage, writes bool) *chatUsage {
	cu := &chatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	cu.PromptTokensDetails.CachedTokens = u.CachedInputTokens
	if writes || u.CacheWriteTokens > 0 {
		w := u.CacheWriteTokens
		cu.PromptTokensDetails.CacheWriteTokens = &w
	}
	return cu
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role        string         `json:"role"`
		Content     *string        `json:"content"`
		Refusal     *string        `json:"refusal"`
		Annotations []any          `json:"annotations"`
		ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	} `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type chatCompletionBody struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             *chatUsage   `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// finishReason returns the OpenAI chat finish reason of c.
func (c *completion) finishReason() string {
	switch {
	case c.tool != nil:
		return "tool_calls"
	case c.truncated:
		return "length"
	}
	return "stop"
}

// toolCallID returns the deterministic id of choice i's tool call.
func (x *exchange) toolCallID(prefix string, i int) string {
	return x.id.derive("tool", uint64(i)).id(prefix)
}

func chatCompletion(x *exchange, model string, comps []*completion, writes bool) chatCompletionBody {
	b := chatCompletionBody{
		ID: x.id.id("chatcmpl-"), Object: "chat.completion", Created: x.created.Unix(), Model: model,
		Usage: newChatUsage(x.usage, writes), ServiceTier: "default", SystemFingerprint: "fp_sim",
	}
	for i, c := range comps {
		var ch chatChoice
		ch.Index = i
		ch.Message.Role = "assistant"
		ch.Message.Annotations = []any{}
		ch.FinishReason = c.finishReason()
		if c.tool != nil {
			tc := chatToolCall{ID: x.toolCallID("call_", i), Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.tool.name, c.tool.args
			ch.Message.ToolCalls = []chatToolCall{tc}
		} else {
			t := c.text()
			ch.Message.Content = &t
		}
		b.Choices = append(b.Choices, ch)
	}
	return b
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	// Usage is null on every chunk but the last when the client asked for
	// usage (stream_options.include_usage), absent otherwise.
	Usage       any    `json:"usage,omitempty"`
	Obfuscation string `json:"obfuscation"`
}

type chatChunkChoice struct {
	Index int `json:"index"`
	Delta struct {
		Role      string          `json:"role,omitempty"`
		Content   json.RawMessage `json:"content,omitempty"`
		Refusal   json.RawMessage `json:"refusal,omitempty"`
		ToolCalls []chatToolCall  `json:"tool_calls,omitempty"`
	} `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// streamChat writes chat.completion.chunk events: per choice a role chunk
// (content "" for text, null before a tool call, as the API sends), the
// tool call's id and name, one chunk per output token (or tool-argument
// piece), a finish chunk; then the usage chunk if asked for, then [DONE].
func streamChat(x *exchange, model string, comps []*completion, includeUsage, writes bool) {
	total := 0
	for _, c := range comps {
		if c.tool != nil {
			total += len(c.argChunks())
		} else {
			total += len(c.words)
		}
	}
	st := x.newSSE(total)
	base := chatChunk{ID: x.id.id("chatcmpl-"), Object: "chat.completion.chunk", Created: x.created.Unix(),
		Model: model, ServiceTier: "default", SystemFingerprint: "fp_sim"}
	if includeUsage {
		base.Usage = json.RawMessage("null")
	}
	one := func(ch chatChunkChoice) chatChunk {
		c := base
		c.Choices = []chatChunkChoice{ch}
		d, _ := json.Marshal(ch.Delta)
		c.Obfuscation = obfuscation(string(d))
		return c
	}
	for i, c := range comps {
		var ch chatChunkChoice
		ch.Index = i
		ch.Delta.Role = "assistant"
		if c.tool != nil {
			ch.Delta.Content, ch.Delta.Refusal = json.RawMessage("null"), json.RawMessage("null")
		} else {
			ch.Delta.Content, ch.Delta.Refusal = json.RawMessage(`""`), json.RawMessage("null")
		}
		if !st.event("", one(ch)) {
			return
		}
		if c.tool != nil {
			var call chatChunkChoice
			call.Index = i
			zero := 0
			tc := chatToolCall{Index: &zero, ID: x.toolCallID("call_", i), Type: "function"}
			tc.Function.Name = c.tool.name
			call.Delta.ToolCalls = []chatToolCall{tc}
			if !st.event("", one(call)) {
				return
			}
		}
		if c.tool != nil {
			for _, piece := range c.argChunks() {
				var d chatChunkChoice
				d.Index = i
				zero := 0
				tc := chatToolCall{Index: &zero}
				tc.Function.Arguments = piece
				d.Delta.ToolCalls = []chatToolCall{tc}
				if !st.chunk("", one(d)) {
					return
				}
			}
		} else {
			for _, w := range c.deltas() {
				var d chatChunkChoice
				d.Index = i
				d.Delta.Content, _ = json.Marshal(w)
				if !st.chunk("", one(d)) {
					return
				}
			}
		}
		var fin chatChunkChoice
		fin.Index = i
		reason := c.finishReason()
		fin.FinishReason = &reason
		if !st.event("", one(fin)) {
			return
		}
	}
	if includeUsage {
		u := base
		u.Choices = []chatChunkChoice{}
		u.Usage = newChatUsage(x.usage, writes)
		u.Obfuscation = obfuscation("")
		if !st.event("", u) {
			return
		}
	}
	st.raw("", []byte("[DONE]"))
}
