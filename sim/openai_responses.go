package sim

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// responsesRequest is the part of a POST /v1/responses body the sim reads;
// the rest is echoed back in the response object where the API does.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Stream             bool              `json:"stream"`
	MaxOutputTokens    *count            `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	PreviousResponseID string            `json:"previous_response_id"`
	Metadata           json.RawMessage   `json:"metadata"`
	Text               json.RawMessage   `json:"text"`
	Store              *bool             `json:"store"`
	User               *string           `json:"user"`
	SafetyIdentifier   *string           `json:"safety_identifier"`
	openaiCacheFields
}

type responsesItem struct {
	Type      string            `json:"type"`
	Tools     []json.RawMessage `json:"tools"` // additional_tools
	Role      string            `json:"role"`
	Content   json.RawMessage   `json:"content"`
	Name      string            `json:"name"`
	Arguments json.RawMessage   `json:"arguments"` // a string on function_call; an object on tool_search_call
	Output    json.RawMessage   `json:"output"`
	// EncryptedContent is a compaction item's (and a reasoning item's).
	EncryptedContent string `json:"encrypted_content"`
}

// parseResponses validates a Responses request and generates its answer.
// The prompt is the tools, the instructions (a system message), then the
// input items; with previous_response_id, the input items follow the
// previous response's context (prev returns it).
func parseResponses(body []byte, sd seed, prev func(string) ([]json.RawMessage, error)) (*job, error) {
	var req responsesRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Missing required parameter: 'model'.")
	}
	input := bytes.TrimSpace(req.Input)
	missing := len(input) == 0 || string(input) == "null"
	if missing && req.PreviousResponseID == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Missing required parameter: 'input'.")
	}
	limit, err := maxTokens("max_output_tokens", req.MaxOutputTokens)
	if err != nil {
		return nil, err
	}
	var before, own []json.RawMessage
	if req.PreviousResponseID != "" {
		if before, err = prev(req.PreviousResponseID); err != nil {
			return nil, err
		}
		if own, err = inputItems(input, sd); err != nil {
			return nil, err
		}
		input, _ = json.Marshal(append(append(make([]json.RawMessage, 0, len(before)+len(own)), before...), own...))
	}

	pc, err := newOpenAICache(req.Model, &req.openaiCacheFields, "input_text", "input_image", "input_file")
	if err != nil {
		return nil, err
	}
	// The prompt's print, kept for cache diagnostics (openai_diagnostics.go).
	pr := &responsesPrint{model: req.Model, key: req.PromptCacheKey, tools: hashTools(req.Tools), set: settingsOf(body)}
	tools, asked, err := responsesPrompt(&req, input, pc, pr)
	if err != nil {
		return nil, err
	}
	mode, name := responsesToolChoice(req.ToolChoice)
	if m, allowed, ok := allowedTools(req.ToolChoice, tools); ok {
		mode, tools = m, allowed
	}
	call, err := pickTool(tools, mode, name, asked)
	if err != nil {
		return nil, err
	}
	c := generate(sd, 0, limit, call)
	j := &job{model: req.Model, stream: req.Stream, seed: sd, output: c.tokens}
	pc.apply(j)
	if salt := pr.set.cacheSalt(); salt != "" {
		// The settings a cached prefix must share scope the cache.
		j.cacheKey += "\x00" + salt
	}
	pr.total = j.prompt
	for _, w := range j.store {
		pr.reusable = max(pr.reusable, w.Tokens)
	}
	j.respond = func(x *exchange) {
		r := newResponseObject(x, &req, c)
		r.PromptCacheDiagnostics = x.s.diagnoseResponses(req.PromptCacheOptions, r.ID, pr)
		if r.Store {
			// Stored items get ids unique to this call.
			items, _ := inputItems(req.Input, x.id) // validated above
			x.s.storeResponse(x, r, before, items)
		}
		if j.stream {
			streamResponses(x, r, c)
		} else {
			x.respondJSON(r)
		}
	}
	return j, nil
}

// responsesPrompt tokenizes the tools, the instructions and the input
// items of a Responses prompt into pc, recording the print's points in pr.
// It returns the function tools and whether the prompt ends with a user
// message.
func responsesPrompt(req *responsesRequest, input json.RawMessage, pc *openaiCache, pr *responsesPrint) (tools []toolSpec, asked bool, err error) {
	ts := pc.ts
	addTool := func(raw json.RawMessage) {
		var t struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Type == "function" && t.Name != "" {
			tools = append(tools, toolSpec{name: t.Name, schema: t.Parameters})
		}
	}
	for _, raw := range req.Tools {
		ts.begin("tool")
		ts.text(compactJSON(raw))
		ts.end()
		addTool(raw)
	}
	pr.toolsEnd = ts.n
	if req.Instructions != nil {
		ts.begin("system")
		ts.text(*req.Instructions)
		ts.end()
	}
	pr.instr = ts.point()
	switch input[0] {
	case '"':
		var s string
		json.Unmarshal(input, &s)
		ts.begin("user")
		ts.text(s)
		pc.endMessage()
		asked = true
		pr.items, pr.compaction = []PrefixPoint{ts.point()}, []bool{false}
	case '[':
		var items []responsesItem
		if err := json.Unmarshal(input, &items); err != nil {
			return nil, false, groundhog.WrapError(groundhog.EINVALID, "Invalid 'input': expected a string or an array of input items.", err)
		}
		var raws []json.RawMessage
		json.Unmarshal(input, &raws)
		for i, it := range items {
			if i > 0 {
				pr.items = append(pr.items, ts.point()) // the end of item i-1
			}
			pr.compaction = append(pr.compaction, it.Type == "compaction")
			asked = false
			path := fmt.Sprintf("input[%d]", i)
			switch {
			case it.Type == "additional_tools":
				// Tools added mid-session: after the cached prefix, so the
				// catalog at the start (and its cache) is unchanged. They
				// can never hold a breakpoint.
				if hasKey(raws[i], "prompt_cache_breakpoint") {
					return nil, false, groundhog.Errorf(groundhog.EINVALID, "Invalid '%s': additional_tools items cannot contain a prompt_cache_breakpoint.", path)
				}
				ts.begin("tools")
				for _, raw := range it.Tools {
					ts.text(compactJSON(raw))
					addTool(raw)
				}
				ts.end()
				continue
			case it.Type == "compaction" && isSimCompaction(it.EncryptedContent):
				n, digest, _ := parseCompaction(it.EncryptedContent)
				writeCompaction(ts, n, digest)
				continue
			case it.Type == "function_call":
				ts.begin("assistant")
				ts.text(it.Name)
				var args string
				if json.Unmarshal(it.Arguments, &args) != nil {
					args = compactJSON(it.Arguments)
				}
				ts.text(args)
			case it.Type == "function_call_output":
				ts.begin("tool")
				if _, err := pc.content(it.Output, path+".output"); err != nil {
					return nil, false, err
				}
			case it.Role != "":
				ts.begin(it.Role)
				if _, err := pc.content(it.Content, path+".content"); err != nil {
					return nil, false, err
				}
				asked = it.Role == "user"
			default:
				ts.begin(it.Type)
				ts.text(compactJSON(raws[i]))
				ts.end()
				continue
			}
			pc.endMessage()
		}
		if len(items) > 0 {
			pr.items = append(pr.items, ts.point())
		}
	default:
		return nil, false, groundhog.Errorf(groundhog.EINVALID, "Invalid 'input': expected a string or an array of input items.")
	}
	return tools, asked, nil
}

// responsesToolChoice normalizes a Responses tool_choice.
func responsesToolChoice(raw json.RawMessage) (mode, name string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var o struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Mode string `json:"mode"`
	}
	if json.Unmarshal(raw, &o) == nil {
		switch o.Type {
		case "function":
			return "required", o.Name
		case "allowed_tools":
			return o.Mode, ""
		}
	}
	return "auto", ""
}

type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type responseObject struct {
	ID                   string          `json:"id"`
	Object               string          `json:"object"`
	CreatedAt            int64           `json:"created_at"`
	Status               string          `json:"status"`
	Background           bool            `json:"background"`
	Billing              *billing        `json:"billing,omitempty"` // not in stream events
	CompletedAt          *int64          `json:"completed_at"`
	Error                *struct{}       `json:"error"`
	FrequencyPenalty     float64         `json:"frequency_penalty"`
	IncompleteDetails    *incomplete     `json:"incomplete_details"`
	Instructions         *string         `json:"instructions"`
	MaxOutputTokens      *count          `json:"max_output_tokens"`
	MaxToolCalls         *int            `json:"max_tool_calls"`
	Model                string          `json:"model"`
	Moderation           *struct{}       `json:"moderation"`
	Output               []any           `json:"output"`
	ParallelToolCalls    bool            `json:"parallel_tool_calls"`
	PresencePenalty      float64         `json:"presence_penalty"`
	PreviousResponseID   *string         `json:"previous_response_id"`
	PromptCacheKey       *string         `json:"prompt_cache_key"`
	PromptCacheRetention string          `json:"prompt_cache_retention"`
	Reasoning            json.RawMessage `json:"reasoning"`
	SafetyIdentifier     *string         `json:"safety_identifier"`
	ServiceTier          string          `json:"service_tier"`
	Store                bool            `json:"store"`
	Temperature          float64         `json:"temperature"`
	Text                 json.RawMessage `json:"text"`
	ToolChoice           json.RawMessage `json:"tool_choice"`
	ToolUsage            toolUsage       `json:"tool_usage"`
	Tools                json.RawMessage `json:"tools"`
	TopLogprobs          int             `json:"top_logprobs"`
	TopP                 float64         `json:"top_p"`
	Truncation           string          `json:"truncation"`
	Usage                *responsesUsage `json:"usage"`
	User                 *string         `json:"user"`
	Metadata             json.RawMessage `json:"metadata"`

	// PromptCacheDiagnostics answers prompt_cache_options.comparison_response_id
	// (openai_diagnostics.go); absent when not asked.
	PromptCacheDiagnostics *promptCacheDiagnostics `json:"prompt_cache_diagnostics,omitempty"`
}

type billing struct {
	Payer string `json:"payer"`
}

// toolUsage is the usage of the provider-run tools of a response; the sim
// runs none, so every count is zero.
type toolUsage struct {
	ImageGen struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			ImageTokens int64 `json:"image_tokens"`
			TextTokens  int64 `json:"text_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ImageTokens int64 `json:"image_tokens"`
			TextTokens  int64 `json:"text_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"image_gen"`
	WebSearch struct {
		NumRequests int64 `json:"num_requests"`
	} `json:"web_search"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type outputMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Phase   string       `json:"phase"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

