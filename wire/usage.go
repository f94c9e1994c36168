package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// UsageFromBody reads the model and the token usage of a non-stream success
// body of shape:
//
//   - chat: usage.prompt_tokens, usage.completion_tokens,
//     usage.prompt_tokens_details.cached_tokens and .cache_write_tokens;
//   - responses: usage.input_tokens, usage.output_tokens,
//     usage.input_tokens_details.cached_tokens and .cache_write_tokens;
//   - embeddings: usage.prompt_tokens;
//   - messages: usage.input_tokens + cache_read_input_tokens +
//     cache_creation_input_tokens (groundhog.Usage.InputTokens is the sum,
//     OpenAI semantics), the two cache counts, and output_tokens;
//     cache_creation.ephemeral_1h_input_tokens is the 1-hour part of the
//     writes (CacheWrite1hTokens), and when cache_creation_input_tokens is
//     absent the writes are ephemeral_5m + ephemeral_1h. A 1-hour part
//     larger than the writes is malformed.
//
// A usage object in Bedrock's style (inputTokens, outputTokens,
// cacheReadInputTokens, cacheWriteInputTokens, where inputTokens excludes
// the cache counts) is read on any shape; Bedrock's two cache fields also
// fill in for missing OpenAI cache details.
//
// An Anthropic usage with a non-empty usage.iterations (a server-side
// compaction, an advisor on another model) is the sum of its iterations:
// the top-level counts cover only part of the work and are not added again
// (UsagePartsFromValidBody also returns the iterations, for pricing each at
// its own model's rates).
//
// A missing or null usage gives a zero Usage and no error. The error wraps
// ErrMalformed when the body is not a JSON object or a count is not a
// non-negative integer, and ErrUnknownShape for an unknown shape.
func UsageFromBody(shape groundhog.Shape, body []byte) (model string, u groundhog.Usage, err error) {
	if shape == groundhog.ShapeConverse {
		if u, err = bedrock.UsageFromBody(body); err != nil {
			return "", groundhog.Usage{}, fmt.Errorf("wire: %s body: %w", shape, err)
		}
		return "", u, nil
	}
	if shape == groundhog.ShapeGemini {
		model, u, err := gemini.UsageFromBody(body)
		if err != nil {
			return "", groundhog.Usage{}, fmt.Errorf("wire: %s body: %w", shape, err)
		}
		return model, u, nil
	}
	b, err := bodyModelUsage(shape, body)
	if err != nil {
		return b.model, u, err
	}
	u, err = parseUsage(shape, b.usage)
	if err != nil {
		return b.model, groundhog.Usage{}, fmt.Errorf("wire: %s body: %w", shape, err)
	}
	return b.model, u, nil
}

// modelUsage is a body's model and its raw usage object.
type modelUsage struct {
	model string
	usage json.RawMessage
}

