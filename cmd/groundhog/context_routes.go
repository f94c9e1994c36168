package main

import (
	"log/slog"
	"net/http"

	"github.com/groundhog-ai/groundhog/compaction"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/contextapi"
)

// withContextRoutes adds the session context-assembly and compaction
// endpoints to the routes extra registers. self is the gateway itself: a
// compaction's summarizing call goes through it in process (authenticated
// with the caller's key, ledgered, cached, priced).
func withContextRoutes(extra func(*http.ServeMux, func(*http.Request) (string, error)), db database, cfg *config.Config, log *slog.Logger, self http.Handler) func(*http.ServeMux, func(*http.Request) (string, error)) {
	return func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
		extra(mux, auth)
		comp := &compaction.Compactor{Gateway: self, States: db, Evidence: db, Config: cfg.Compaction, Prices: cfg.PriceTable, MaxStateBytes: cfg.State.MaxBytes}
		contextapi.Mount(mux, auth, contextapi.Options{States: db, Evidence: db, Compactor: comp, Logger: log})
	}
}
