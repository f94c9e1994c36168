package gateway

import (
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"unicode"

	"github.com/groundhog-ai/groundhog"
)

// models proxies GET /v1/models[/{id}] to the OpenAI upstream. Listings are
// not fingerprinted, cached or recorded: they are not model work.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if _, err := s.authenticate(r); err != nil {
		s.writeError(w, r, "", err)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		s.writeError(w, r, "", groundhog.Errorf(codeMethod, "method %s not allowed on %s (use GET)", r.Method, r.URL.Path))
		return
	}
	up := s.upstreamFor(groundhog.ShapeChat)
	url := strings.TrimSuffix(up.BaseURL, "/") + "/models"
	if r.URL.Path != "/v1/models" {
		// The id is one path segment: anything that could climb out of
		// /models ("..", "/", an encoded query) would reach other provider
		// endpoints with the gateway's provider key.
		id := r.PathValue("id")
		if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/?#%\\") || strings.ContainsFunc(id, unicode.IsControl) {
			s.writeError(w, r, "", groundhog.Errorf(groundhog.EINVALID, "invalid model id"))
			return
		}
		url += "/" + neturl.PathEscape(id)
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, url, nil)
	if err != nil {
		s.writeError(w, r, "", groundhog.WrapError(groundhog.EINTERNAL, "", err))
		return
	}
	if up.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+up.APIKey)
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.writeError(w, r, "", upstreamError(r.Context(), err))
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", firstNonEmpty(res.Header.Get("Content-Type"), "application/json"))
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(res.Body, 16<<20))
}
