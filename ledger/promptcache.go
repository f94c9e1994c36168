package ledger

import (
	"math"
	"sort"

	"github.com/groundhog-ai/groundhog"
)

// PromptCache is the provider prompt-cache part of a report Row
// (docs/prompt-caching.md), over the same rows as the rest of the Row:
//
//   - CachedReadTokens, CacheWriteTokens, CacheWrite1hTokens: sums of the
//     rows' Usage.CachedInputTokens, CacheWriteTokens and CacheWrite1hTokens
//     (the 1-hour part of the writes).
//   - InputTokens: sum of Usage.InputTokens (every prompt token, cached and
//     written ones included); UncachedInputTokens: InputTokens minus the
//     reads and writes, per row, never below 0.
//   - HitRatio: CachedReadTokens / InputTokens, rounded to 4 decimals (0
//     without input).
//   - Saved: sum of the rows' PromptCacheSaved (the net saving: reads'
//     saving against the uncached rate minus the writes' cost above it;
//     negative when caching lost money). A row with cache tokens whose
//     saving is unknown (model not in the price table) is left out and
//     counted in UnknownCalls; when every row with cache tokens is unknown,
//     Saved is groundhog.CostUnknown itself, never 0.
//   - Breaks: the rows with a PromptCacheBreak, grouped by cause, sorted by
//     calls (most first), then cause.
//   - Agreement: the rows that carry the provider's own cache verdict
//     (ProviderCacheReason), grouped by (groundhog's cause or "" for no
//     break, the provider's reason), with their calls and the sum of their
//     PromptCacheLostTokens; sorted by calls (most first), then cause, then
//     reason.
//   - FanOutHeld: rows held by warm-then-fan-out; FanOutWriteTokensAvoided:
//     the cached-read tokens of those rows. A held call waited for a sibling
//     to write the shared prefix and then read it, so what it read is what it
//     would otherwise have written again.
//
// Calls answered without the provider (cache hits, coalesced, replays) have
// zero usage and count only through their (zero) tokens.
type PromptCache struct {
	CachedReadTokens         int64
	CacheWriteTokens         int64
	CacheWrite1hTokens       int64
	UncachedInputTokens      int64
	InputTokens              int64
	HitRatio                 float64
	Saved                    groundhog.Money
	UnknownCalls             int64
	Breaks                   []PromptCacheBreak
	Agreement                []PromptCacheAgreement
	FanOutHeld               int64
	FanOutWriteTokensAvoided int64

	knownCalls int64             // rows with cache tokens and a known saving
	savedSum   groundhog.Total   // exact sum of the known savings
	byCause    map[string]int    // cause → index in Breaks, while accumulating
	byAgree    map[[2]string]int // (cause, reason) → index in Agreement, while accumulating
}

// PromptCacheAgreement is one cell of the agreement between groundhog's
// break diagnosis and the provider's own verdict: the calls where groundhog
// named Cause ("" when it saw no break) and the provider said
// ProviderReason, and the prompt tokens groundhog says those breaks left
// uncached (sum of PromptCacheLostTokens).
type PromptCacheAgreement struct {
	Cause          string
	ProviderReason string
	Calls          int64
	LostTokens     int64
}

// addAgreement adds calls and lost tokens to the cell (cause, reason).
func (p *PromptCache) addAgreement(cause, reason string, calls, lost int64) {
	k := [2]string{cause, reason}
	i, ok := p.byAgree[k]
	if !ok {
		if p.byAgree == nil {
			p.byAgree = make(map[[2]string]int)
		}
		i = len(p.Agreement)
		p.byAgree[k] = i
		p.Agreement = append(p.Agreement, PromptCacheAgreement{Cause: cause, ProviderReason: reason})
	}
	p.Agreement[i].Calls += calls
	p.Agreement[i].LostTokens += lost
}

// PromptCacheBreak is one cause of broken prefix reuse in a report: how many
// calls it broke, the request hash of the first of them (to look it up in
// the ledger), and the prompt tokens it left uncached (sum of the rows'
// PromptCacheLostTokens).
type PromptCacheBreak struct {
	Cause              string
	Calls              int64
	ExampleRequestHash string
	UncachedTokens     int64
}

