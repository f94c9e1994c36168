package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// converseRequest is the part of a Bedrock Converse body the sim reads.
type converseRequest struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	System          []json.RawMessage `json:"system"`
	InferenceConfig *struct {
		MaxTokens *count `json:"maxTokens"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools      []json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage   `json:"toolChoice"`
	} `json:"toolConfig"`
}

// converseBlock is one content, system or tool block: exactly one member
// is set.
type converseBlock struct {
	Text       *string         `json:"text"`
	CachePoint json.RawMessage `json:"cachePoint"`
	ToolUse    *struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		Content json.RawMessage `json:"content"`
	} `json:"toolResult"`
	ToolSpec *struct {
		Name        string `json:"name"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	} `json:"toolSpec"`
}

// parseConverse validates a Bedrock Converse request (model id and stream
// from the path) and generates its answer. Prompt caching follows
// Bedrock's rules: a cachePoint block in toolConfig.tools, system or a
// message's content marks the prefix up to the block before it (tools,
// then system, then messages, as Bedrock caches them); at most
// AnthropicMaxBreakpoints (4) of them; ttl "5m" (default) or "1h"; a read
// is looked for at each cachePoint and the AnthropicLookback (20) block
// boundaries before it; a prefix under the model's minimum is not cached.
func parseConverse(r *http.Request, body []byte, sd seed) (*job, error) {
	modelID, stream, ok := bedrock.ParsePath(r.URL.EscapedPath())
	if !ok {
		return nil, groundhog.Errorf(groundhog.EINVALID, "invalid model identifier")
	}
	var req converseRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if len(req.Messages) == 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	ts := newTokenStream(0)
	ac := &anthropicCache{limits: cacheLimits(bedrock.BaseModel(modelID)), ts: ts}
	var tools []toolSpec
	mark := func(raw json.RawMessage, path string) (converseBlock, error) {
		var b converseBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return b, groundhog.WrapError(groundhog.EINVALID, path+": each block must be an object", err)
		}
		if b.CachePoint == nil {
			return b, nil
		}
		var cp struct {
			Type string `json:"type"`
			TTL  string `json:"ttl"`
		}
		if err := json.Unmarshal(b.CachePoint, &cp); err != nil || cp.Type != "default" {
			return b, groundhog.Errorf(groundhog.EINVALID, "%s.cachePoint.type: must be default", path)
		}
		var ttl time.Duration
		switch cp.TTL {
		case "", "5m":
		case "1h":
			ttl = longCacheTTL
		default:
			return b, groundhog.Errorf(groundhog.EINVALID, "%s.cachePoint.ttl: must be 5m or 1h", path)
		}
		if len(ac.bounds) == 0 {
			return b, groundhog.Errorf(groundhog.EINVALID, "%s: a cachePoint cannot be the first block of the prompt", path)
		}
		ac.breaks = append(ac.breaks, len(ac.bounds)-1)
		ac.ttls = append(ac.ttls, ttl)
		ac.where = append(ac.where, path)
		return b, nil
	}
	if req.ToolConfig != nil {
		for i, raw := range req.ToolConfig.Tools {
			b, err := mark(raw, fmt.Sprintf("toolConfig.tools.%d", i))
			if err != nil {
				return nil, err
			}
			if b.ToolSpec == nil {
				continue
			}
			ts.begin("tool")
			ts.text(compactJSON(raw))
			ts.end()
			ac.bounds = append(ac.bounds, ts.point())
			tools = append(tools, toolSpec{name: b.ToolSpec.Name, schema: b.ToolSpec.InputSchema.JSON})
		}
	}
	if len(req.System) > 0 {
		ts.begin("system")
		for i, raw := range req.System {
			b, err := mark(raw, fmt.Sprintf("system.%d", i))
			if err != nil {
				return nil, err
			}
			if b.Text != nil {
				ts.text(*b.Text)
				ac.bounds = append(ac.bounds, ts.point())
			}
		}
		ts.end()
	}
	asked := false
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, groundhog.Errorf(groundhog.EINVALID, "messages.%d.role: must be user or assistant", i)
		}
		ts.begin(m.Role)
		toolResult := false
		for k, raw := range m.Content {
			b, err := mark(raw, fmt.Sprintf("messages.%d.content.%d", i, k))
			if err != nil {
				return nil, err
			}
			switch {
			case b.CachePoint != nil:
				continue
			case b.Text != nil:
				ts.text(*b.Text)
			case b.ToolUse != nil:
				ts.text(b.ToolUse.Name)
				ts.text(compactJSON(b.ToolUse.Input))
			case b.ToolResult != nil:
				toolResult = true
				ts.text(compactJSON(b.ToolResult.Content))
			default:
				ts.text(compactJSON(raw))
			}
			ac.bounds = append(ac.bounds, ts.point())
		}
		ts.end()
		asked = m.Role == "user" && !toolResult
	}
	lookup, store, longEnd, err := ac.plan()
	if err != nil {
		return nil, err
	}
	mode, name := "auto", ""
	if req.ToolConfig != nil {
		var tc map[string]struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(req.ToolConfig.ToolChoice, &tc) == nil {
			for k, v := range tc {
				mode, name = k, v.Name
			}
		}
	}
	switch mode {
	case "any":
		mode = "required"
	case "tool":
		mode = "function"
	}
	call, err := pickTool(tools, mode, name, asked)
	if err != nil {
		return nil, err
	}
	limit := 0
	if req.InferenceConfig != nil && req.InferenceConfig.MaxTokens != nil {
		limit = int(*req.InferenceConfig.MaxTokens)
	}
	c := generate(sd, 0, limit, call)
	j := &job{model: modelID, stream: stream, seed: sd, prompt: ts.n, lookup: lookup, store: store,
		reportWrites: true, longWritesEnd: longEnd, output: c.tokens}
	j.respond = func(x *exchange) {
		if stream {
			streamConverse(x, c)
		} else {
			x.respondJSON(converseBody(x, c))
		}
	}
	return j, nil
}

