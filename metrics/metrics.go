// Package metrics exposes groundhog's Prometheus metrics: calls by outcome,
// tokens by kind, cost and savings, latency, in-flight calls and coalesced
// followers. Every series is derived from the ledger row of a call, so the
// metrics and the report cannot disagree about what happened.
package metrics

import (
	"net/http"
	"strconv"

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
	followers *prometheus.CounterVec
	repeats   *prometheus.CounterVec
}

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
			Name: "groundhog_cost_usd_total", Help: "Provider spend in USD (known prices only).",
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
		followers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_coalesced_followers_total", Help: "Calls that joined an identical call in flight.",
		}, []string{"tenant", "operation"}),
		repeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "groundhog_concurrent_identical_total", Help: "Calls that arrived while an identical call was in flight.",
		}, []string{"tenant", "operation"}),
	}
	reg.MustRegister(m.calls, m.tokens, m.cost, m.saved, m.unknown, m.latency, m.followers, m.repeats,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if inFlight != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "groundhog_in_flight_calls", Help: "Provider calls being served now.",
		}, inFlight))
	}
	return m
}

// Observe counts one call from its ledger row.
func (m *Metrics) Observe(e *groundhog.LedgerEntry) {
	m.calls.WithLabelValues(e.Tenant, e.Operation, string(e.Outcome)).Inc()
	if u := e.Usage; u != (groundhog.Usage{}) {
		for kind, n := range map[string]int64{"input": u.InputTokens, "cached_input": u.CachedInputTokens, "cache_write": u.CacheWriteTokens, "output": u.OutputTokens} {
			if n > 0 {
				m.tokens.WithLabelValues(e.Tenant, e.Operation, kind).Add(float64(n))
			}
		}
	}
	if e.Cost > 0 {
		m.cost.WithLabelValues(e.Tenant, e.Operation).Add(usd(e.Cost))
	} else if e.Cost == groundhog.CostUnknown && e.Outcome == groundhog.OutcomeUpstream {
		m.unknown.WithLabelValues(e.Tenant, e.Operation).Inc()
	}
	if e.Saved > 0 {
		m.saved.WithLabelValues(e.Tenant, e.Operation).Add(usd(e.Saved))
	}
	if e.Outcome == groundhog.OutcomeCoalesced {
		m.followers.WithLabelValues(e.Tenant, e.Operation).Inc()
	}
	if e.InFlight {
		m.repeats.WithLabelValues(e.Tenant, e.Operation).Inc()
	}
	m.latency.WithLabelValues(e.Operation, string(e.Outcome)).Observe(e.Latency.Seconds())
}

// usd converts to float dollars for Prometheus, which only has floats; the
// exact figures live in the ledger.
func usd(m groundhog.Money) float64 {
	f, _ := strconv.ParseFloat(m.Format(12), 64)
	return f
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
