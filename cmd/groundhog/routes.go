package main

import (
	"log/slog"
	"net/http"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// extraRoutes registers the management endpoints beside the provider routes.
func extraRoutes(cfg *config.Config, db *sqlite.DB, log *slog.Logger) func(*http.ServeMux, func(*http.Request) (string, error)) {
	return func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {}
}
