package ledger

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Aggregator is an optional capability of a groundhog.LedgerStore: it keeps
// daily rollups of its ledger rows, so a report of a UTC day reads
// O(tenants × operations) rollup rows instead of the day's rows.
// BuildReport uses it when the store has it and the report's day is a UTC
// day (see BuildReport).
//
// LedgerRollup returns the rollup of the UTC day starting at day (midnight
// UTC), of one tenant or all (""), as if the rows of pending whose ID the
// store does not hold had been appended too (pending rows are already
// limited to the day and tenant). It returns ErrNoRollup when it cannot
// answer (a wrapper around a store without the capability): the report
// then scans.
type Aggregator interface {
	LedgerRollup(ctx context.Context, day time.Time, tenant string, pending []groundhog.LedgerEntry) (*Rollup, error)
}

// ErrNoRollup is LedgerRollup's answer when the store keeps no rollups.
var ErrNoRollup = errors.New("ledger: store keeps no rollups")

// Rollup is what a store keeps of one UTC day for the report: the
// order-independent sums of the day's rows per (tenant, operation), and the
// prompt-cache breaks per (tenant, operation, cause), and the agreement
// with the provider's cache verdicts per (tenant, operation, cause,
// provider reason).
type Rollup struct {
	Counts    []RollupCounts
	Breaks    []RollupBreak
	Agreement []RollupAgreement
}

// RollupCounts are the sums over the rows of one (tenant, operation) of a
// UTC day from which Row's figures follow (see Row for the definitions;
// "first row" is the earliest row in (Time, ID) order of its (tenant,
// request hash) in the day, whatever its operation):
//
//   - Calls, ConcurrentIdentical, CacheHits, Coalesced, Replayed,
//     UpstreamCalls, SuspectedDuplicates, Spend, Saved, UnknownCostCalls, Retries, RetryCost, CacheRent,
//     UnknownRentDays and the PromptCache sums: Row's figures themselves
//     (they do not depend on the order of the rows).
//   - The rows of outcome cache_rent are no calls (see Row.Calls): they
//     count in Spend, CacheRent and UnknownRentDays only, never in the
//     figures below.
//   - Distinct: distinct request hashes among the rows (Row.Distinct).
//   - Firsts: rows that are the first row of their hash. Repeats = Calls −
//     Firsts.
//   - FullCost: sum of the known FullCost of every row; FirstFullCost: the
//     same over the first rows. RepeatCost = FullCost − FirstFullCost.
//   - Shadow: sum of the known FullCost of every row whose CacheOn is false
//     and that was not avoided; FirstShadow: the same over the first rows.
//     ShadowSaved = Shadow − FirstShadow.
//   - PromptCacheKnownCalls, PromptCacheUnknownCalls, PromptCacheSaved: rows
//     with cache tokens and a known saving, with an unknown one, and the
//     sum of the known savings.
type RollupCounts struct {
	Tenant, Operation string

	Calls, Distinct, Firsts                      int64
	FullCost, FirstFullCost, Shadow, FirstShadow groundhog.Total

	ConcurrentIdentical, CacheHits, Coalesced, Replayed, UpstreamCalls int64
	SuspectedDuplicates                                                int64
	Spend, Saved                                                       groundhog.Total
	UnknownCostCalls, Retries                                          int64
	RetryCost, CacheRent                                               groundhog.Total
	UnknownRentDays                                                    int64

	CachedReadTokens, CacheWriteTokens, CacheWrite1hTokens int64
	UncachedInputTokens, InputTokens                       int64
	PromptCacheKnownCalls, PromptCacheUnknownCalls         int64
	PromptCacheSaved                                       groundhog.Total
	FanOutHeld, FanOutWriteTokensAvoided                   int64
}

// RollupBreak is one prompt-cache break cause of one (tenant, operation) of
// a UTC day: its calls, the sum of their PromptCacheLostTokens, and the
// first of them in (Time, ID) order.
type RollupBreak struct {
	Tenant, Operation, Cause string
	Calls, UncachedTokens    int64
	FirstTime                time.Time
	FirstID                  string
	FirstRequestHash         string
}

// RollupAgreement is one cell of the agreement between groundhog's cause
// ("" for no break) and the provider's own verdict, for one (tenant,
// operation) of a UTC day: its calls and the sum of their
// PromptCacheLostTokens.
type RollupAgreement struct {
	Tenant, Operation, Cause, ProviderReason string
	Calls, LostTokens                        int64
}

// utcDay reports whether the report day of p is a UTC day (midnight to
// midnight UTC, whatever the zone's name), the only days rollups hold.
func utcDay(p ReportParams) (time.Time, bool) {
	start, end := DayBounds(p.Day, p.Location)
	const day = 24 * time.Hour
	return start.UTC(), end.Sub(start) == day && start.UnixNano()%int64(day) == 0
}

// rollupSum sums rollup rows into one report Row; the repeat figures are
// kept as first-row sums until result.
type rollupSum struct {
	row                                          Row
	firsts                                       int64
	fullCost, firstFullCost, shadow, firstShadow groundhog.Total
	breaks                                       map[string]*RollupBreak
}

