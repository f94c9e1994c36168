package metrics

import "github.com/prometheus/client_golang/prometheus"

// GaugeFunc registers a gauge read from f at every scrape (for states owned
// by other packages, such as a backend's degraded flag). Registering the
// same name twice panics: it is a wiring error.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}