// add counts e; rows arrive in (Time, ID) order, so the example hash of a
// cause is its first call's.
func (p *PromptCache) add(e *groundhog.LedgerEntry) {
	u := e.Usage
	p.CachedReadTokens += u.CachedInputTokens
	p.CacheWriteTokens += u.CacheWriteTokens
	p.CacheWrite1hTokens += u.CacheWrite1hTokens
	p.InputTokens += u.InputTokens
	p.UncachedInputTokens += max(u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens, 0)
	if u.CachedInputTokens != 0 || u.CacheWriteTokens != 0 {
		if e.PromptCacheSaved == groundhog.CostUnknown {
			p.UnknownCalls++
		} else {
			p.knownCalls++
			p.savedSum = p.savedSum.Add(e.PromptCacheSaved)
		}
	}
	if e.FanOutHeld {
		p.FanOutHeld++
		p.FanOutWriteTokensAvoided += u.CachedInputTokens
	}
	if e.PromptCacheBreak != "" {
		i, ok := p.byCause[e.PromptCacheBreak]
		if !ok {
			if p.byCause == nil {
				p.byCause = make(map[string]int)
			}
			i = len(p.Breaks)
			p.byCause[e.PromptCacheBreak] = i
			p.Breaks = append(p.Breaks, PromptCacheBreak{Cause: e.PromptCacheBreak, ExampleRequestHash: e.RequestHash})
		}
		p.Breaks[i].Calls++
		p.Breaks[i].UncachedTokens += e.PromptCacheLostTokens
	}
	if e.ProviderCacheReason != "" {
		p.addAgreement(e.PromptCacheBreak, e.ProviderCacheReason, 1, e.PromptCacheLostTokens)
	}
}

// finish fills the derived figures and drops the accumulation state.
func (p PromptCache) finish() PromptCache {
	if p.InputTokens > 0 {
		p.HitRatio = math.Round(float64(p.CachedReadTokens)/float64(p.InputTokens)*1e4) / 1e4
	}
	if m, ok := p.savedSum.Money(); ok && m != groundhog.CostUnknown {
		p.Saved = m
	} else if p.knownCalls > 0 {
		// Beyond Money's range (about $9.2 million of net prompt-cache
		// saving in one row of one day): unknown, never a wrapped figure.
		p.Saved = groundhog.CostUnknown
	}
	if p.UnknownCalls > 0 && p.knownCalls == 0 {
		p.Saved = groundhog.CostUnknown
	}
	p.savedSum = groundhog.Total{}
	if p.Breaks != nil {
		p.Breaks = append([]PromptCacheBreak(nil), p.Breaks...) // the accumulator keeps adding to its own
		sort.Slice(p.Breaks, func(i, j int) bool {
			if p.Breaks[i].Calls != p.Breaks[j].Calls {
				return p.Breaks[i].Calls > p.Breaks[j].Calls
			}
			return p.Breaks[i].Cause < p.Breaks[j].Cause
		})
	}
	if p.Agreement != nil {
		p.Agreement = append([]PromptCacheAgreement(nil), p.Agreement...)
		sort.Slice(p.Agreement, func(i, j int) bool {
			a, b := p.Agreement[i], p.Agreement[j]
			if a.Calls != b.Calls {
				return a.Calls > b.Calls
			}
			if a.Cause != b.Cause {
				return a.Cause < b.Cause
			}
			return a.ProviderReason < b.ProviderReason
		})
	}
	p.knownCalls, p.byCause, p.byAgree = 0, nil, nil
	return p
}

// Active reports whether the provider's prompt cache did anything in these
// rows: reads, writes, breaks or held calls.
func (p PromptCache) Active() bool {
	return p.CachedReadTokens != 0 || p.CacheWriteTokens != 0 || len(p.Breaks) != 0 || p.FanOutHeld != 0
}
