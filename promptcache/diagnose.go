package promptcache

import (
	"sort"
	"time"
)

// Cause is why prefix reuse broke. The names are part of the wire contract
// (docs/reference/wire.md, header Groundhog-Prompt-Cache-Break).
type Cause string

const (
	CauseToolsReordered      Cause = "tools_reordered"
	CauseToolsChanged        Cause = "tools_changed"
	CauseInstructionsChanged Cause = "instructions_changed"
	CauseVolatileInPrefix    Cause = "volatile_in_prefix"
	CauseModelChanged        Cause = "model_changed"
	CauseHistoryEdited       Cause = "history_edited"
	CauseParametersChanged   Cause = "parameters_changed"
	CauseCacheKeyChanged     Cause = "cache_key_changed"
	CauseTTLGap              Cause = "ttl_gap"
	CauseBelowMinimum        Cause = "below_minimum"
	// CauseNoBreakpoint: the shared prefix is long enough to cache, but the
	// earlier prompt carried no breakpoint, so the provider stored nothing
	// this request could read.
	CauseNoBreakpoint     Cause = "no_breakpoint"
	CauseBreakpointMoved  Cause = "breakpoint_moved"
	CauseLookbackExceeded Cause = "lookback_exceeded"
	CauseProviderMiss     Cause = "provider_miss"
)

// Causes lists every cause, in the order of the wire contract.
var Causes = []Cause{CauseToolsReordered, CauseToolsChanged, CauseInstructionsChanged, CauseVolatileInPrefix,
	CauseModelChanged, CauseHistoryEdited, CauseParametersChanged, CauseCacheKeyChanged, CauseTTLGap,
	CauseBelowMinimum, CauseNoBreakpoint, CauseBreakpointMoved, CauseLookbackExceeded, CauseProviderMiss}

// segRec is what is kept of one segment of an earlier prompt: 32 bytes, no
// text.
type segRec struct {
	Hash   uint64
	Chain  uint64
	Masked uint32
	Vol    uint32
	End    uint32 // token offset of the segment's end
	Kind   Kind
	Stored uint8 // 1: the provider wrote a prefix entry ending here (a breakpoint)
	_      [2]byte
}

// promptRec is what is kept of one earlier prompt.
type promptRec struct {
	segs     []segRec
	tokens   uint32
	lastUsed int64 // unix nanoseconds of its last write or read
	ttl      time.Duration
	implicit bool // the provider also saved every Step-token prefix (OpenAI automatic caching)
	// exactSeg is the segment of the last breakpoint the provider stored
	// for this prompt, exact its length as the provider counted it (cache
	// read + write, Anthropic); -1 and 0 when unknown.
	exactSeg int32
	exact    uint32
	model    string
	key      string
}

const segRecSize = 32

// record turns a parsed prefix into the record of what the provider stored
// for it: breakpoints (client markers and the Anthropic top-level automatic
// one), and for OpenAI without explicit-only mode every Step-token prefix.
func record(p *Prefix, r Rules, now time.Time) *promptRec {
	rec := &promptRec{segs: make([]segRec, len(p.Segments)), tokens: uint32(p.Tokens), lastUsed: now.UnixNano(),
		exactSeg: -1, ttl: p.TTL, implicit: r.Step > 0 && !p.Explicit, model: p.Model, key: p.CacheKey}
	if rec.ttl == 0 {
		rec.ttl = r.TTL
	}
	written := 0
	for i := len(p.Segments) - 1; i >= 0; i-- {
		s := &p.Segments[i]
		rec.segs[i] = segRec{Hash: s.Hash, Chain: s.Chain, Masked: uint32(s.Masked), Vol: s.Vol, End: uint32(s.End), Kind: s.Kind}
		if s.Marker && int(s.End) >= r.MinTokens && written < r.MaxBreakpoints {
			rec.segs[i].Stored = 1
			written++
		}
	}
	if p.AutoMarker {
		for i := len(p.Segments) - 1; i >= 0; i-- {
			if p.Segments[i].markable {
				if p.Segments[i].End >= r.MinTokens {
					rec.segs[i].Stored = 1
				}
				break
			}
		}
	}
	return rec
}

// lcp returns how many leading segments a and b share (by chain value,
// which diverges for good at the first difference: binary search).
func lcp(a []Segment, b []segRec) int {
	n := min(len(a), len(b))
	return sort.Search(n, func(i int) bool { return a[i].Chain != b[i].Chain })
}

