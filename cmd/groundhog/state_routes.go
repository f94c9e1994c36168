package main

import (
	"log/slog"
	"net/http"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/evidence"
	"github.com/groundhog-ai/groundhog/state"
)

// withStateRoutes adds the agent working-state and evidence endpoints
// (tenant-scoped by the caller's key) to the routes extra registers.
func withStateRoutes(extra func(*http.ServeMux, func(*http.Request) (string, error)), db database, cfg *config.Config, log *slog.Logger) func(*http.ServeMux, func(*http.Request) (string, error)) {
	return func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
		extra(mux, auth)
		state.New(db, state.Limits{MaxBytes: cfg.State.MaxBytes}, log).Register(mux, auth)
		evidence.New(db, evidence.Limits{QuotaBytes: cfg.Evidence.QuotaBytes, MaxUploadBytes: cfg.Evidence.MaxUploadBytes}, log).Register(mux, auth)
	}
}
