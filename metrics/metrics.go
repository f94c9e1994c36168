// Package metrics exposes groundhog's Prometheus metrics: calls by outcome,
// tokens by kind, cost and savings, latency, in-flight calls and coalesced
// followers. Every series is derived from the ledger row of a call, so the
// metrics and the report cannot disagree about what happened.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/groundhog-ai/groundhog"
)

// Metrics holds the collectors. Create with New.
type Metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	tokens    *prometheus.CounterVec
	cost      *prometheus.CounterVec
	saved     *prometheus.CounterVec
	unknown   *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	overhead  *prometheus.HistogramVec
	followers *prometheus.CounterVec
	repeats   *prometheus.CounterVec
	tools     *prometheus.CounterVec

	// The operation label is client-chosen (Groundhog-Operation), so its
	// values are bounded: declared operations, then the first
	// MaxObservedOperations others seen, then OtherOperation.
	opMu     sync.RWMutex
	declared map[string]bool
	observed map[string]bool

	// Children of the vectors by label values (children.go).
	callsC, tokensC, costC, savedC, unknownC, followersC, repeatsC, toolsC children[prometheus.Counter]
	latencyC, overheadC                                                    children[prometheus.Observer]
	seriesC                                                                seriesCache // bundles of the above per row labels (series.go)
}

// MaxObservedOperations is how many operation names not declared in the
// configuration (operations or rules) get their own label value; calls of
// any further name are counted under OtherOperation. It bounds the series a
// client can create with Groundhog-Operation (the ledger and the report keep
// every name).
const MaxObservedOperations = 100

// OtherOperation is the operation label of calls whose operation is
// neither declared nor among the first MaxObservedOperations observed.
const OtherOperation = "other"

// New registers groundhog's collectors (and the Go/process collectors) on a
// fresh registry. inFlight, if not nil, is read for the in-flight gauge.
func New(inFlight func() float64) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_calls_total", Help: "Provider calls by tenant, operation and outcome.",
		}, []string{"tenant", "operation", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_tokens_total", Help: "Tokens consumed upstream by kind (input, cached_input, cache_write, output).",
		}, []string{"tenant", "operation", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_cost_usd_total", Help: "Provider spend in USD (known prices only; the storage rent of explicit caches included).",
		}, []string{"tenant", "operation"}),
		saved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_saved_usd_total", Help: "Spend avoided by cache hits, coalescing and replays, in USD.",
		}, []string{"tenant", "operation"}),
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_unknown_cost_calls_total", Help: "Upstream calls whose model has no price (cost unknown, not zero).",
		}, []string{"tenant", "operation"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "groundhog_request_duration_seconds", Help: "Time from arrival to the end of the response, by outcome.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"operation", "outcome"}),
		overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "groundhog_overhead_seconds", Help: "Time spent in groundhog per call: the call's duration minus its wait for the upstream, by route and outcome.",
			Buckets: OverheadBuckets,
		}, []string{"route", "outcome"}),
		followers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_coalesced_followers_total", Help: "Calls that joined an identical call in flight.",
		}, []string{"tenant", "operation"}),
		repeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_concurrent_identical_total", Help: "Calls that arrived while an identical call was in flight.",
		}, []string{"tenant", "operation"}),
		tools: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_tool_calls_total", Help: "MCP tool calls by server, tool and outcome (executed = upstream + suspected_duplicate).",
		}, []string{"server", "tool", "outcome"}),
	}
	m.declared, m.observed = map[string]bool{"": true}, map[string]bool{}
	reg.MustRegister(m.calls, m.tokens, m.cost, m.saved, m.unknown, m.latency, m.overhead, m.followers, m.repeats, m.tools,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if inFlight != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "groundhog_in_flight_calls", Help: "Provider calls being served now.",
		}, inFlight))
	}
	return m
}

// DeclareOperations gives names their own operation label value whatever
// the cap on observed names: the operations and rule targets of the
// configuration. Call it before serving.
func (m *Metrics) DeclareOperations(names ...string) {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	for _, n := range names {
		m.declared[n] = true
	}
}

