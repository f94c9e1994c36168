// Package groundhog holds the domain types and the small interfaces of the
// groundhog gateway: responses as they are stored and replayed, cache entries,
// ledger rows, operation records and the stores that keep them.
//
// Every backend (sqlite, postgres, redis) and every pipeline stage
// (fingerprint, cache, coalesce, ledger, idempotency) lives in its own
// package and depends on this one, never the other way round.
package groundhog

import (
	"time"
)

// Shape names the API a request was made to. It joins the fingerprint and
// decides the wire format of bodies and streams.
type Shape string

const (
	ShapeChat       Shape = "chat"       // OpenAI POST /v1/chat/completions
	ShapeResponses  Shape = "responses"  // OpenAI POST /v1/responses
	ShapeEmbeddings Shape = "embeddings" // OpenAI POST /v1/embeddings
	ShapeMessages   Shape = "messages"   // Anthropic POST /v1/messages
	// ShapeConverse is Amazon Bedrock's POST /model/{modelId}/converse and
	// /converse-stream (one shape: the stream is the route's choice, not
	// the body's).
	ShapeConverse Shape = "converse"
	// ShapeGemini is Google's Gemini API POST
	// /v1beta/models/{model}:generateContent and :streamGenerateContent
	// (one shape: the stream is the route's choice, not the body's).
	ShapeGemini Shape = "gemini"
)

// Provider returns the provider family whose wire format the shape uses:
// "openai", "anthropic", "bedrock" or "gemini".
func (s Shape) Provider() string {
	switch s {
	case ShapeMessages:
		return "anthropic"
	case ShapeConverse:
		return "bedrock"
	case ShapeGemini:
		return "gemini"
	}
	return "openai"
}

// Valid reports whether s is one of the known shapes.
func (s Shape) Valid() bool {
	switch s {
	case ShapeChat, ShapeResponses, ShapeEmbeddings, ShapeMessages, ShapeConverse, ShapeGemini:
		return true
	}
	return false
}

// Usage is the token accounting of one provider call, normalized across
// providers. InputTokens counts every prompt token including the cached and
// cache-write ones (OpenAI semantics); for Anthropic, whose input_tokens
// excludes cache reads and writes, the sum is taken when parsing.
//
// CacheWriteTokens counts every prompt token written to the provider's
// prompt cache on this call, whatever its TTL; CacheWrite1hTokens is the part
// of them written with a one-hour TTL (Anthropic's "1h" entries, priced
// higher), so CacheWriteTokens − CacheWrite1hTokens were written at the
// short (5- or 30-minute) rate.
type Usage struct {
	InputTokens        int64 `json:"input_tokens"`
	CachedInputTokens  int64 `json:"cached_input_tokens"`
	CacheWriteTokens   int64 `json:"cache_write_tokens"`
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens,omitempty"`
	OutputTokens       int64 `json:"output_tokens"`
}

// Add returns the element-wise sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:        u.InputTokens + v.InputTokens,
		CachedInputTokens:  u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteTokens:   u.CacheWriteTokens + v.CacheWriteTokens,
		CacheWrite1hTokens: u.CacheWrite1hTokens + v.CacheWrite1hTokens,
		OutputTokens:       u.OutputTokens + v.OutputTokens,
	}
}

// UsagePart is the usage of one iteration of a provider call whose work ran
// in several (Anthropic's usage.iterations: a server-side compaction before
// the answer, an advisor consulted on another model). The call's Usage is
// the sum of its parts, and its cost the sum of each part priced at its own
// model's rates. Model is empty when the part ran on the call's model.
type UsagePart struct {
	Kind  string `json:"type,omitempty"`
	Model string `json:"model,omitempty"`
	Usage Usage  `json:"usage"`
}

// Event is one server-sent event as the provider emitted it. Name is the
// "event:" field (empty for OpenAI chat chunks), Data the "data:" payload
// without the trailing newlines (for OpenAI the final "[DONE]" is an event
// whose Data is "[DONE]").
type Event struct {
	Name string `json:"event,omitempty"`
	Data []byte `json:"data"`
}

// Response is a complete provider response as groundhog stores, shares with
// coalesced followers and replays. Exactly one of Body and Events is the
// original: Streamed says which. The other form is derived on demand by the
// wire package.
type Response struct {
	Status      int     `json:"status"`
	ContentType string  `json:"content_type"`
	Body        []byte  `json:"body,omitempty"`
	Events      []Event `json:"events,omitempty"`
	Streamed    bool    `json:"streamed"`
	Model       string  `json:"model,omitempty"`
	Usage       Usage   `json:"usage"`
	// Cost is what the call that produced this response cost, or CostUnknown
	// when the model is not in the price table.
	Cost Money `json:"cost"`
}

// OK reports whether the response is a success (2xx).
func (r *Response) OK() bool { return r != nil && r.Status >= 200 && r.Status < 300 }

// Clock tells the time. Tests inject a fake one so leases, TTLs and day
// boundaries never need a sleep.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
