package main

import (
	"net/http"

	"github.com/groundhog-ai/groundhog/mcp"
)

// withMCPRoutes mounts the MCP servers of the configuration at /mcp/NAME
// beside the routes next registers; g nil mounts nothing.
func withMCPRoutes(next func(*http.ServeMux, func(*http.Request) (string, error)), g *mcp.Gateway) func(*http.ServeMux, func(*http.Request) (string, error)) {
	return func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
		next(mux, auth)
		if g != nil {
			mux.Handle(mcp.PathPrefix, g.Handler(auth))
		}
	}
}
