package groundhog

import (
	"context"
	"time"
)

// Outcome says how the pipeline answered a call.
type Outcome string

const (
	OutcomeUpstream  Outcome = "upstream"  // the provider was called for this request
	OutcomeCacheHit  Outcome = "cache_hit" // served from the exact cache
	OutcomeCoalesced Outcome = "coalesced" // shared an identical in-flight call's result
	OutcomeReplayed  Outcome = "replayed"  // idempotency replay of a stored result
	OutcomeRejected  Outcome = "rejected"  // refused before the provider (409, 422, 400 after parse…)
	OutcomeError     Outcome = "error"     // the provider or the gateway failed
	// OutcomePassthrough: a provider route groundhog does not model (files,
	// batches, count_tokens…), relayed uncached.
	OutcomePassthrough Outcome = "passthrough"
	// OutcomeSuspectedDuplicate: a side-effect tool call made without an
	// operation identity, executed, whose tool and arguments repeat an
	// earlier call of the same session (identical text is not proof of the
	// same intention, so it ran; the report shows it).
	OutcomeSuspectedDuplicate Outcome = "suspected_duplicate"
)

// LedgerEntry is one row of the duplicate-work ledger: one per call that
// reached the fingerprint stage, whatever its outcome. ID is unique (128
// bits in hex: the row's time in nanoseconds, then 64 random bits —
// NewTimeID); appending a row whose (Time, ID) is stored already stores
// nothing. SQLite dedupes by ID alone; PostgreSQL, whose ledger is
// partitioned by day, by (Time, ID) — the same thing for the gateway's rows,
// whose ID names their Time.
type LedgerEntry struct {
	ID          string
	Time        time.Time // arrival time, UTC
	Tenant      string
	Operation   string
	RequestHash string
	Shape       Shape
	Model       string
	Provider    string // "openai", "anthropic", "sim"
	Outcome     Outcome
	Status      int // HTTP status returned to the client
	Usage       Usage
	// Cost is what this call cost at the provider (0 for hits, coalesced and
	// replays; CostUnknown when the model has no price).
	Cost Money
	// Saved is the cost this call avoided (the original cost of the cached or
	// shared response), 0 when nothing was avoided.
	Saved Money
	// FullCost is what the call would have cost had it gone upstream: Cost for
	// upstream calls, Saved for avoided ones. Repeat cost and shadow savings
	// are sums of FullCost.
	FullCost Money
	Latency  time.Duration
	// UpstreamWait is the part of Latency spent waiting for the upstream:
	// from sending the request to the end of its body (read, or relayed as
	// it streamed), or for a coalesced follower the part of its own time
	// during which its leader's flight was so waiting. Latency minus
	// UpstreamWait is groundhog's overhead on the call (0 wait for hits and
	// replays: all their time is overhead). Observers use it; no store
	// keeps it.
	UpstreamWait time.Duration
	Attempt      int  // 1 for the first upstream attempt of an idempotent operation, n for the n-th
	InFlight     bool // an identical call (same tenant and hash) was in flight when this one arrived
	CacheOn      bool // the cache policy for this call was on (use/refresh)
	Idempotent   bool // the call carried an Idempotency-Key
	Stream       bool

	// Provider prompt caching (docs/prompt-caching.md). PromptCacheSaved is the net
	// saving of the provider's prompt cache on this call: what the cached
	// reads saved against the uncached input rate minus what the cache
	// writes cost above it (negative when caching lost money; CostUnknown
	// when the model has no price). PromptCacheBreak is the cause of a break
	// in prefix reuse ("" when none), one of the names of the wire contract
	// (tools_reordered, ttl_gap, …), and PromptCacheLostTokens the prompt
	// tokens the break left uncached (expected reusable prefix minus what the
	// provider read). FanOutHeld says the call was held by warm-then-fan-out
	// until a sibling had written the shared prefix.
	PromptCacheSaved      Money
	PromptCacheBreak      string
	PromptCacheLostTokens int64
	FanOutHeld            bool
	// ProviderCacheReason is the provider's own verdict on the call's
	// prompt cache when groundhog asked for it (Groundhog-Prompt-Cache-
	// Diagnostics: provider): a miss reason as the provider names it
	// (Anthropic system_changed, OpenAI input_changed, …), "none" or
	// "cache_hit" when it found no divergence, "" when it was not asked.
	ProviderCacheReason string

	// Session is the agent run the call belongs to (the client's
	// Groundhog-Session header), ParentSession the run that started it
	// (Groundhog-Parent-Session, from a subagent); "" when not sent. See
	// ValidSessionID.
	Session       string
	ParentSession string

	// ResultBytes is the size of the answer relayed to the client of an
	// MCP tool call: the JSON-RPC result (or error object) in bytes; 0 on
	// other rows.
	ResultBytes int64
}

// Stage is one timed stage of a call's pipeline, for observers such as
// trace spans; no store keeps it ("groundhog.admit",
// "groundhog.idempotency", "groundhog.cache", "groundhog.upstream").
type Stage struct {
	Name       string
	Start, End time.Time
}

// LedgerFilter selects ledger rows: From inclusive, To exclusive; empty
// Tenant or Operation match all.
type LedgerFilter struct {
	Tenant    string
	Operation string
	From, To  time.Time
}

// LedgerStore keeps ledger rows.
//
// AppendLedger stores rows in one transaction; rows whose ID is already
// stored are skipped, so a journal can be replayed after a crash. It must
// not keep rows, nor anything in them, after it returns: the ledger's
// writer clears and reuses the slice for later rows.
// ScanLedger calls fn for every row matching f in (Time, ID) order and stops
// at fn's first error, returning it.
type LedgerStore interface {
	AppendLedger(ctx context.Context, rows []LedgerEntry) error
	ScanLedger(ctx context.Context, f LedgerFilter, fn func(*LedgerEntry) error) error
}
