package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// ReportParams select one day of the ledger.
type ReportParams struct {
	// Day is any instant in the day to report; the day is the calendar day
	// of Day in Location.
	Day time.Time
	// Location sets the day boundaries (midnight to midnight there); nil
	// means UTC.
	Location *time.Location
	// Tenant restricts the report to one tenant; empty means all.
	Tenant string
	// Operation restricts the report to one operation; empty means all. A
	// call of this operation still counts as a repeat when its hash was
	// first seen in another operation: the row is the same as the one the
	// unfiltered report shows.
	Operation string
}

// Row is the report of one operation, or the total. Definitions, for the
// rows of one calendar day in the report's time zone:
//
//   - Calls: ledger rows (all outcomes) except those of outcome cache_rent,
//     which are no calls: the gateway books an explicit cache's storage
//     rent in them. Every per-call figure (Distinct, Repeats, RepeatCost,
//     ConcurrentIdentical, the outcome counts, Saved, ShadowSaved,
//     UnknownCostCalls, PromptCache) leaves them out too; they count in
//     Spend, CacheRent and UnknownRentDays only. An operation with only
//     rent on the day is a row of 0 calls.
//   - Distinct: distinct request hashes among those calls.
//   - Repeats: rows whose (tenant, request hash) appeared in an earlier row
//     of the same day, in any operation (the hash already includes the
//     tenant; "earlier" orders by time, then ID).
//   - RepeatShare: Repeats / Calls, rounded to 4 decimals (0 when Calls is 0).
//   - RepeatCost: sum of FullCost over the repeats (known costs only).
//   - ConcurrentIdentical: rows with InFlight set, i.e. that arrived while an
//     identical call was in flight (a subset of the repeats except across
//     midnight, counted separately: only coalescing removes those).
//   - CacheHits, Coalesced, Replayed, UpstreamCalls: rows with outcome
//     cache_hit, coalesced, replayed and upstream.
//   - SuspectedDuplicates: rows with outcome suspected_duplicate (an MCP
//     side-effect tool call made again without an idempotency key; see
//     ToolRow).
//   - Spend: sum of Cost (known costs only), the storage rent of explicit
//     caches included.
//   - CacheRent: the part of Spend that is the storage rent of explicit
//     caches: sum of the known Cost of the rows of outcome cache_rent (one
//     per cache and UTC day; not calls, see Calls).
//   - UnknownRentDays: rows of outcome cache_rent whose Cost is
//     groundhog.CostUnknown (the cache's model has no storage price): a
//     day of one cache's rent left out of Spend and CacheRent, never
//     summed as 0, and counted here rather than in UnknownCostCalls, for
//     it is no call. Spend is then partly unknown, as it is when
//     UnknownCostCalls is not 0.
//   - Saved: sum of Saved (known amounts only).
//   - ShadowSaved: sum of FullCost of the repeats whose CacheOn is false
//     and that were not avoided anyway (outcome other than cache_hit,
//     coalesced, replayed): what an exact cache plus coalescing would have
//     saved for calls whose cache was off. An avoided call's cost is in
//     Saved, so no call is counted in both.
//   - Projected30d: 30 × (Saved + ShadowSaved).
//   - UnknownCostCalls: calls whose Cost, Saved or FullCost is
//     groundhog.CostUnknown (model not in the price table). Their unknown
//     amounts are never summed as 0: they are left out of every USD figure
//     and counted here instead.
//   - Retries, RetryCost: upstream rows with Attempt > 1 — an idempotent
//     operation executed again after its first worker lost its lease (a
//     crash, a timeout) — and their known cost: duplicate spend that no
//     cache removes, made visible.
//
// The total row is computed the same way over all rows of the report, not
// summed from the operation rows (its Distinct and RepeatShare could not be).
//
// USD figures are groundhog.Total: exact sums of picodollars far beyond a
// Money's $9.2 million (128 bits). A figure that would leave even that range
// is never shown wrapped: the report is an error (Report.Err).
type Row struct {
	Operation           string
	Calls               int64
	Distinct            int64
	Repeats             int64
	RepeatShare         float64
	RepeatCost          groundhog.Total
	ConcurrentIdentical int64
	CacheHits           int64
	Coalesced           int64
	Replayed            int64
	UpstreamCalls       int64
	SuspectedDuplicates int64
	Spend               groundhog.Total
	Saved               groundhog.Total
	ShadowSaved         groundhog.Total
	Projected30d        groundhog.Total
	UnknownCostCalls    int64
	Retries             int64
	RetryCost           groundhog.Total
	CacheRent           groundhog.Total
	UnknownRentDays     int64
	// PromptCache is what the provider's prompt cache did (see PromptCache).
	PromptCache PromptCache
}

