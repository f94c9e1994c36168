package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/groundhog-ai/groundhog"
)

// messagesRequest is the part of a POST /v1/messages body the sim reads.
type messagesRequest struct {
	Model        string             `json:"model"`
	MaxTokens    *count             `json:"max_tokens"`
	Messages     []anthropicMessage `json:"messages"`
	System       json.RawMessage    `json:"system"`
	Tools        []json.RawMessage  `json:"tools"`
	ToolChoice   json.RawMessage    `json:"tool_choice"`
	Stream       bool               `json:"stream"`
	Thinking     json.RawMessage    `json:"thinking"`
	CacheControl json.RawMessage    `json:"cache_control"`
	Diagnostics  json.RawMessage    `json:"diagnostics"`

	// minimums overrides AnthropicMinimums (Config.AnthropicMinTokens).
	minimums map[string]int
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Thinking     string          `json:"thinking"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	Content      json.RawMessage `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
}

func hasMarker(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// anthropicPrompt is a Messages prompt as the sim accounts it.
type anthropicPrompt struct {
	tokens        int
	lookup        []PrefixPoint
	store         []PrefixWrite
	longWritesEnd int // writes up to here are 1-hour ones
	tools         []toolSpec
	asked         bool // the last message is the user's and answers no tool call
}

// buildAnthropicPrompt tokenizes tools, then system, then messages (the
// order in which Anthropic caches), recording a prefix point at every
// content-block boundary (after each tool, system block, message block) and
// which of them carry cache_control (see anthropicCache for the rules). A
// top-level cache_control marks the last boundary (automatic caching).
func buildAnthropicPrompt(req *messagesRequest) (*anthropicPrompt, error) {
	ts := newTokenStream(0)
	ac := &anthropicCache{limits: anthropicLimits(req.Model, req.minimums), ts: ts}
	p := &anthropicPrompt{}
	if err := checkSystemMessages(req.Model, req.Messages); err != nil {
		return nil, err
	}
	for i, raw := range req.Tools {
		var t struct {
			Type         string          `json:"type"`
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
			DeferLoading bool            `json:"defer_loading"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, groundhog.WrapError(groundhog.EINVALID, "tools: each tool must be an object", err)
		}
		if t.DeferLoading {
			// Not in the prompt: tool search loads it into the
			// conversation (a tool_reference block) when it is found, so
			// adding or removing a deferred tool keeps the cached prefix.
			if (t.Type == "" || t.Type == "custom") && t.Name != "" {
				p.tools = append(p.tools, toolSpec{name: t.Name, schema: t.InputSchema})
			}
			continue
		}
		ts.begin("tool")
		ts.text(compactJSON(raw))
		ts.end()
		if err := ac.mark(t.CacheControl, fmt.Sprintf("tools.%d", i), false); err != nil {
			return nil, err
		}
		if (t.Type == "" || t.Type == "custom") && t.Name != "" {
			p.tools = append(p.tools, toolSpec{name: t.Name, schema: t.InputSchema})
		}
	}
	if sys := bytes.TrimSpace(req.System); len(sys) > 0 && string(sys) != "null" {
		ts.begin("system")
		if sys[0] == '"' {
			var s string
			json.Unmarshal(sys, &s)
			ts.text(s)
			ac.mark(nil, "system", false)
		} else {
			var blocks []anthropicBlock
			if err := json.Unmarshal(sys, &blocks); err != nil {
				return nil, groundhog.WrapError(groundhog.EINVALID, "system: Input should be a valid string or a list of text blocks", err)
			}
			for i, b := range blocks {
				ts.text(b.Text)
				if err := ac.mark(b.CacheControl, fmt.Sprintf("system.%d", i), b.Text == ""); err != nil {
					return nil, err
				}
			}
		}
		ts.end()
	}
	// The messages level depends on the settings that invalidate it.
	ts.salt(messagesLevelSalt(req))
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			return nil, groundhog.Errorf(groundhog.EINVALID, "messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		ts.begin(m.Role)
		var text bytes.Buffer
		toolResult := false
		content := bytes.TrimSpace(m.Content)
		if len(content) > 0 && content[0] == '"' {
			var s string
			json.Unmarshal(content, &s)
			ts.text(s)
			text.WriteString(s)
			ac.mark(nil, "", false)
		} else {
			var blocks []json.RawMessage
			if err := json.Unmarshal(content, &blocks); err != nil {
				return nil, groundhog.WrapError(groundhog.EINVALID, "messages.content: Input should be a valid string or a list of content blocks", err)
			}
			for k, raw := range blocks {
				var b anthropicBlock
				if err := json.Unmarshal(raw, &b); err != nil {
					return nil, groundhog.WrapError(groundhog.EINVALID, "messages.content: each content block must be an object", err)
				}
				switch b.Type {
				case "text":
					ts.text(b.Text)
					text.WriteString(b.Text + " ")
				case "thinking":
					ts.text(b.Thinking)
				case "tool_use":
					ts.text(b.Name)
					ts.text(compactJSON(b.Input))
				case "tool_result":
					toolResult = true
					writeContent(ts, b.Content)
				default:
					ts.text(compactJSON(raw))
				}
				if err := ac.mark(b.CacheControl, fmt.Sprintf("messages.%d.content.%d", i, k), b.Type == "text" && b.Text == ""); err != nil {
					return nil, err
				}
			}
		}
		ts.end()
		p.asked = m.Role == "user" && !toolResult
	}
	if err := ac.automatic(req.CacheControl); err != nil {
		return nil, err
	}
	p.tokens = ts.n
	var err error
	p.lookup, p.store, p.longWritesEnd, err = ac.plan()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// validateMessages checks what every Messages request needs.
func validateMessages(req *messagesRequest) error {
	if req.Model == "" {
		return groundhog.Errorf(groundhog.EINVALID, "model: Field required")
	}
	if len(req.Messages) == 0 {
		return groundhog.Errorf(groundhog.EINVALID, "messages: Field required (at least one message)")
	}
	return nil
}

// parseMessages validates an Anthropic Messages request and generates its
// answer. max_tokens is required, as in the real API.
func parseMessages(body []byte, sd seed, minimums map[string]int) (*job, error) {
	req := messagesRequest{minimums: minimums}
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if err := validateMessages(&req); err != nil {
		return nil, err
	}
	if req.MaxTokens == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "max_tokens: Field required")
	}
	if *req.MaxTokens < 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "max_tokens: Input should be greater than or equal to 0")
	}
	p, err := buildAnthropicPrompt(&req)
	if err != nil {
		return nil, err
	}
	mode, name := anthropicToolChoice(req.ToolChoice)
	call, err := pickTool(p.tools, mode, name, p.asked)
	if err != nil {
		return nil, err
	}
	c := &completion{truncated: true} // max_tokens 0: a pre-warm that only writes the cache
	if *req.MaxTokens > 0 {
		c = generate(sd, 0, int(*req.MaxTokens), call)
	}
	j := &job{model: req.Model, stream: req.Stream, seed: sd, prompt: p.tokens, lookup: p.lookup, store: p.store,
		reportWrites: true, longWritesEnd: p.longWritesEnd, output: c.tokens}
	j.respond = func(x *exchange) {
		var diag *anthropicDiagnostics // cache diagnostics (anthropic_diagnostics.go)
		if diagnosisRequested(x.r, req.Diagnostics) {
			diag = x.s.diag.diagnose(req.Diagnostics, x.id.id("msg_"), printRequest(&req, p.tokens))
		}
		if j.stream {
			streamMessages(x, req.Model, c, diag)
		} else {
			b := anthropicMessageBody(x, req.Model, c)
			b.Diagnostics = diag
			x.respondJSON(b)
		}
	}
	return j, nil
}

// anthropicToolChoice normalizes tool_choice {"type": auto|any|tool|none}.
func anthropicToolChoice(raw json.RawMessage) (mode, name string) {
	var o struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	json.Unmarshal(raw, &o)
	switch o.Type {
	case "any":
		return "required", ""
	case "tool":
		return "required", o.Name
	case "none":
		return "none", ""
	}
	return "auto", ""
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
	ServerToolUse serverToolUse `json:"server_tool_use"`
	ServiceTier   string        `json:"service_tier"`
	InferenceGeo  string        `json:"inference_geo"`
}

// serverToolUse counts the provider-run tool requests of a call; the sim
// runs none.
type serverToolUse struct {
	WebFetchRequests  int64 `json:"web_fetch_requests"`
	WebSearchRequests int64 `json:"web_search_requests"`
}

// newAnthropicUsage converts u: Anthropic's input_tokens excludes cache reads
// and writes.
func newAnthropicUsage(u groundhog.Usage, output int64) anthropicUsage {
	au := anthropicUsage{
		InputTokens:              u.InputTokens - u.CachedInputTokens - u.CacheWriteTokens,
		CacheCreationInputTokens: u.CacheWriteTokens,
		CacheReadInputTokens:     u.CachedInputTokens,
		OutputTokens:             output,
		ServiceTier:              "standard",
		InferenceGeo:             "not_available",
	}
	au.CacheCreation.Ephemeral5m = u.CacheWriteTokens - u.CacheWrite1hTokens
	au.CacheCreation.Ephemeral1h = u.CacheWrite1hTokens
	return au
}

type anthropicBody struct {
	ID           string                `json:"id"`
	Type         string                `json:"type"`
	Role         string                `json:"role"`
	Model        string                `json:"model"`
	Content      []any                 `json:"content"`
	StopReason   *string               `json:"stop_reason"`
	StopSequence *string               `json:"stop_sequence"`
	StopDetails  *struct{}             `json:"stop_details"`
	Container    *struct{}             `json:"container"`
	Usage        anthropicUsage        `json:"usage"`
	Diagnostics  *anthropicDiagnostics `json:"diagnostics,omitempty"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func (c *completion) stopReason() string {
	switch {
	case c.tool != nil:
		return "tool_use"
	case c.truncated:
		return "max_tokens"
	}
	return "end_turn"
}

func anthropicMessageBody(x *exchange, model string, c *completion) anthropicBody {
	reason := c.stopReason()
	b := anthropicBody{ID: x.id.id("msg_"), Type: "message", Role: "assistant", Model: model,
		StopReason: &reason, Usage: newAnthropicUsage(x.usage, x.usage.OutputTokens)}
	switch {
	case c.tool != nil:
		b.Content = []any{toolUseBlock{Type: "tool_use", ID: x.toolCallID("toolu_", 0), Name: c.tool.name, Input: json.RawMessage(c.tool.args)}}
	case len(c.words) == 0:
		b.Content = []any{} // a max_tokens 0 pre-warm
	default:
		b.Content = []any{textBlock{Type: "text", Text: c.text()}}
	}
	return b
}

// streamMessages writes the Anthropic event stream: message_start,
// content_block_start, ping, content_block_delta per output token (or
// tool-input piece), content_block_stop, message_delta, message_stop.
func streamMessages(x *exchange, model string, c *completion, diag *anthropicDiagnostics) {
	total := len(c.words)
	if c.tool != nil {
		total = len(c.argChunks())
	}
	st := x.newSSE(total)
	start := anthropicMessageBody(x, model, c)
	start.Content, start.StopReason = []any{}, nil
	su := start.Usage
	// message_start reports the input side (output 1, as the API does before
	// generating); the output details come with message_delta.
	usage := map[string]any{"input_tokens": su.InputTokens, "cache_creation_input_tokens": su.CacheCreationInputTokens,
		"cache_read_input_tokens": su.CacheReadInputTokens, "cache_creation": su.CacheCreation, "output_tokens": 1,
		"service_tier": su.ServiceTier, "inference_geo": su.InferenceGeo,
		"server_tool_use": map[string]int64{"web_search_requests": su.ServerToolUse.WebSearchRequests}}
	msg := map[string]any{"id": start.ID, "type": start.Type, "role": start.Role, "model": start.Model, "content": start.Content,
		"stop_reason": nil, "stop_sequence": nil, "stop_details": nil, "container": nil, "usage": usage}
	if diag != nil {
		msg["diagnostics"] = diag
	}
	if !st.event("message_start", map[string]any{"type": "message_start", "message": msg}) {
		return
	}
	if c.tool == nil && len(c.words) == 0 {
		// A max_tokens 0 pre-warm: no content block at all.
		streamMessagesEnd(st, x, c)
		return
	}
	var block any = textBlock{Type: "text", Text: ""}
	if c.tool != nil {
		block = toolUseBlock{Type: "tool_use", ID: x.toolCallID("toolu_", 0), Name: c.tool.name, Input: json.RawMessage(`{}`)}
	}
	if !st.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block}) ||
		!st.event("ping", map[string]any{"type": "ping"}) {
		return
	}
	delta := func(d any) bool {
		return st.chunk("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": d})
	}
	if c.tool != nil {
		for _, piece := range c.argChunks() {
			if !delta(map[string]any{"type": "input_json_delta", "partial_json": piece}) {
				return
			}
		}
	} else {
		for _, w := range c.deltas() {
			if !delta(map[string]any{"type": "text_delta", "text": w}) {
				return
			}
		}
	}
	if !st.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) {
		return
	}
	streamMessagesEnd(st, x, c)
}