func (s *rollupSum) add(c *RollupCounts) {
	r := &s.row
	r.Calls += c.Calls
	r.Distinct += c.Distinct
	s.firsts += c.Firsts
	s.fullCost = s.fullCost.Plus(c.FullCost)
	s.firstFullCost = s.firstFullCost.Plus(c.FirstFullCost)
	s.shadow = s.shadow.Plus(c.Shadow)
	s.firstShadow = s.firstShadow.Plus(c.FirstShadow)
	r.ConcurrentIdentical += c.ConcurrentIdentical
	r.CacheHits += c.CacheHits
	r.Coalesced += c.Coalesced
	r.Replayed += c.Replayed
	r.UpstreamCalls += c.UpstreamCalls
	r.SuspectedDuplicates += c.SuspectedDuplicates
	r.Spend = r.Spend.Plus(c.Spend)
	r.Saved = r.Saved.Plus(c.Saved)
	r.UnknownCostCalls += c.UnknownCostCalls
	r.Retries += c.Retries
	r.RetryCost = r.RetryCost.Plus(c.RetryCost)
	r.CacheRent = r.CacheRent.Plus(c.CacheRent)
	r.UnknownRentDays += c.UnknownRentDays
	p := &r.PromptCache
	p.CachedReadTokens += c.CachedReadTokens
	p.CacheWriteTokens += c.CacheWriteTokens
	p.CacheWrite1hTokens += c.CacheWrite1hTokens
	p.UncachedInputTokens += c.UncachedInputTokens
	p.InputTokens += c.InputTokens
	p.knownCalls += c.PromptCacheKnownCalls
	p.UnknownCalls += c.PromptCacheUnknownCalls
	p.savedSum = p.savedSum.Plus(c.PromptCacheSaved)
	p.FanOutHeld += c.FanOutHeld
	p.FanOutWriteTokensAvoided += c.FanOutWriteTokensAvoided
}

func (s *rollupSum) addBreak(b *RollupBreak) {
	if s.breaks == nil {
		s.breaks = make(map[string]*RollupBreak)
	}
	have := s.breaks[b.Cause]
	if have == nil {
		c := *b
		s.breaks[b.Cause] = &c
		return
	}
	have.Calls += b.Calls
	have.UncachedTokens += b.UncachedTokens
	if b.FirstTime.Before(have.FirstTime) || b.FirstTime.Equal(have.FirstTime) && b.FirstID < have.FirstID {
		have.FirstTime, have.FirstID, have.FirstRequestHash = b.FirstTime, b.FirstID, b.FirstRequestHash
	}
}

// result returns the Row; distinctIsFirsts makes Distinct the first rows
// (the total's rule: distinct hashes across operations).
func (s *rollupSum) result(distinctIsFirsts bool) Row {
	r := s.row
	if distinctIsFirsts {
		r.Distinct = s.firsts
	}
	r.Repeats = r.Calls - s.firsts
	r.RepeatCost = s.fullCost.Plus(s.firstFullCost.Times(-1))
	r.ShadowSaved = s.shadow.Plus(s.firstShadow.Times(-1))
	if len(s.breaks) > 0 {
		r.PromptCache.Breaks = make([]PromptCacheBreak, 0, len(s.breaks))
		for _, b := range s.breaks {
			r.PromptCache.Breaks = append(r.PromptCache.Breaks, PromptCacheBreak{Cause: b.Cause, Calls: b.Calls,
				ExampleRequestHash: b.FirstRequestHash, UncachedTokens: b.UncachedTokens})
		}
	}
	return r.finish()
}

// Report turns the rollup of a UTC day into the report the Accumulator
// computes from the day's rows (same definitions, see Row), limited to one
// operation when operation is not empty (the rollup is already limited to
// the report's tenant). day labels the report.
func (ru *Rollup) Report(day, operation string) (*Report, error) {
	ops := map[string]*rollupSum{}
	var total rollupSum
	get := func(op string) *rollupSum {
		s := ops[op]
		if s == nil {
			s = &rollupSum{row: Row{Operation: op}}
			ops[op] = s
		}
		return s
	}
	for i := range ru.Counts {
		c := &ru.Counts[i]
		if operation != "" && c.Operation != operation {
			continue
		}
		get(c.Operation).add(c)
		total.add(c)
	}
	for i := range ru.Breaks {
		b := &ru.Breaks[i]
		if operation != "" && b.Operation != operation {
			continue
		}
		get(b.Operation).addBreak(b)
		total.addBreak(b)
	}
	for i := range ru.Agreement {
		a := &ru.Agreement[i]
		if operation != "" && a.Operation != operation {
			continue
		}
		get(a.Operation).row.PromptCache.addAgreement(a.Cause, a.ProviderReason, a.Calls, a.LostTokens)
		total.row.PromptCache.addAgreement(a.Cause, a.ProviderReason, a.Calls, a.LostTokens)
	}
	rep := &Report{Day: day, Operations: []Row{}}
	for _, s := range ops {
		if !s.row.shown() {
			continue
		}
		rep.Operations = append(rep.Operations, s.result(false))
	}
	sort.Slice(rep.Operations, func(i, j int) bool { return rep.Operations[i].Operation < rep.Operations[j].Operation })
	// Under an operation filter the total is that operation's row (see
	// Accumulator.Report); otherwise distinct hashes across operations.
	rep.Total = total.result(operation == "")
	rep.Total.Operation = ""
	if err := rep.Err(); err != nil {
		return nil, err
	}
	return rep, nil
}