// Report is the duplicate-work report of one day: one row per operation,
// sorted by operation name, and the total.
type Report struct {
	Day        string // YYYY-MM-DD in the report's time zone
	Operations []Row
	Total      Row
	// Group is what the rows are keyed by: "" for the operation, or
	// GroupByTenant when Row.Operation holds a tenant (Analyze --by tenant).
	Group string
}

// Err reports a USD figure of r that overflowed (see Row): such a report
// must not be shown. BuildReport and Analyze return it as their error.
func (r *Report) Err() error {
	for _, row := range append(append([]Row(nil), r.Operations...), r.Total) {
		for _, t := range []groundhog.Total{row.RepeatCost, row.Spend, row.Saved, row.ShadowSaved, row.Projected30d, row.RetryCost, row.CacheRent} {
			if t.Overflow() {
				return groundhog.Errorf(groundhog.EINVALID, "ledger: report %s: a USD figure exceeds the exact range (about $1.7e26)", r.Day)
			}
		}
	}
	return nil
}

// hashKey identifies a request across the day: the repeat rule's
// (tenant, request hash).
type hashKey struct{ tenant, hash string }

// opHashKey is a hash seen in an operation other than the one it was first
// seen in: rare, so kept apart from the main set.
type opHashKey struct {
	op  int32
	key hashKey
}

// Accumulator computes a report incrementally from ledger rows. It is the
// one implementation of the definitions on Row, shared by BuildReport (rows
// scanned from a LedgerStore) and Analyze (rows derived from a request log),
// so live and offline figures cannot drift apart.
//
// Rows must be added in (Time, ID) order and all belong to one day. Memory
// grows with the distinct request hashes of the day, not with the calls.
type Accumulator struct {
	operation string // filter; "" counts every row

	seen      *reqMap[int32] // (tenant, hash) -> index of the operation it was first seen in
	seenOther map[opHashKey]struct{}
	opIndex   map[string]int32
	rows      []*Row
	total     Row

	lastOp  string // one-entry cache in front of opIndex: calls come in runs
	lastIdx int32
}

// NewAccumulator returns an empty Accumulator. A non-empty operation limits
// the report to that operation; rows of other operations must still be
// added, because they decide what is a repeat.
func NewAccumulator(operation string) *Accumulator {
	return &Accumulator{
		operation: operation,
		seen:      newReqMap[int32](),
		seenOther: make(map[opHashKey]struct{}),
		opIndex:   make(map[string]int32),
		lastIdx:   -1,
	}
}

func (a *Accumulator) op(name string) int32 {
	if a.lastIdx >= 0 && name == a.lastOp {
		return a.lastIdx
	}
	i, ok := a.opIndex[name]
	if !ok {
		i = int32(len(a.rows))
		a.opIndex[name] = i
		a.rows = append(a.rows, &Row{Operation: name})
	}
	a.lastOp, a.lastIdx = name, i
	return i
}

// Add counts e. See Row for the definitions.
func (a *Accumulator) Add(e *groundhog.LedgerEntry) {
	oi := a.op(e.Operation)
	if e.Outcome == groundhog.OutcomeCacheRent {
		// No call: its hash (its own, one per row) is no request the
		// repeat rule could see again.
		if a.operation == "" || e.Operation == a.operation {
			countRent(a.rows[oi], e)
			countRent(&a.total, e)
		}
		return
	}
	ref := a.seen.ref(e.Tenant, e.RequestHash)
	first, repeat := a.seen.get(ref)
	if !repeat {
		a.seen.set(ref, oi)
	}
	a.addSeen(e, oi, first, repeat)
}

