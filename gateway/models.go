package gateway

import (
	"context"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
)

// models proxies GET /v1/models[/{id}] and DELETE /v1/models/{ft:…} (a
// fine-tuned model) to the OpenAI upstream. Listings are
// not fingerprinted, cached or recorded: they are not model work.
//
// In a shared provider account (owned.go) the account's fine-tuned models
// ("ft:…") are each the tenant's whose job made them: another tenant's is
// the provider's 404 on GET /v1/models/{id}, and the list leaves it out.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, "", err)
		return
	}
	// A fine-tuned model can be deleted (DELETE /v1/models/ft:…).
	deleteTuned := r.Method == http.MethodDelete && strings.HasPrefix(r.PathValue("id"), "ft:")
	if r.Method != http.MethodGet && !deleteTuned {
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
	scoped := sharedAccount(&s.opts.OpenAI) && !s.singleTenant(r.Context())
	if scoped && r.URL.Path != "/v1/models" && strings.HasPrefix(r.PathValue("id"), "ft:") &&
		!s.ownsOrNotFound(w, r, tenant, kindOpenAIFTModel, r.PathValue("id")) {
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, url, nil)
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
	if deleteTuned && scoped && res.StatusCode/100 == 2 {
		if err := s.opts.Resources.DeleteResource(context.WithoutCancel(r.Context()), tenant, kindOpenAIFTModel.kind, r.PathValue("id")); err != nil {
			s.log.Error("forgetting a deleted resource failed", "tenant", tenant, "kind", kindOpenAIFTModel.kind, "id", r.PathValue("id"), "err", err)
		}
	}
	body := io.LimitReader(res.Body, 16<<20)
	if scoped && r.URL.Path == "/v1/models" && res.StatusCode == http.StatusOK {
		b, err := io.ReadAll(body)
		if err == nil {
			b, err = s.ownModels(r, tenant, b)
		}
		if err != nil {
			s.writeError(w, r, "", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", firstNonEmpty(res.Header.Get("Content-Type"), "application/json"))
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, body)
}

// ownModels returns the provider's model list without the fine-tuned
// models tenant does not own; the other members and every base model stay
// as the provider wrote them.
func (s *Server) ownModels(r *http.Request, tenant string, body []byte) ([]byte, error) {
	page, ok, err := wire.ReadListPage(body)
	if err != nil || !ok {
		return nil, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's model list is not a list")
	}
	var tuned []string
	for _, id := range page.IDs {
		if strings.HasPrefix(id, "ft:") {
			tuned = append(tuned, id)
		}
	}
	if len(tuned) == 0 {
		return body, nil
	}
	own, err := s.owned(r.Context(), tenant, kindOpenAIFTModel, tuned)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err)
	}
	return wire.FilterListPage(body, func(id string) bool { return !strings.HasPrefix(id, "ft:") || slices.Contains(own, id) })
}