func orRaw(raw json.RawMessage, def string) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

// newResponseObject returns the finished response object of an answer.
func newResponseObject(x *exchange, req *responsesRequest, c *completion) *responseObject {
	r := &responseObject{
		ID: x.id.id("resp_"), Object: "response", CreatedAt: x.created.Unix(), Status: "completed",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model,
		ParallelToolCalls: true, Reasoning: json.RawMessage(`{"context":"all_turns","effort":null,"mode":"standard","summary":null}`),
		Billing: &billing{Payer: "developer"}, SafetyIdentifier: req.SafetyIdentifier,
		PromptCacheRetention: retentionOf(req.Model, req.PromptCacheRetention),
		ServiceTier:          "default", Store: req.Store == nil || *req.Store, Temperature: 1, TopP: 1,
		Text:       orRaw(req.Text, `{"format":{"type":"text"},"verbosity":"medium"}`),
		ToolChoice: orRaw(req.ToolChoice, `"auto"`), Truncation: "disabled", User: req.User,
		Metadata: orRaw(req.Metadata, `{}`),
	}
	if req.PromptCacheKey != "" {
		r.PromptCacheKey = &req.PromptCacheKey
	}
	if req.PreviousResponseID != "" {
		r.PreviousResponseID = &req.PreviousResponseID
	}
	r.Tools = json.RawMessage(`[]`)
	if len(req.Tools) > 0 {
		r.Tools, _ = json.Marshal(req.Tools)
	}
	if req.ParallelToolCalls != nil {
		r.ParallelToolCalls = *req.ParallelToolCalls
	}
	if req.Temperature != nil {
		r.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		r.TopP = *req.TopP
	}
	done := x.created.Unix()
	r.CompletedAt = &done
	u := &responsesUsage{InputTokens: x.usage.InputTokens, OutputTokens: x.usage.OutputTokens,
		TotalTokens: x.usage.InputTokens + x.usage.OutputTokens}
	u.InputTokensDetails.CachedTokens = x.usage.CachedInputTokens
	u.InputTokensDetails.CacheWriteTokens = x.usage.CacheWriteTokens
	r.Usage = u
	if c.tool != nil {
		r.Output = []any{functionCallItem{ID: x.id.derive("item", 0).id("fc_"), Type: "function_call", Status: "completed",
			Arguments: c.tool.args, CallID: x.toolCallID("call_", 0), Name: c.tool.name}}
	} else {
		status := "completed"
		if c.truncated {
			status = "incomplete"
			r.Status = "incomplete"
			r.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
			r.CompletedAt = nil
		}
		r.Output = []any{outputMessage{ID: x.id.derive("item", 0).id("msg_"), Type: "message", Status: status, Phase: "final_answer", Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: c.text(), Annotations: []any{}, Logprobs: []any{}}}}}
	}
	return r
}

