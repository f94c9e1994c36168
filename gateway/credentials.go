package gateway

import (
	"net/http"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// CredentialTenant is the tenant of a client scoped by the provider
// credential it sends (Options.TenantPerCredential): "key-" and the first
// 128 bits of the SHA-256 of its Authorization and x-api-key values. The
// credential itself never appears in a tenant, a cache key or the ledger.
// A client sending neither header is groundhog.LocalTenant.
func CredentialTenant(h http.Header) string {
	a, k := strings.Join(h.Values("Authorization"), "\n"), strings.Join(h.Values("X-Api-Key"), "\n")
	if a == "" && k == "" {
		return groundhog.LocalTenant
	}
	return "key-" + groundhog.HashAPIKey(a + "\x00" + k)[:32]
}

// authorize sets the provider credentials on an upstream request: the
// gateway's provider key when it has one (Authorization: Bearer for OpenAI,
// x-api-key for Anthropic, x-goog-api-key for Gemini); else, when the upstream forwards the client's
// own key (the embedded transport, where the program calling is the key's
// owner), the client's Authorization or x-api-key as it sent them. The
// client's gateway key is never forwarded otherwise.
func (u *Upstream) authorize(req *http.Request, client http.Header, shape groundhog.Shape) {
	switch {
	case u.APIKey != "" && shape == groundhog.ShapeMessages:
		req.Header.Set("X-Api-Key", u.APIKey)
	case u.APIKey != "" && shape == groundhog.ShapeGemini:
		req.Header.Set("X-Goog-Api-Key", u.APIKey)
	case u.APIKey != "":
		req.Header.Set("Authorization", "Bearer "+u.APIKey)
	case u.ForwardClientKey:
		for _, k := range []string{"Authorization", "X-Api-Key"} {
			if v := client.Values(k); len(v) > 0 {
				req.Header[k] = v
			}
		}
	}
}
