package metrics

import "github.com/prometheus/client_golang/prometheus"

// GaugeFunc registers a gauge read from f at every scrape (for states owned
// by other packages, such as a backend's degraded flag). Registering the
// same name twice panics: it is a wiring error.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// CounterFunc registers a counter read from f at every scrape, for a count
// owned by another package. Registering the same name twice panics.
func (m *Metrics) CounterFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
}

// CounterFuncs registers a counter with one label, its values read from f
// at every scrape (label value → count since start), for counts owned by
// other packages. Registering the same name twice panics.
func (m *Metrics) CounterFuncs(name, help, label string, f func() map[string]float64) {
	m.reg.MustRegister(&counterFuncs{desc: prometheus.NewDesc(name, help, []string{label}, nil), f: f})
}

type counterFuncs struct {
	desc *prometheus.Desc
	f    func() map[string]float64
}

func (c *counterFuncs) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *counterFuncs) Collect(ch chan<- prometheus.Metric) {
	for v, n := range c.f() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, n, v)
	}
}