// Diagnosis is what groundhog expects of the provider's prompt cache for one
// request, before the call.
type Diagnosis struct {
	// Expected is the reusable prefix in tokens: what the provider could
	// read had the request kept the closest earlier prompt's cached prefix
	// (0 when no earlier prompt is known or none was cached).
	Expected int
	// Predicted is what the provider's rules let it read given the request
	// as it is (≤ Expected).
	Predicted int
	// Cause is the reason Predicted < Expected, or below_minimum /
	// no_breakpoint when nothing reusable was stored; empty when
	// groundhog sees none (a shortfall then is a provider_miss).
	Cause Cause
	// Pattern names the volatile pattern for volatile_in_prefix.
	Pattern string
	// Diverged is the index of the first segment of the request that differs
	// from the closest earlier prompt (len(Segments) when none does), and
	// DivergedAt its token offset.
	Diverged, DivergedAt int
	// Common is how many tokens the request shares with that prompt.
	Common int
	// ExpectedExact is Expected as the provider counted it, when the
	// reusable prefix ends at the earlier prompt's last breakpoint and the
	// provider reported that prefix's length (0 otherwise: Expected is
	// groundhog's estimate, calibrated after the call). After uses it when
	// it is below the calibrated estimate.
	ExpectedExact int
}

// compare diagnoses p against the earlier prompt e at now. cross names the
// cause when e belongs to another chain (model_changed, cache_key_changed).
func compare(p *Prefix, r Rules, e *promptRec, now time.Time, cross Cause, belowFloor float64) Diagnosis {
	d := Diagnosis{Diverged: len(p.Segments)}
	if e == nil || p.NotApplicable {
		return d
	}
	n := lcp(p.Segments, e.segs)
	d.Diverged = n
	if n > 0 {
		d.Common = int(e.segs[n-1].End)
	}
	if n < len(p.Segments) {
		d.DivergedAt = p.Segments[n].Start
	} else {
		d.DivergedAt = p.Tokens
	}
	// A different conversation is not an edit: two prompts that share
	// fewer than two messages only share what they share.
	newConversation := cross != "" || (n < len(p.Segments) && n < len(e.segs) && sharedMessages(p, n) < 2 &&
		p.Segments[n].Kind == KindMessage && e.segs[n].Kind != KindParams)

	// Expected: the longest point e stored that the request could reach.
	limit := p.Tokens
	if newConversation {
		limit = d.Common
	}
	best := storedBelow(e, r, limit, n, len(p.Segments), nil)
	d.Expected = best
	if e.exact > 0 && e.exactSeg >= 0 && best > 0 && uint32(best) == e.segs[e.exactSeg].End {
		d.ExpectedExact = int(e.exact)
	}
	if cross != "" {
		if d.Common >= r.MinTokens && best > 0 {
			d.Cause = cross
		}
		return d
	}
	if best < r.MinTokens {
		raw := min(limit, d.Common)
		switch {
		case raw >= r.MinTokens:
			// Long enough to cache: the earlier prompt simply left no
			// marker to reuse.
			d.Expected, d.Cause = raw, CauseNoBreakpoint
		case raw > 0 && float64(raw) >= belowFloor*float64(r.MinTokens):
			d.Expected, d.Cause = raw, CauseBelowMinimum
		default:
			d.Expected = 0
		}
		return d
	}
	if n < len(p.Segments) && n < len(e.segs) && segStart(e, n) < uint32(best) {
		// The divergence lies inside the reusable prefix.
		d.Cause, d.Pattern = classifyDivergence(p, e, n)
		d.Predicted = storedBelow(e, r, d.Common, n, len(p.Segments), p)
		return d
	}
	if now.UnixNano()-e.lastUsed > int64(e.ttl) {
		d.Cause = CauseTTLGap
		return d
	}
	d.Predicted = storedBelow(e, r, limit, n, len(p.Segments), p)
	if d.Predicted < d.Expected {
		d.Cause = CauseBreakpointMoved
		if r.Lookback > 0 && hasBreakpointAfter(p, d.Expected) {
			d.Cause = CauseLookbackExceeded
		}
	}
	return d
}

func segStart(e *promptRec, i int) uint32 {
	if i == 0 {
		return 0
	}
	return e.segs[i-1].End
}

// sharedMessages counts the distinct messages among the first n segments of p.
func sharedMessages(p *Prefix, n int) int {
	c, last := 0, -1
	for _, s := range p.Segments[:n] {
		if s.Message >= 0 && s.Message != last {
			c, last = c+1, s.Message
		}
	}
	return c
}

