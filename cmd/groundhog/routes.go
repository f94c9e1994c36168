package main

import (
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/dashboard"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/metrics"
)

// extraRoutes registers the management endpoints beside the provider
// routes: the report and the dashboard (tenant-scoped by the caller's key),
// the tool operations API, and /metrics.
//
// reports is the ledger the report and the dashboard read: the store seen
// through the ledger writer (Writer.Fresh), so they include every call
// already answered.
func extraRoutes(reports groundhog.LedgerStore, idem *idempotency.Service, m *metrics.Metrics, metricsToken string, log *slog.Logger) func(*http.ServeMux, func(*http.Request) (string, error)) {
	return func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
		d := dashboard.New(dashboard.Options{Store: reports, Auth: auth, Logger: log})
		mux.Handle(dashboard.ReportPath, d.ReportHandler())
		mux.Handle(dashboard.SessionReportPattern, d.SessionReportHandler())
		mux.Handle("/groundhog/{$}", d.Handler())
		ops := idem.Handler(auth)
		mux.Handle(idempotency.OperationsPath, ops)
		mux.Handle(idempotency.OperationsPath+"/", ops)
		mh := m.Handler()
		mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Metrics carry every tenant's labels: only the machine itself
			// (a local Prometheus or agent) may read them, or a scraper
			// that presents the metrics token.
			if !metricsAllowed(r, metricsToken) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"error":{"type":"permission_error","message":"/metrics is served to loopback clients, or with \"Authorization: Bearer <metrics token>\""}}` + "\n"))
				return
			}
			mh.ServeHTTP(w, r)
		}))
	}
}

// metricsAllowed reports whether r may read /metrics: a loopback client, or
// one presenting token (compared in constant time) when a token is set.
func metricsAllowed(r *http.Request, token string) bool {
	if token != "" {
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1 {
			return true
		}
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