// addSeen is Add once the repeat rule's set has been consulted: oi is
// e's operation index (a.op), repeat whether (tenant, hash) was seen
// earlier in the day and first the operation index it was first seen in.
// Analyze keeps that set itself (together with its in-flight map) and
// calls addSeen directly.
func (a *Accumulator) addSeen(e *groundhog.LedgerEntry, oi, first int32, repeat bool) {
	newInOp := !repeat
	if repeat && first != oi {
		ok := opHashKey{oi, hashKey{e.Tenant, e.RequestHash}}
		if _, dup := a.seenOther[ok]; !dup {
			a.seenOther[ok] = struct{}{}
			newInOp = true
		}
	}
	if a.operation != "" && e.Operation != a.operation {
		return
	}
	r := a.rows[oi]
	count(r, e, repeat, newInOp)
	count(&a.total, e, repeat, !repeat)
}

func count(r *Row, e *groundhog.LedgerEntry, repeat, distinct bool) {
	r.Calls++
	if distinct {
		r.Distinct++
	}
	if repeat {
		r.Repeats++
		if e.FullCost.Known() {
			r.RepeatCost = r.RepeatCost.Add(e.FullCost)
			if !e.CacheOn && !avoided(e.Outcome) {
				r.ShadowSaved = r.ShadowSaved.Add(e.FullCost)
			}
		}
	}
	if e.InFlight {
		r.ConcurrentIdentical++
	}
	switch e.Outcome {
	case groundhog.OutcomeCacheHit:
		r.CacheHits++
	case groundhog.OutcomeCoalesced:
		r.Coalesced++
	case groundhog.OutcomeReplayed:
		r.Replayed++
	case groundhog.OutcomeSuspectedDuplicate:
		r.SuspectedDuplicates++
	case groundhog.OutcomeUpstream:
		r.UpstreamCalls++
		if e.Attempt > 1 {
			r.Retries++
			if e.Cost.Known() {
				r.RetryCost = r.RetryCost.Add(e.Cost)
			}
		}
	}
	if e.Cost.Known() {
		r.Spend = r.Spend.Add(e.Cost)
	}
	if e.Saved.Known() {
		r.Saved = r.Saved.Add(e.Saved)
	}
	if !e.Cost.Known() || !e.Saved.Known() || !e.FullCost.Known() {
		r.UnknownCostCalls++
	}
	r.PromptCache.add(e)
}

// countRent counts e, a row of outcome cache_rent: in Spend and CacheRent
// when its cost is known, else in UnknownRentDays (see Row).
func countRent(r *Row, e *groundhog.LedgerEntry) {
	if !e.Cost.Known() {
		r.UnknownRentDays++
		return
	}
	r.Spend = r.Spend.Add(e.Cost)
	r.CacheRent = r.CacheRent.Add(e.Cost)
}

// shown reports whether r is a row of the report: it has calls, or the
// rent of an explicit cache (an operation may have only that on a day).
func (r *Row) shown() bool {
	return r.Calls > 0 || r.CacheRent.Sign() != 0 || r.UnknownRentDays > 0
}

// avoided reports whether a call of outcome o did not reach the provider
// because an earlier identical call's result answered it: its avoided cost
// is its Saved, never also shadow savings.
func avoided(o groundhog.Outcome) bool {
	return o == groundhog.OutcomeCacheHit || o == groundhog.OutcomeCoalesced || o == groundhog.OutcomeReplayed
}

// finish fills the derived columns.
func (r Row) finish() Row {
	if r.Calls > 0 {
		r.RepeatShare = math.Round(float64(r.Repeats)/float64(r.Calls)*1e4) / 1e4
	}
	r.Projected30d = r.Saved.Plus(r.ShadowSaved).Times(30)
	r.PromptCache = r.PromptCache.finish()
	return r
}

// Report returns the report of the rows added so far, labelled day.
func (a *Accumulator) Report(day string) *Report {
	rep := &Report{Day: day, Operations: []Row{}}
	for _, r := range a.rows {
		if a.operation != "" && r.Operation != a.operation {
			continue
		}
		if !r.shown() {
			continue
		}
		rep.Operations = append(rep.Operations, r.finish())
	}
	sort.Slice(rep.Operations, func(i, j int) bool { return rep.Operations[i].Operation < rep.Operations[j].Operation })
	rep.Total = a.total.finish()
	if a.operation != "" && len(rep.Operations) == 1 {
		// Only one operation is counted, so its distinct hashes are the
		// total's (the total's own rule counts first sightings across
		// every operation, which a filter hides).
		rep.Total.Distinct = rep.Operations[0].Distinct
	}
	rep.Total.Operation = ""
	return rep
}

