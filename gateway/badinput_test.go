package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/config"
)

// Bad input gets the right status and a JSON error in the provider's shape,
// and nothing reaches the provider or the stores.
func TestBadInput(t *testing.T) {
	const limit = 4096
	h := newHarness(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = limit }))
	ok := `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	atLimit := `{"model":"sim-small","messages":[{"role":"user","content":"` + strings.Repeat("a", limit-len(ok)+2) + `"}]}`
	if len(atLimit) != limit {
		t.Fatalf("test body is %d bytes, want %d", len(atLimit), limit)
	}
	overLimit := strings.Replace(atLimit, `"a`, `"aa`, 1)
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		errType                  string
	}{
		{"malformed JSON", "POST", "/v1/chat/completions", `{"model":"sim-small",`, nil, 400, "invalid_request_error"},
		{"trailing garbage", "POST", "/v1/chat/completions", ok + `x`, nil, 400, "invalid_request_error"},
		{"array body", "POST", "/v1/chat/completions", `[{"model":"sim-small"}]`, nil, 400, "invalid_request_error"},
		{"missing model", "POST", "/v1/chat/completions", `{"messages":[]}`, nil, 400, "invalid_request_error"},
		{"model not a string", "POST", "/v1/chat/completions", `{"model":7,"messages":[]}`, nil, 400, "invalid_request_error"},
		{"empty body", "POST", "/v1/chat/completions", ``, nil, 400, "invalid_request_error"},
		{"one byte over the limit", "POST", "/v1/chat/completions", overLimit, nil, 413, ""},
		{"wrong content type", "POST", "/v1/chat/completions", ok, map[string]string{"Content-Type": "text/plain"}, 415, ""},
		{"unknown route", "POST", "/v1/completions/legacy", ok, nil, 404, ""},
		{"wrong method", "PUT", "/v1/chat/completions", "", nil, 405, ""},
		{"bad cache policy", "POST", "/v1/chat/completions", ok, map[string]string{"Groundhog-Cache": "sometimes"}, 400, "invalid_request_error"},
		{"bad TTL", "POST", "/v1/chat/completions", ok, map[string]string{"Groundhog-Cache-TTL": "-5"}, 400, "invalid_request_error"},
		{"bad operation", "POST", "/v1/chat/completions", ok, map[string]string{"Groundhog-Operation": "has space"}, 400, "invalid_request_error"},
		{"idempotency key too long", "POST", "/v1/chat/completions", ok, map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, 400, "invalid_request_error"},
		{"idempotency key not ASCII", "POST", "/v1/chat/completions", ok, map[string]string{"Idempotency-Key": "clé"}, 400, "invalid_request_error"},
		{"anthropic malformed", "POST", "/v1/messages", `{"model":`, nil, 400, "invalid_request_error"},
		{"embeddings stream", "POST", "/v1/embeddings", `{"model":"sim-embed","input":"x","stream":true}`, nil, 400, "invalid_request_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, h.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b := make([]byte, 64<<10)
			n, _ := res.Body.Read(b)
			for m := n; m > 0 && n < len(b); {
				m, _ = res.Body.Read(b[n:])
				n += m
			}
			b = b[:n]
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, c.status, b)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			typ := errorType(t, b)
			if c.errType != "" && typ != c.errType {
				t.Fatalf("error type %q, want %q", typ, c.errType)
			}
			if c.path == "/v1/messages" && !strings.Contains(string(b), `"type":"error"`) {
				t.Fatalf("Anthropic route error not in Anthropic's shape: %s", b)
			}
		})
	}
	if h.bill().Calls != 0 {
		t.Fatalf("bad input reached the provider: %d calls", h.bill().Calls)
	}
	// A body exactly at the limit is accepted.
	res, b := h.post("/v1/chat/completions", atLimit, nil)
	if res.StatusCode != 200 {
		t.Fatalf("body at the limit: %d %s", res.StatusCode, b)
	}
}