func (c *completion) converseStopReason() string {
	switch {
	case c.tool != nil:
		return "tool_use"
	case c.truncated:
		return "max_tokens"
	}
	return "end_turn"
}

// converseBody is the Converse response of completion c.
func converseBody(x *exchange, c *completion) map[string]any {
	var block any = map[string]any{"text": c.text()}
	if c.tool != nil {
		block = map[string]any{"toolUse": map[string]any{"toolUseId": x.toolCallID("tooluse_", 0), "name": c.tool.name, "input": json.RawMessage(c.tool.args)}}
	}
	return map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{block}}},
		"stopReason": c.converseStopReason(),
		"usage":      bedrock.UsageOf(x.usage),
		"metrics":    map[string]any{"latencyMs": 0},
	}
}

// streamConverse writes the ConverseStream of c in the eventstream
// framing: messageStart, contentBlockStart (tool use only), a
// contentBlockDelta per output token (or tool-input piece),
// contentBlockStop, messageStop, metadata.
func streamConverse(x *exchange, c *completion) {
	total := len(c.words)
	if c.tool != nil {
		total = len(c.argChunks())
	}
	h := x.w.Header()
	h.Set("Content-Type", bedrock.ContentType)
	x.w.WriteHeader(http.StatusOK)
	st := &sse{x: x, rc: http.NewResponseController(x.w), frame: func(dst []byte, name string, data []byte) []byte {
		return bedrock.AppendEvent(dst, groundhog.Event{Name: name, Data: data})
	}}
	if x.reset {
		st.abortAt = max(1, total/2)
	}
	if !st.event(bedrock.EventMessageStart, map[string]any{"role": "assistant"}) {
		return
	}
	delta := func(d any) bool {
		return st.chunk(bedrock.EventContentBlockDelta, map[string]any{"contentBlockIndex": 0, "delta": d})
	}
	if c.tool != nil {
		if !st.event(bedrock.EventContentBlockStart, map[string]any{"contentBlockIndex": 0,
			"start": map[string]any{"toolUse": map[string]any{"toolUseId": x.toolCallID("tooluse_", 0), "name": c.tool.name}}}) {
			return
		}
		for _, piece := range c.argChunks() {
			if !delta(map[string]any{"toolUse": map[string]any{"input": piece}}) {
				return
			}
		}
	} else {
		for _, w := range c.deltas() {
			if !delta(map[string]any{"text": w}) {
				return
			}
		}
	}
	if !st.event(bedrock.EventContentBlockStop, map[string]any{"contentBlockIndex": 0}) ||
		!st.event(bedrock.EventMessageStop, map[string]any{"stopReason": c.converseStopReason()}) {
		return
	}
	st.event(bedrock.EventMetadata, map[string]any{"usage": bedrock.UsageOf(x.usage), "metrics": map[string]any{"latencyMs": 0}})
}
