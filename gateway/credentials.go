package gateway

import "net/http"

// authorize sets the provider credentials on an upstream request: the
// gateway's provider key when it has one (Authorization: Bearer for OpenAI,
// x-api-key for Anthropic); else, when the upstream forwards the client's
// own key (the embedded transport, where the program calling is the key's
// owner), the client's Authorization or x-api-key as it sent them. The
// client's gateway key is never forwarded otherwise.
func (u *Upstream) authorize(req *http.Request, client http.Header, anthropic bool) {
	switch {
	case u.APIKey != "" && anthropic:
		req.Header.Set("X-Api-Key", u.APIKey)
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
