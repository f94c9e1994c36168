package main

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/dashboard"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/metrics"
)

// extraRoutes registers the management endpoints beside the provider
// routes: the report and the dashboard (tenant-scoped by the caller's key),
// the tool operations API, and /metrics.
func extraRoutes(db groundhog.LedgerStore, idem *idempotency.Service, m *metrics.Metrics, log *slog.Logger) func(*http.ServeMux, func(*http.Request) (string, error)) {
	return func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
		d := dashboard.New(dashboard.Options{Store: db, Auth: auth, Logger: log})
		mux.Handle(dashboard.ReportPath, d.ReportHandler())
		mux.Handle("/groundhog/{$}", d.Handler())
		ops := idem.Handler(auth)
		mux.Handle(idempotency.OperationsPath, ops)
		mux.Handle(idempotency.OperationsPath+"/", ops)
		mh := m.Handler()
		mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Metrics carry every tenant's labels: only the machine itself
			// (a local Prometheus or agent) may read them.
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				http.Error(w, `{"error":{"type":"permission_error","message":"/metrics is served to loopback clients only"}}`, http.StatusForbidden)
				return
			}
			mh.ServeHTTP(w, r)
		}))
	}
}

// observed records a ledger row in the metrics, then in the ledger.
type observed struct {
	next interface {
		Record(groundhog.LedgerEntry) error
	}
	m *metrics.Metrics
}

func (o observed) Record(e groundhog.LedgerEntry) error {
	o.m.Observe(&e)
	if o.next == nil {
		return nil
	}
	return o.next.Record(e)
}