// streamMessagesEnd sends message_delta (the output side of the usage) and
// message_stop.
func streamMessagesEnd(st *sse, x *exchange, c *completion) {
	u := newAnthropicUsage(x.usage, x.usage.OutputTokens)
	if !st.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": c.stopReason(), "stop_sequence": nil, "stop_details": nil, "container": nil},
		"usage": map[string]any{"input_tokens": u.InputTokens, "cache_creation_input_tokens": u.CacheCreationInputTokens,
			"cache_read_input_tokens": u.CacheReadInputTokens, "output_tokens": u.OutputTokens,
			"output_tokens_details": u.OutputTokensDetails, "server_tool_use": u.ServerToolUse}}) {
		return
	}
	st.event("message_stop", map[string]any{"type": "message_stop"})
}

// countTokens answers POST /v1/messages/count_tokens: the prompt's input
// tokens, as the sim counts them. Not billed; no faults.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, familyAnthropic, err)
		return
	}
	var req messagesRequest
	if err := decodeBody(body, &req); err != nil {
		writeErr(w, familyAnthropic, err)
		return
	}
	if err := validateMessages(&req); err != nil {
		writeErr(w, familyAnthropic, err)
		return
	}
	p, err := buildAnthropicPrompt(&req)
	if err != nil {
		writeErr(w, familyAnthropic, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": p.tokens})
}
