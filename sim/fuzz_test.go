package sim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCacheRequests: no request body makes a model route panic or answer
// anything but 200 or a provider-shaped 400 — the caching fields included.
func FuzzCacheRequests(f *testing.F) {
	for _, seed := range []string{
		respReq(explicitMode, rmsg{"developer", "rule", 3, true}, rmsg{"user", "hi", 1, false}),
		respReq(implicitMode, map[string]any{"type": "additional_tools", "tools": twoTools}, rmsg{"user", "hi", 1, true}),
		`{"model":"sim-small","prompt_cache_options":{"mode":"explicit"},"messages":[{"role":"user","content":[{"type":"text","text":"x","prompt_cache_breakpoint":{"mode":"explicit"}}]}]}`,
		mreq(map[string]any{"cache_control": ccOf("1h"), "thinking": map[string]any{"type": "enabled"}}, []any{ablock(2, "a", "1h")}, amsg("user", ablock(1, "x", "5m"))),
	} {
		f.Add(seed)
	}
	s := New(Config{})
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages"} {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != 200 && rec.Code != 400 {
				t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
			}
			if rec.Code == 400 {
				errorShape(t, rec.Body.Bytes())
			}
		}
	})
}