// streamResponses writes the Responses event stream: response.created,
// response.in_progress, the output item's events, then response.completed
// (response.incomplete when max_output_tokens cut the text, as the API does).
func streamResponses(x *exchange, final *responseObject, c *completion) {
	total := len(c.words)
	if c.tool != nil {
		total = len(c.argChunks())
	}
	st := x.newSSE(total)
	seq := 0
	ev := func(typ string, fields map[string]any) map[string]any {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return fields
	}
	send := func(typ string, fields map[string]any) bool { return st.event(typ, ev(typ, fields)) }
	chunk := func(typ string, fields map[string]any) bool { return st.chunk(typ, ev(typ, fields)) }

	final.Billing = nil // the stream's response objects carry no billing
	pending := *final
	pending.Status, pending.Output, pending.Usage, pending.IncompleteDetails, pending.CompletedAt = "in_progress", []any{}, nil, nil, nil
	pending.PromptCacheDiagnostics = nil // on the finished response only
	if !send("response.created", map[string]any{"response": pending}) ||
		!send("response.in_progress", map[string]any{"response": pending}) {
		return
	}
	if c.tool != nil {
		item := final.Output[0].(functionCallItem)
		started := item
		started.Status, started.Arguments = "in_progress", ""
		if !send("response.output_item.added", map[string]any{"output_index": 0, "item": started}) {
			return
		}
		for _, piece := range c.argChunks() {
			if !chunk("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": 0, "delta": piece, "obfuscation": obfuscation(piece)}) {
				return
			}
		}
		if !send("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": 0, "arguments": item.Arguments}) ||
			!send("response.output_item.done", map[string]any{"output_index": 0, "item": item}) {
			return
		}
	} else {
		item := final.Output[0].(outputMessage)
		started := item
		started.Status, started.Content = "in_progress", []outputText{}
		part := outputText{Type: "output_text", Text: "", Annotations: []any{}, Logprobs: []any{}}
		loc := func(m map[string]any) map[string]any {
			m["item_id"], m["output_index"], m["content_index"] = item.ID, 0, 0
			return m
		}
		if !send("response.output_item.added", map[string]any{"output_index": 0, "item": started}) ||
			!send("response.content_part.added", loc(map[string]any{"part": part})) {
			return
		}
		for _, d := range c.deltas() {
			if !chunk("response.output_text.delta", loc(map[string]any{"delta": d, "logprobs": []any{}, "obfuscation": obfuscation(d)})) {
				return
			}
		}
		if !send("response.output_text.done", loc(map[string]any{"text": c.text(), "logprobs": []any{}})) ||
			!send("response.content_part.done", loc(map[string]any{"part": item.Content[0]})) ||
			!send("response.output_item.done", map[string]any{"output_index": 0, "item": item}) {
			return
		}
	}
	terminal := "response.completed"
	if final.Status == "incomplete" {
		terminal = "response.incomplete"
	}
	send(terminal, map[string]any{"response": final})
}

// obfuscation is the padding the API adds to each streamed delta so that
// the event sizes do not reveal the token lengths: random characters, here
// derived from the delta so that a stream stays deterministic.
func obfuscation(delta string) string {
	const pad = "aZ3kQ9xL2mB7vN4c"
	return pad[:max(1, len(pad)-len(delta)%len(pad))]
}