// bodyModelUsage decodes a body's top-level model and usage.
func bodyModelUsage(shape groundhog.Shape, body []byte) (modelUsage, error) {
	if !shape.Valid() {
		return modelUsage{}, fmt.Errorf("wire: %q: %w", shape, ErrUnknownShape)
	}
	var b struct {
		Model json.RawMessage `json:"model"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := unmarshalObject(body, &b); err != nil {
		return modelUsage{}, fmt.Errorf("wire: %s body: %w", shape, err)
	}
	m, _ := rawString(b.Model)
	return modelUsage{model: m, usage: b.Usage}, nil
}

// UsageFromEvents reads the model and usage of a stream of shape: for chat
// the last chunk with a non-null usage (present only when the request set
// stream_options.include_usage; otherwise the usage is zero); for responses
// the usage of the terminal event's response (response.completed, or
// response.incomplete / response.failed, which are billed too); for
// messages message_start's message.usage overlaid with the non-null counts
// of the last message_delta usage (Anthropic's counts there are cumulative).
// Counts are read as UsageFromBody reads them.
//
// Events that are not JSON objects are skipped, so a truncated or failed
// stream still yields whatever usage it reported. The error wraps
// ErrMalformed for a malformed usage object, ErrNotStreamable for
// embeddings and ErrUnknownShape for an unknown shape.
func UsageFromEvents(shape groundhog.Shape, events []groundhog.Event) (model string, u groundhog.Usage, err error) {
	model, u, _, err = UsagePartsFromEvents(shape, events)
	return model, u, err
}

// UsagePartsFromEvents is UsageFromEvents that also returns the parts of a
// usage that ran in several iterations (see UsagePartsFromBody); on an
// Anthropic stream they come with the last message_delta and replace what
// message_start reported.
func UsagePartsFromEvents(shape groundhog.Shape, events []groundhog.Event) (model string, u groundhog.Usage, parts []groundhog.UsagePart, err error) {
	var raw json.RawMessage
	switch shape {
	case groundhog.ShapeChat:
		model, raw = chatStreamUsage(events)
	case groundhog.ShapeResponses:
		model, raw = responsesStreamUsage(events)
	case groundhog.ShapeMessages:
		model, raw, err = messagesStreamUsage(events)
		if err != nil {
			return model, u, nil, fmt.Errorf("wire: messages stream: %w", err)
		}
	case groundhog.ShapeEmbeddings:
		return "", u, nil, fmt.Errorf("wire: %s: %w", shape, ErrNotStreamable)
	case groundhog.ShapeConverse:
		if u, err = bedrock.UsageFromEvents(events); err != nil {
			return "", groundhog.Usage{}, nil, fmt.Errorf("wire: %s stream: %w", shape, err)
		}
		return "", u, nil, nil
	case groundhog.ShapeGemini:
		if model, u, err = gemini.UsageFromEvents(events); err != nil {
			return "", groundhog.Usage{}, nil, fmt.Errorf("wire: %s stream: %w", shape, err)
		}
		return model, u, nil, nil
	default:
		return "", u, nil, fmt.Errorf("wire: %q: %w", shape, ErrUnknownShape)
	}
	u, parts, err = parseUsageParts(shape, raw, false)
	if err != nil {
		return model, groundhog.Usage{}, nil, fmt.Errorf("wire: %s stream: %w", shape, err)
	}
	return model, u, parts, nil
}

// unmarshalObject decodes b, which must be a JSON object, into v.
func unmarshalObject(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

func chatStreamUsage(events []groundhog.Event) (model string, usage json.RawMessage) {
	var w jsonwalk.Walker
	// The usage chunk is at the end; scan backwards and decode only events
	// that mention a usage at all.
	for i := len(events) - 1; i >= 0; i-- {
		d := events[i].Data
		if !bytes.Contains(d, []byte(`"usage"`)) {
			continue
		}
		e, ok := readUsageMark(&w, "chat", d) // usage_events.go
		if !ok || e.usage == nil || isNull(e.usage) {
			continue
		}
		model, usage = string(e.model), e.usage
		break
	}
	for i := 0; i < len(events) && model == ""; i++ {
		if e, ok := readUsageMark(&w, "chat", events[i].Data); ok {
			model = string(e.model)
		}
	}
	return model, usage
}

func responsesStreamUsage(events []groundhog.Event) (model string, usage json.RawMessage) {
	var w jsonwalk.Walker
	for i := len(events) - 1; i >= 0; i-- {
		e, ok := readUsageMark(&w, "responses", events[i].Data) // usage_events.go
		if !ok {
			continue
		}
		typ := string(e.typ)
		if typ == "" {
			typ = events[i].Name
		}
		switch typ {
		case "response.completed", "response.incomplete", "response.failed":
			return string(e.model), e.usage
		case "response.created", "response.in_progress":
			if model == "" {
				model = string(e.model)
			}
		}
	}
	return model, nil
}

func messagesStreamUsage(events []groundhog.Event) (model string, usage json.RawMessage, err error) {
	var (
		start json.RawMessage
		delta json.RawMessage
		w     jsonwalk.Walker
	)
	for _, ev := range events {
		d := ev.Data
		// Decode only the two event types that carry usage.
		if ev.Name != "message_start" && ev.Name != "message_delta" &&
			!bytes.Contains(d, []byte("message_start")) && !bytes.Contains(d, []byte("message_delta")) {
			continue
		}
		e, ok := readUsageMark(&w, "messages", d) // usage_events.go
		if !ok {
			continue
		}
		typ := string(e.typ)
		if typ == "" {
			typ = ev.Name
		}
		switch typ {
		case "message_start":
			model, start = string(e.model), e.usage
		case "message_delta":
			if e.top != nil && !isNull(e.top) {
				delta = e.top
			}
		}
	}
	if delta == nil {
		return model, start, nil
	}
	var merged object
	if start != nil && !isNull(start) {
		if merged, err = parseObject(start); err != nil {
			return model, nil, err
		}
	}
	d, err := parseObject(delta)
	if err != nil {
		return model, nil, err
	}
	for _, m := range d {
		if !isNull(m.val) {
			merged.set(m.key, m.val)
		}
	}
	return model, merged.raw(), nil
}

// usageFields holds every token count groundhog reads, in all providers'
// spellings.
type usageFields struct {
	// OpenAI chat and embeddings
	PromptTokens        json.RawMessage `json:"prompt_tokens"`
	CompletionTokens    json.RawMessage `json:"completion_tokens"`
	PromptTokensDetails *cacheDetails   `json:"prompt_tokens_details"`
	// OpenAI responses and Anthropic
	InputTokens        json.RawMessage `json:"input_tokens"`
	OutputTokens       json.RawMessage `json:"output_tokens"`
	InputTokensDetails *cacheDetails   `json:"input_tokens_details"`
	// Anthropic
	CacheReadInputTokens     json.RawMessage `json:"cache_read_input_tokens"`
	CacheCreationInputTokens json.RawMessage `json:"cache_creation_input_tokens"`
	CacheCreation            *cacheCreation  `json:"cache_creation"`
	Iterations               json.RawMessage `json:"iterations"`
	// Bedrock
	BedrockInput      json.RawMessage `json:"inputTokens"`
	BedrockOutput     json.RawMessage `json:"outputTokens"`
	BedrockCacheRead  json.RawMessage `json:"cacheReadInputTokens"`
	BedrockCacheWrite json.RawMessage `json:"cacheWriteInputTokens"`
}

// cacheCreation is Anthropic's split of cache_creation_input_tokens by the
// TTL of the entries written.
type cacheCreation struct {
	Ephemeral5m json.RawMessage `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h json.RawMessage `json:"ephemeral_1h_input_tokens"`
}

type cacheDetails struct {
	CachedTokens     json.RawMessage `json:"cached_tokens"`
	CacheWriteTokens json.RawMessage `json:"cache_write_tokens"`
}

// parseUsage normalizes a provider usage object; nil or null is zero.
func parseUsage(shape groundhog.Shape, raw json.RawMessage) (groundhog.Usage, error) {
	return parseUsageOf(shape, raw, false)
}

// parseUsageOf is parseUsage; valid says raw is known to be valid JSON
// (decodeUsage).
func parseUsageOf(shape groundhog.Shape, raw json.RawMessage, valid bool) (groundhog.Usage, error) {
	u, _, err := parseUsageParts(shape, raw, valid)
	return u, err
}

// parseUsageParts is parseUsageOf that also returns the parts of a usage
// whose work ran in several iterations (Anthropic usage.iterations): the
// usage is then the sum of the iterations, each of which also appears as a
// part, and the top-level counts (which cover only the final iteration, or
// only the iterations on the call's own model) are not added again.
func parseUsageParts(shape groundhog.Shape, raw json.RawMessage, valid bool) (groundhog.Usage, []groundhog.UsagePart, error) {
	var u groundhog.Usage
	if len(raw) == 0 || isNull(raw) {
		return u, nil, nil
	}
	var f usageFields
	if !decodeUsage(raw, &f, valid) { // usage_fields.go: json.Unmarshal's result without reflection, or false
		if err := unmarshalObject(raw, &f); err != nil {
			return u, nil, fmt.Errorf("usage: %w", err)
		}
	}
	if shape == groundhog.ShapeMessages && len(f.Iterations) > 0 && !isNull(f.Iterations) {
		parts, err := parseIterations(f.Iterations, valid)
		if err != nil {
			return u, nil, err
		}
		if len(parts) > 0 {
			for _, p := range parts {
				u = u.Add(p.Usage)
			}
			return u, parts, nil
		}
	}
	u, err := usageOfFields(shape, &f)
	return u, nil, err
}

// parseIterations reads Anthropic's usage.iterations: an array of usage
// objects, each with a "type" ("message", "compaction", "advisor_message")
// and, for an iteration that ran on another model, its "model".
func parseIterations(raw json.RawMessage, valid bool) ([]groundhog.UsagePart, error) {
	elems, ok := rawArray(raw)
	if !ok {
		return nil, fmt.Errorf("usage: %w: iterations is not an array", ErrMalformed)
	}
	parts := make([]groundhog.UsagePart, 0, len(elems))
	for i, e := range elems {
		var it struct {
			Type  json.RawMessage `json:"type"`
			Model json.RawMessage `json:"model"`
		}
		if err := unmarshalObject(e, &it); err != nil {
			return nil, fmt.Errorf("usage: iteration %d: %w", i, err)
		}
		var f usageFields
		if !decodeUsage(e, &f, valid) {
			if err := unmarshalObject(e, &f); err != nil {
				return nil, fmt.Errorf("usage: iteration %d: %w", i, err)
			}
		}
		u, err := usageOfFields(groundhog.ShapeMessages, &f)
		if err != nil {
			return nil, fmt.Errorf("usage: iteration %d: %w", i, err)
		}
		p := groundhog.UsagePart{Usage: u}
		p.Kind, _ = rawString(it.Type)
		p.Model, _ = rawString(it.Model)
		parts = append(parts, p)
	}
	return parts, nil
}

// usageOfFields normalizes the counts of one decoded usage object.
func usageOfFields(shape groundhog.Shape, f *usageFields) (groundhog.Usage, error) {
	var u groundhog.Usage
	var bad bool
	count := func(v json.RawMessage) int64 {
		n, ok := rawInt(v)
		bad = bad || !ok
		return n
	}
	bedrockRead, bedrockWrite := count(f.BedrockCacheRead), count(f.BedrockCacheWrite)
	switch {
	case f.BedrockInput != nil || f.BedrockOutput != nil:
		u.CachedInputTokens, u.CacheWriteTokens = bedrockRead, bedrockWrite
		u.InputTokens = count(f.BedrockInput) + bedrockRead + bedrockWrite
		u.OutputTokens = count(f.BedrockOutput)
	case shape == groundhog.ShapeMessages:
		u.CachedInputTokens = count(f.CacheReadInputTokens)
		u.CacheWriteTokens = count(f.CacheCreationInputTokens)
		if f.CacheReadInputTokens == nil {
			u.CachedInputTokens = bedrockRead
		}
		if cc := f.CacheCreation; cc != nil {
			short, long := count(cc.Ephemeral5m), count(cc.Ephemeral1h)
			u.CacheWrite1hTokens = long
			if f.CacheCreationInputTokens == nil || isNull(f.CacheCreationInputTokens) {
				u.CacheWriteTokens = short + long
			}
		}
		if f.CacheCreationInputTokens == nil && f.CacheCreation == nil {
			u.CacheWriteTokens = bedrockWrite
		}
		if u.CacheWrite1hTokens > u.CacheWriteTokens {
			bad = true // the 1h part cannot exceed the whole
		}
		u.InputTokens = count(f.InputTokens) + u.CachedInputTokens + u.CacheWriteTokens
		u.OutputTokens = count(f.OutputTokens)
	default:
		details := f.PromptTokensDetails
		if shape == groundhog.ShapeResponses {
			u.InputTokens, u.OutputTokens = count(f.InputTokens), count(f.OutputTokens)
			details = f.InputTokensDetails
		} else {
			u.InputTokens, u.OutputTokens = count(f.PromptTokens), count(f.CompletionTokens)
		}
		u.CachedInputTokens, u.CacheWriteTokens = bedrockRead, bedrockWrite
		if details != nil {
			if details.CachedTokens != nil && !isNull(details.CachedTokens) {
				u.CachedInputTokens = count(details.CachedTokens)
			}
			if details.CacheWriteTokens != nil && !isNull(details.CacheWriteTokens) {
				u.CacheWriteTokens = count(details.CacheWriteTokens)
			}
		}
	}
	if bad {
		return groundhog.Usage{}, fmt.Errorf("usage: %w: a token count is not a non-negative integer", ErrMalformed)
	}
	return u, nil
}
