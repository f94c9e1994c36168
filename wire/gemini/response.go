package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// ErrMalformed reports a body or stream chunk that is not the JSON the
// Gemini API prescribes.
var ErrMalformed = errors.New("gemini: malformed payload")

// UsageMetadata is a GenerateContentResponse's usageMetadata, as the Gemini
// API reports it. PromptTokenCount counts every prompt token, the ones
// read from a cache (implicit or an explicit cachedContent) included:
// CachedContentTokenCount is a part of it, never an addition.
// ThoughtsTokenCount (the thinking of thinking models) is billed as output
// on top of CandidatesTokenCount; ToolUsePromptTokenCount (the results of
// built-in tools fed back to the model) is billed as input on top of
// PromptTokenCount. TotalTokenCount is the sum of prompt, candidates,
// thoughts and tool-use prompt counts.
type UsageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount,omitempty"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount,omitempty"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         int64 `json:"totalTokenCount,omitempty"`
}

// Usage returns m in groundhog's convention: InputTokens is every prompt
// token (promptTokenCount plus toolUsePromptTokenCount),
// CachedInputTokens the cached part (cachedContentTokenCount, already
// inside promptTokenCount), OutputTokens candidates plus thoughts. Gemini
// bills no cache write on a request. A negative count, or more cached
// tokens than prompt tokens, is malformed.
func (m UsageMetadata) Usage() (groundhog.Usage, error) {
	if m.PromptTokenCount < 0 || m.CachedContentTokenCount < 0 || m.CandidatesTokenCount < 0 ||
		m.ToolUsePromptTokenCount < 0 || m.ThoughtsTokenCount < 0 || m.CachedContentTokenCount > m.PromptTokenCount ||
		m.PromptTokenCount > math.MaxInt64-m.ToolUsePromptTokenCount || m.CandidatesTokenCount > math.MaxInt64-m.ThoughtsTokenCount {
		return groundhog.Usage{}, fmt.Errorf("%w: usageMetadata counts", ErrMalformed)
	}
	return groundhog.Usage{
		InputTokens:       m.PromptTokenCount + m.ToolUsePromptTokenCount,
		CachedInputTokens: m.CachedContentTokenCount,
		OutputTokens:      m.CandidatesTokenCount + m.ThoughtsTokenCount,
	}, nil
}

// UsageOf is the usageMetadata of u as the simulator reports it: u has no
// thoughts nor tool-use prompt, so prompt = InputTokens, candidates =
// OutputTokens; cachedContentTokenCount is omitted when zero, as Google
// omits it.
func UsageOf(u groundhog.Usage) UsageMetadata {
	return UsageMetadata{
		PromptTokenCount:        u.InputTokens,
		CachedContentTokenCount: u.CachedInputTokens,
		CandidatesTokenCount:    u.OutputTokens,
		TotalTokenCount:         u.InputTokens + u.OutputTokens,
	}
}

