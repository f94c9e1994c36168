package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// ErrMalformed reports a body or event payload that is not the JSON the
// Converse shape prescribes.
var ErrMalformed = errors.New("bedrock: malformed payload")

// ErrIncompleteStream reports a ConverseStream without messageStart,
// messageStop or its closing metadata event, or one with an exception.
var ErrIncompleteStream = errors.New("bedrock: incomplete stream")

// TokenUsage is Bedrock's usage object. InputTokens excludes the tokens
// read from and written to the prompt cache (totalTokens = inputTokens +
// outputTokens + cacheReadInputTokens + cacheWriteInputTokens);
// CacheDetails splits the writes by TTL ("5m", "1h").
type TokenUsage struct {
	InputTokens           int64         `json:"inputTokens"`
	OutputTokens          int64         `json:"outputTokens"`
	TotalTokens           int64         `json:"totalTokens"`
	CacheReadInputTokens  *int64        `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens *int64        `json:"cacheWriteInputTokens,omitempty"`
	CacheDetails          []CacheDetail `json:"cacheDetails,omitempty"`
}

// CacheDetail is the part of the cache writes made with one TTL.
type CacheDetail struct {
	TTL         string `json:"ttl"`
	InputTokens int64  `json:"inputTokens"`
}

// Usage returns u in groundhog's convention: InputTokens counts every
// prompt token (Bedrock's inputTokens plus the cache reads and writes),
// CacheWrite1hTokens the writes of CacheDetails with ttl "1h". A count
// below zero, or a 1-hour part larger than the writes, is malformed.
func (u TokenUsage) Usage() (groundhog.Usage, error) {
	read, write := deref(u.CacheReadInputTokens), deref(u.CacheWriteInputTokens)
	var long int64
	for _, d := range u.CacheDetails {
		if d.InputTokens < 0 {
			return groundhog.Usage{}, fmt.Errorf("%w: negative cacheDetails inputTokens", ErrMalformed)
		}
		if d.TTL == "1h" {
			long += d.InputTokens
		}
	}
	if u.InputTokens < 0 || u.OutputTokens < 0 || read < 0 || write < 0 || long > write {
		return groundhog.Usage{}, fmt.Errorf("%w: usage counts", ErrMalformed)
	}
	return groundhog.Usage{
		InputTokens:        u.InputTokens + read + write,
		CachedInputTokens:  read,
		CacheWriteTokens:   write,
		CacheWrite1hTokens: long,
		OutputTokens:       u.OutputTokens,
	}, nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// UsageOf is the inverse of TokenUsage.Usage, as the simulator reports it:
// both cache counts are present (zero when nothing was cached), and the
// writes are split by TTL when there are any (1h before 5m, as Bedrock
// sorts them).
func UsageOf(u groundhog.Usage) TokenUsage {
	read, write := u.CachedInputTokens, u.CacheWriteTokens
	t := TokenUsage{
		InputTokens:           u.InputTokens - read - write,
		OutputTokens:          u.OutputTokens,
		CacheReadInputTokens:  &read,
		CacheWriteInputTokens: &write,
	}
	t.TotalTokens = t.InputTokens + t.OutputTokens + read + write
	if long := u.CacheWrite1hTokens; long > 0 {
		t.CacheDetails = append(t.CacheDetails, CacheDetail{TTL: "1h", InputTokens: long})
	}
	if short := write - u.CacheWrite1hTokens; short > 0 {
		t.CacheDetails = append(t.CacheDetails, CacheDetail{TTL: "5m", InputTokens: short})
	}
	return t
}

// parseUsage reads a usage member; a missing or null one is zero.
func parseUsage(raw json.RawMessage) (groundhog.Usage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return groundhog.Usage{}, nil
	}
	var u TokenUsage
	if err := json.Unmarshal(raw, &u); err != nil {
		return groundhog.Usage{}, fmt.Errorf("%w: usage: %w", ErrMalformed, err)
	}
	return u.Usage()
}

// UsageFromBody reads the usage of a Converse response body.
func UsageFromBody(body []byte) (groundhog.Usage, error) {
	var b struct {
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return groundhog.Usage{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return parseUsage(b.Usage)
}

// UsageFromEvents reads the usage of a ConverseStream: its metadata
// event's. Events that do not parse are skipped, so a broken stream still
// yields the usage it reported.
func UsageFromEvents(events []groundhog.Event) (groundhog.Usage, error) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Name != EventMetadata {
			continue
		}
		var m struct {
			Usage json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(events[i].Data, &m) != nil {
			continue
		}
		return parseUsage(m.Usage)
	}
	return groundhog.Usage{}, nil
}

// IsTerminal reports whether ev ends a successful ConverseStream: the
// metadata event, which carries the usage and follows messageStop.
func IsTerminal(ev groundhog.Event) bool { return ev.Name == EventMetadata }

// StreamComplete reports whether events form a complete, successful
// ConverseStream: messageStart first, a messageStop, metadata last, every
// payload a JSON object and no exception.
func StreamComplete(events []groundhog.Event) bool {
	n := len(events)
	if n < 3 || events[0].Name != EventMessageStart || events[n-1].Name != EventMetadata {
		return false
	}
	stopped := false
	for _, ev := range events {
		if IsException(ev) || !jsonObject(ev.Data) {
			return false
		}
		if ev.Name == EventMessageStop {
			stopped = true
		}
	}
	return stopped
}

func jsonObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && jsonwalk.Valid(b)
}

// refusedStop are the stop reasons of an answer the provider declined to
// give: such an answer is passed to its client but never cached.
var refusedStop = map[string]bool{"content_filtered": true, "guardrail_intervened": true}

// Storable reports whether a Converse body may be cached: not a refusal
// (stopReason content_filtered or guardrail_intervened), and JSON.
func Storable(body []byte) bool {
	var b struct {
		StopReason string `json:"stopReason"`
	}
	return json.Unmarshal(body, &b) == nil && !refusedStop[b.StopReason]
}

// StorableEvents is Storable for a complete stream: its messageStop's
// stopReason.
func StorableEvents(events []groundhog.Event) bool {
	for _, ev := range events {
		if ev.Name != EventMessageStop {
			continue
		}
		var s struct {
			StopReason string `json:"stopReason"`
		}
		if json.Unmarshal(ev.Data, &s) != nil || refusedStop[s.StopReason] {
			return false
		}
	}
	return true
}
