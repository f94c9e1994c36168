package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A live answer, success or error, passes the provider's
// back-off, rate-limit and request-id headers (never hop-by-hop ones); a
// cache hit and an idempotent replay never replay them.
func TestUpstreamHeadersPassThroughLiveOnly(t *testing.T) {
	n := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		h := w.Header()
		h.Set("x-request-id", fmt.Sprintf("req_%d", n))
		h.Set("openai-processing-ms", "42")
		h.Set("x-ratelimit-remaining-requests", "99")
		h.Set("anthropic-ratelimit-tokens-remaining", "1000")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("X-Internal-Secret", "upstream-only")
		if strings.Contains(r.Header.Get("X-Test"), "429") {
			h.Set("Retry-After", "7")
			h.Set("retry-after-ms", "7000")
			h.Set("Content-Type", "application/json")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"type":"rate_limit_error","message":"slow down"}}`)
			return
		}
		h.Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim-small","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"headers"}]}`

	r, _ := h.post("/v1/chat/completions", body, map[string]string{"X-Test": "429"})
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "7" || r.Header.Get("Retry-After-Ms") != "7000" ||
		r.Header.Get("X-Request-Id") != "req_1" || r.Header.Get("X-Ratelimit-Remaining-Requests") != "99" {
		t.Fatalf("429: %d %v", r.StatusCode, r.Header)
	}
	use := map[string]string{"Groundhog-Cache": "use"}
	r, _ = h.post("/v1/chat/completions", body, use)
	if r.StatusCode != 200 || r.Header.Get("X-Request-Id") != "req_2" || r.Header.Get("Openai-Processing-Ms") != "42" ||
		r.Header.Get("Anthropic-Ratelimit-Tokens-Remaining") != "1000" {
		t.Fatalf("live 200: %d %v", r.StatusCode, r.Header)
	}
	if r.Header.Get("X-Internal-Secret") != "" || r.Header.Get("Keep-Alive") != "" {
		t.Errorf("non-listed upstream headers passed: %v", r.Header)
	}
	idem := map[string]string{"Idempotency-Key": "hdr-1"}
	h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"headers 2"}]}`, idem)
	for name, hdr := range map[string]map[string]string{"hit": use, "replay": idem} {
		b := body
		if name == "replay" {
			b = `{"model":"sim-small","messages":[{"role":"user","content":"headers 2"}]}`
		}
		r, _ := h.post("/v1/chat/completions", b, hdr)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d", name, r.StatusCode)
		}
		for _, k := range []string{"X-Request-Id", "X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Tokens-Remaining", "Openai-Processing-Ms", "Retry-After"} {
			if v := r.Header.Get(k); v != "" {
				t.Errorf("%s replays upstream header %s: %q", name, k, v)
			}
		}
	}
}

// When the response's model is not
// in the price table (a dated snapshot name, say), the request's model
// prices the call instead of leaving it unknown.
func TestPriceFallsBackToTheRequestModel(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim-small-unlisted-2099-01-01","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}}`)
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
	r, b := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"price me"}]}`, nil)
	if r.StatusCode != 200 {
		t.Fatalf("%d %s", r.StatusCode, b)
	}
	if c := r.Header.Get("Groundhog-Cost-USD"); c == "unknown" || c == "" || c == "0.000000" {
		t.Fatalf("cost %q: the request's model sim-small is priced", c)
	}
	if rows := h.ledgerRows(); len(rows) != 1 || !rows[0].Cost.Known() || rows[0].Cost == 0 {
		t.Fatalf("rows %+v", rows)
	}
}