// chunk is a GenerateContentResponse as far as this package reads it.
type chunk struct {
	Candidates []struct {
		Index        *int   `json:"index"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata json.RawMessage `json:"usageMetadata"`
	ModelVersion  string          `json:"modelVersion"`
	Error         json.RawMessage `json:"error"`
}

func parseUsage(raw json.RawMessage) (groundhog.Usage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return groundhog.Usage{}, nil
	}
	var m UsageMetadata
	if err := json.Unmarshal(t, &m); err != nil {
		return groundhog.Usage{}, fmt.Errorf("%w: usageMetadata: %w", ErrMalformed, err)
	}
	return m.Usage()
}

// UsageFromBody reads the model (modelVersion, without "models/") and the
// usage of a generateContent response body.
func UsageFromBody(body []byte) (model string, u groundhog.Usage, err error) {
	var c chunk
	if err := json.Unmarshal(body, &c); err != nil {
		return "", groundhog.Usage{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	u, err = parseUsage(c.UsageMetadata)
	return TrimModel(c.ModelVersion), u, err
}

// UsageFromEvents reads the model and usage of a streamGenerateContent
// stream: each chunk carries the usage so far (the prompt counts from the
// first chunk on, the candidates count growing), so the last chunk with a
// usageMetadata is the call's. Chunks that do not parse are skipped, so a
// broken stream still yields the usage it reported.
func UsageFromEvents(events []groundhog.Event) (model string, u groundhog.Usage, err error) {
	for i := len(events) - 1; i >= 0; i-- {
		var c chunk
		if json.Unmarshal(events[i].Data, &c) != nil {
			continue
		}
		if model == "" {
			model = TrimModel(c.ModelVersion)
		}
		if len(c.UsageMetadata) == 0 {
			continue
		}
		u, err = parseUsage(c.UsageMetadata)
		return model, u, err
	}
	return model, groundhog.Usage{}, nil
}

// IsError reports whether a stream chunk is an error ({"error": {...}}), as
// Google ends a stream that fails after it started.
func IsError(ev groundhog.Event) bool {
	d := bytes.TrimSpace(ev.Data)
	if len(d) == 0 || d[0] != '{' || !bytes.Contains(d, []byte(`"error"`)) {
		return false
	}
	var c chunk
	return json.Unmarshal(d, &c) == nil && len(c.Error) > 0 && string(c.Error) != "null"
}

// IsTerminal reports whether ev ends a stream: a chunk whose candidates all
// carry a finishReason, a chunk whose prompt was blocked
// (promptFeedback.blockReason, no candidates), or an error chunk.
func IsTerminal(ev groundhog.Event) bool {
	var c chunk
	if json.Unmarshal(ev.Data, &c) != nil {
		return false
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return true
	}
	if len(c.Candidates) == 0 {
		return c.PromptFeedback != nil && c.PromptFeedback.BlockReason != ""
	}
	for _, cand := range c.Candidates {
		if cand.FinishReason == "" {
			return false
		}
	}
	return true
}

// StreamComplete reports whether events form a complete, successful
// stream: at least one chunk, every payload a JSON object, no error chunk,
// and the last chunk terminal (IsTerminal) with a usageMetadata.
func StreamComplete(events []groundhog.Event) bool {
	n := len(events)
	if n == 0 {
		return false
	}
	for _, ev := range events {
		if ev.Name != "" || !jsonObject(ev.Data) || IsError(ev) {
			return false
		}
	}
	last := events[n-1]
	if !IsTerminal(last) {
		return false
	}
	var c chunk
	return json.Unmarshal(last.Data, &c) == nil && len(c.UsageMetadata) > 0
}

func jsonObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && jsonwalk.Valid(b)
}

// refused are the finish reasons of an answer the model declined to give
// or the provider cut: such an answer is passed to its client but never
// cached.
var refused = map[string]bool{
	"SAFETY": true, "RECITATION": true, "BLOCKLIST": true, "PROHIBITED_CONTENT": true,
	"SPII": true, "IMAGE_SAFETY": true, "LANGUAGE": true, "MALFORMED_FUNCTION_CALL": true,
	"OTHER": true,
}

func refusal(c *chunk) bool {
	if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		return true
	}
	for _, cand := range c.Candidates {
		if refused[strings.ToUpper(cand.FinishReason)] {
			return true
		}
	}
	return false
}

// Storable reports whether a generateContent body may be cached: JSON, not
// a blocked prompt, and no candidate refused (finishReason SAFETY,
// RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, …).
func Storable(body []byte) bool {
	var c chunk
	return json.Unmarshal(body, &c) == nil && !refusal(&c)
}

// StorableEvents is Storable for a complete stream: no chunk refused.
func StorableEvents(events []groundhog.Event) bool {
	for _, ev := range events {
		var c chunk
		if json.Unmarshal(ev.Data, &c) != nil || refusal(&c) {
			return false
		}
	}
	return true
}