// storedBelow returns the longest prefix (tokens, ≥ the minimum) that e
// stored and that ends at most at limit tokens and within the first common
// segments. With p given, the point must also be one p looks up: for
// implicit caching any; for breakpoints, a breakpoint of p at that segment
// (explicit) or within the lookback after it (Anthropic).
func storedBelow(e *promptRec, r Rules, limit, common, plen int, p *Prefix) int {
	best := 0
	if e.implicit && r.Step > 0 {
		t := min(limit, int(e.tokens))
		if p != nil && common < len(e.segs) {
			ct := 0
			if common > 0 {
				ct = int(e.segs[common-1].End)
			}
			t = min(t, ct)
		}
		best = t / r.Step * r.Step
	}
	for i, s := range e.segs {
		if int(s.End) > limit {
			break
		}
		if s.Stored == 0 || int(s.End) <= best {
			continue
		}
		if p != nil && (i >= common || !looksUp(p, r, i)) {
			continue
		}
		best = int(s.End)
	}
	if best < r.MinTokens {
		return 0
	}
	return best
}

// looksUp reports whether the provider, serving p, checks for a cached
// prefix ending at segment i.
func looksUp(p *Prefix, r Rules, i int) bool {
	last := -1
	if p.AutoMarker {
		for k := len(p.Segments) - 1; k >= 0; k-- {
			if p.Segments[k].markable {
				last = k
				break
			}
		}
	}
	for k := i; k < len(p.Segments); k++ {
		if k-i > r.Lookback {
			return false
		}
		if p.Segments[k].Marker || k == last {
			return true
		}
	}
	return false
}

func hasBreakpointAfter(p *Prefix, tokens int) bool {
	for _, s := range p.Segments {
		if s.Marker && s.End > tokens {
			return true
		}
	}
	return p.AutoMarker
}

// classifyDivergence names the cause of a divergence at segment n.
func classifyDivergence(p *Prefix, e *promptRec, n int) (Cause, string) {
	a, b := &p.Segments[n], &e.segs[n]
	if a.Kind == b.Kind && uint32(a.Masked) == b.Masked && a.Hash != b.Hash && (a.Vol != 0 || b.Vol != 0) {
		for v := Volatile(0); v < numVolatile; v++ {
			if volField(a.Vol, v) != volField(b.Vol, v) {
				return CauseVolatileInPrefix, v.String()
			}
		}
		// The 5-bit digests collided: name the first pattern present.
		for v := Volatile(0); v < numVolatile; v++ {
			if volField(a.Vol, v) != 0 {
				return CauseVolatileInPrefix, v.String()
			}
		}
		return CauseVolatileInPrefix, "volatile value"
	}
	switch {
	case a.Kind == KindTool || b.Kind == KindTool:
		if sameToolSet(p, e) {
			return CauseToolsReordered, ""
		}
		return CauseToolsChanged, ""
	case a.Kind == KindExtraTools || b.Kind == KindExtraTools:
		return CauseToolsChanged, ""
	case a.Kind == KindInstructions || b.Kind == KindInstructions:
		return CauseInstructionsChanged, ""
	case a.Kind == KindParams || b.Kind == KindParams, a.Kind == KindImage || b.Kind == KindImage, images(p) != recImages(e):
		return CauseParametersChanged, ""
	}
	return CauseHistoryEdited, ""
}

// sameToolSet reports whether p and e hold the same tools (as a multiset).
func sameToolSet(p *Prefix, e *promptRec) bool {
	var x, y []uint64
	for _, s := range p.Segments {
		if s.Kind == KindTool {
			x = append(x, s.Hash)
		}
	}
	for _, s := range e.segs {
		if s.Kind == KindTool {
			y = append(y, s.Hash)
		}
	}
	if len(x) != len(y) {
		return false
	}
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// rulesFor returns the rules of p's shape and model.
func rulesFor(p *Prefix) Rules { return ModelRules(p.Shape, p.Model) }
func (c Cause) String() string { return string(c) }

func images(p *Prefix) (n int) {
	for _, s := range p.Segments {
		if s.Kind == KindImage {
			n++
		}
	}
	return n
}

func recImages(e *promptRec) (n int) {
	for _, s := range e.segs {
		if s.Kind == KindImage {
			n++
		}
	}
	return n
}