// DayBounds returns the start of the calendar day of t in loc and the start
// of the next day. Days are not always 24 hours long (DST), so the end is
// computed from the calendar, not by adding 24h.
func DayBounds(t time.Time, loc *time.Location) (start, end time.Time) {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
}

// ParseDay parses a report day: "YYYY-MM-DD", "today" or "yesterday" (the
// calendar day of now in loc, or the one before). It returns midnight of
// that day in loc (nil loc means UTC). A bad value is an error with code
// groundhog.EINVALID.
func ParseDay(s string, loc *time.Location, now time.Time) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "today", "":
		start, _ := DayBounds(now, loc)
		return start, nil
	case "yesterday":
		y, m, d := now.In(loc).Date()
		return time.Date(y, m, d-1, 0, 0, 0, 0, loc), nil
	}
	t, err := time.ParseInLocation("2006-01-02", strings.TrimSpace(s), loc)
	if err != nil {
		return time.Time{}, groundhog.Errorf(groundhog.EINVALID, "invalid day %q: want YYYY-MM-DD, today or yesterday", s)
	}
	return t, nil
}

// BuildReport computes the report of one day from store. It scans the day's
// rows (of p.Tenant, or all tenants) once, in (Time, ID) order, through an
// Accumulator. Memory grows with the day's distinct request hashes.
//
// The scan and the counting run on two goroutines joined by a short queue of
// row batches, so on two or more cores the report takes about as long as
// the store's scan alone.
//
// When store is an Aggregator (the PostgreSQL store: daily rollups kept by
// AppendLedger) and the day is a UTC day, the report is computed from the
// day's rollups instead, with the same definitions and the same result; a
// day in another time zone (--tz) is not a UTC day and is scanned.
func BuildReport(ctx context.Context, store groundhog.LedgerStore, p ReportParams) (*Report, error) {
	if agg, ok := store.(Aggregator); ok {
		if day, ok := utcDay(p); ok {
			rep, err := reportFromRollup(ctx, agg, day, p)
			if !errors.Is(err, ErrNoRollup) {
				return rep, err
			}
		}
	}
	start, end := DayBounds(p.Day, p.Location)
	acc := NewAccumulator(p.Operation)
	// The operation filter is applied by the Accumulator, not the store: a
	// call repeating a hash first seen in another operation is a repeat.
	f := groundhog.LedgerFilter{Tenant: p.Tenant, From: start, To: end}

	const batchRows = 1024
	full := make(chan []groundhog.LedgerEntry, 4)
	free := make(chan []groundhog.LedgerEntry, 6)
	for range cap(free) {
		free <- make([]groundhog.LedgerEntry, 0, batchRows)
	}
	var scanErr error
	go func() {
		defer close(full)
		batch := <-free
		scanErr = store.ScanLedger(ctx, f, func(e *groundhog.LedgerEntry) error {
			// Copied: the store may reuse *e after fn returns.
			batch = append(batch, *e)
			if len(batch) == batchRows {
				full <- batch
				batch = <-free
			}
			return nil
		})
		if len(batch) > 0 {
			full <- batch
		}
	}()
	// Drain to the end even after an error, so the scanner never blocks.
	for batch := range full {
		for i := range batch {
			acc.Add(&batch[i])
		}
		free <- batch[:0]
	}
	if scanErr != nil {
		return nil, fmt.Errorf("ledger: report %s: %w", start.Format("2006-01-02"), scanErr)
	}
	rep := acc.Report(start.Format("2006-01-02"))
	if err := rep.Err(); err != nil {
		return nil, err
	}
	return rep, nil
}

func reportFromRollup(ctx context.Context, agg Aggregator, day time.Time, p ReportParams) (*Report, error) {
	label := day.Format("2006-01-02")
	ru, err := agg.LedgerRollup(ctx, day, p.Tenant, nil)
	if err != nil {
		if errors.Is(err, ErrNoRollup) {
			return nil, err
		}
		return nil, fmt.Errorf("ledger: report %s: %w", label, err)
	}
	return ru.Report(label, p.Operation)
}
