// Package promptcache helps agents keep the provider's prompt cache warm
// and says why it went cold (docs/prompt-caching.md): a prefix model of every request
// shape, break diagnosis against earlier prompts (Tracker), breakpoint
// injection (Inject), stable prompt_cache_key values (StableKey,
// SetCacheKey) and the request differ behind `groundhog prefix-diff` (Diff).
//
// # Prefix model
//
// Parse turns a request body into segments in the order the provider caches
// them — each tool, each instructions/system block, a zero-token
// "parameters" segment for Anthropic tool_choice/thinking, each message or
// content block — with estimated token offsets (sim.CountTokens plus
// sim.MessageOverhead) and a 64-bit hash chain. Cache markers
// (cache_control, prompt_cache_breakpoint, and Bedrock Converse's
// cachePoint blocks, which mark the block before them) are noted and
// excluded from the hashes: a marker does not change what the provider
// caches. Each segment
// also gets a hash with volatile values (ISO timestamps, dates, times,
// UUIDs, request ids, nonces) masked and a 5-bit digest per pattern, so a
// timestamp that moves inside the prefix is recognized and named without
// keeping any text. Hashes are of the raw JSON bytes: a client that
// re-serializes the same content differently (whitespace, key order) is
// seen as changing it.
//
// # Diagnosis
//
// Per chain — (tenant, prompt_cache_key, model), or (tenant, operation,
// model) without a key — the Tracker keeps a few recent prompts as 32-byte
// segment records and the prefix points the provider stored for them
// (breakpoints; every 128-token step for OpenAI automatic caching). Before
// finds the closest earlier prompt (longest common chain, by binary search)
// and computes the reusable prefix and what the provider's rules (rules.go,
// one table) let it read; After compares with the provider's cached-token
// count and returns exactly one cause when it read less. Requests sharing
// fewer than two messages are different conversations, not edits: only
// what they share is expected.
//
// Estimates are calibrated against the provider's own prompt-token count,
// and a shortfall of at most one 128-token step (OpenAI) or 2 % is not a
// break, so a stable prefix never reports one.
package promptcache