// opLabel maps an operation name to its label value: itself when declared
// or among the first MaxObservedOperations others, else OtherOperation.
func (m *Metrics) opLabel(op string) string {
	m.opMu.RLock()
	known := m.declared[op] || m.observed[op]
	full := len(m.observed) >= MaxObservedOperations
	m.opMu.RUnlock()
	if known {
		return op
	}
	if full {
		return OtherOperation
	}
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if len(m.observed) < MaxObservedOperations {
		m.observed[op] = true
	}
	if m.observed[op] {
		return op
	}
	return OtherOperation
}

// ObserveRent adds the known cost of a storage-rent row (outcome
// cache_rent: an explicit cache's rent of a day) to
// groundhog_cost_usd_total, so the spend metric is the report's; the row is
// no call, and counts nowhere else. Call it once per row the ledger keeps:
// the gateway does when its sweep advances the cache's record.
func (m *Metrics) ObserveRent(e *groundhog.LedgerEntry) {
	if e.Cost > 0 {
		counter2(&m.costC, m.cost, labels{a: e.Tenant, b: m.opLabel(e.Operation)}).Add(usd(e.Cost))
	}
}

// Observe counts one call from its ledger row. Its operation label is
// bounded: see MaxObservedOperations. An MCP tool call (operation
// "mcp:SERVER/TOOL") is also counted in groundhog_tool_calls_total, whose
// server and tool labels follow the same bound: a tool call whose operation
// label is OtherOperation has server and tool OtherOperation.
func (m *Metrics) Observe(e *groundhog.LedgerEntry) {
	s := m.series(e)
	op := s.to.b
	s.calls.Inc()
	if s.tool != nil {
		s.tool.Inc()
	}
	if u := e.Usage; u != (groundhog.Usage{}) {
		for _, t := range [...]struct {
			kind string
			n    int64
		}{{"input", u.InputTokens}, {"cached_input", u.CachedInputTokens}, {"cache_write", u.CacheWriteTokens}, {"output", u.OutputTokens}} {
			if t.n > 0 {
				counter3(&m.tokensC, m.tokens, labels{e.Tenant, op, t.kind}).Add(float64(t.n))
			}
		}
	}
	if e.Cost > 0 {
		m.counter(s, lazyCost).Add(usd(e.Cost))
	} else if e.Cost == groundhog.CostUnknown && e.Outcome == groundhog.OutcomeUpstream {
		m.counter(s, lazyUnknown).Inc()
	}
	if e.Saved > 0 {
		m.counter(s, lazySaved).Add(usd(e.Saved))
	}
	if e.Outcome == groundhog.OutcomeCoalesced {
		m.counter(s, lazyFollowers).Inc()
	}
	if e.InFlight {
		m.counter(s, lazyRepeats).Inc()
	}
	s.latency.Observe(e.Latency.Seconds())
	if s.overhead != nil {
		s.overhead.Observe(Overhead(e).Seconds())
	}
}

// OverheadBuckets are the bounds of groundhog_overhead_seconds: from 10µs
// to 1s, finest where a gateway's own work lies.
var OverheadBuckets = []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// Overhead is the time groundhog itself spent on the call of e: its
// latency minus its wait for the upstream (never below 0).
func Overhead(e *groundhog.LedgerEntry) time.Duration {
	return max(e.Latency-e.UpstreamWait, 0)
}

// Route is the route label of e's overhead: its API shape (chat,
// messages, responses, embeddings, converse, gemini). It is "" (the
// overhead is not measured) for a call outside the pipeline (a passthrough
// route) and for a row without an answer (status 0: the attempt of a
// vanished worker, booked by the one that took over).
func Route(e *groundhog.LedgerEntry) string {
	if e.Shape.Valid() && e.Status != 0 {
		return string(e.Shape)
	}
	return ""
}

// usd converts to float dollars for Prometheus, which only has floats; the
// exact figures live in the ledger.
func usd(m groundhog.Money) float64 {
	if m > -1<<53 && m < 1<<53 {
		// float64(m) is exact and 1e12 is exact, so the quotient is the
		// double nearest to m/10^12: what parsing its decimal form gives,
		// without formatting it.
		return float64(m) / 1e12
	}
	f, _ := strconv.ParseFloat(m.Format(12), 64)
	return f
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
