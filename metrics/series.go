package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// callSeries holds the children one row of (tenant, operation, outcome)
// touches, resolved once: Observe then does one lock-free look-up per row
// instead of the operation-label check and a read-locked child look-up per
// series. calls and latency count every row and are resolved with the
// bundle; the others are resolved on first use only, so a series appears in
// /metrics exactly when it would without the bundle (a tenant that never
// spent has no groundhog_cost_usd_total).
type callSeries struct {
	calls   prometheus.Counter
	latency prometheus.Observer
	// overhead is nil for rows outside the pipeline (no route).
	overhead prometheus.Observer
	tool     prometheus.Counter // groundhog_tool_calls_total; nil unless an MCP tool call
	to       labels             // tenant, operation label
	lazy     [nLazy]atomic.Pointer[prometheus.Counter]
}

const (
	lazyCost = iota
	lazySaved
	lazyUnknown
	lazyFollowers
	lazyRepeats
	nLazy
)

type seriesKey struct {
	tenant, op string // op as the row has it, before opLabel
	outcome    groundhog.Outcome
	shape      groundhog.Shape
}

// seriesCache maps seriesKey to *callSeries, bounded like the children
// caches: past maxCachedChildren bundles, rows resolve a bundle each time
// (as correct, only slower). The mapping of a key never changes once made:
// opLabel gives an operation the same label value for the life of the
// Metrics (DeclareOperations is called before serving).
type seriesCache struct {
	m sync.Map
	n atomic.Int64
}

// series returns the bundle of e's labels.
func (m *Metrics) series(e *groundhog.LedgerEntry) *callSeries {
	k := seriesKey{e.Tenant, e.Operation, e.Outcome, e.Shape}
	if v, ok := m.seriesC.m.Load(k); ok {
		return v.(*callSeries)
	}
	op := m.opLabel(e.Operation)
	s := &callSeries{
		calls:   counter3(&m.callsC, m.calls, labels{e.Tenant, op, string(e.Outcome)}),
		latency: observer2(&m.latencyC, m.latency, labels{a: op, b: string(e.Outcome)}),
		to:      labels{a: e.Tenant, b: op},
	}
	if r := Route(e); r != "" {
		s.overhead = observer2(&m.overheadC, m.overhead, labels{a: r, b: string(e.Outcome)})
	}
	if _, _, ok := ledger.SplitToolOperation(e.Operation); ok {
		server, tool := OtherOperation, OtherOperation
		if op != OtherOperation {
			server, tool, _ = ledger.SplitToolOperation(op)
		}
		s.tool = counter3(&m.toolsC, m.tools, labels{server, tool, string(e.Outcome)})
	}
	if m.seriesC.n.Load() < maxCachedChildren {
		if v, loaded := m.seriesC.m.LoadOrStore(k, s); loaded {
			return v.(*callSeries)
		}
		m.seriesC.n.Add(1)
	}
	return s
}

// counter returns the bundle's lazily resolved two-label counter i.
func (m *Metrics) counter(s *callSeries, i int) prometheus.Counter {
	if c := s.lazy[i].Load(); c != nil {
		return *c
	}
	var c prometheus.Counter
	switch i {
	case lazyCost:
		c = counter2(&m.costC, m.cost, s.to)
	case lazySaved:
		c = counter2(&m.savedC, m.saved, s.to)
	case lazyUnknown:
		c = counter2(&m.unknownC, m.unknown, s.to)
	case lazyFollowers:
		c = counter2(&m.followersC, m.followers, s.to)
	default:
		c = counter2(&m.repeatsC, m.repeats, s.to)
	}
	s.lazy[i].Store(&c) // a racing resolver stores the same child (children.get)
	return c
}
