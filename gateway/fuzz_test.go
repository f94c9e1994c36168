package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzProviderRoute throws arbitrary bodies and groundhog headers at the
// real gateway handler (real SQLite, real simulated provider behind it):
// it must never panic, must answer every request with a status it
// documents, and every error must be a JSON error in the provider's shape.
func FuzzProviderRoute(f *testing.F) {
	for _, s := range []struct{ path, body, cache, ttl, op, key, ct string }{
		{"/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`, "use", "60", "op", "k1", "application/json"},
		{"/v1/chat/completions", `{"model":"sim-small","stream":true,"messages":[]}`, "refresh", "", "", "", "application/json; charset=utf-8"},
		{"/v1/messages", `{"model":"sim-small","max_tokens":8,"messages":[{"role":"user","content":"x"}]}`, "", "", "", "", "application/json"},
		{"/v1/responses", `{"model":"sim-small","input":"x"}`, "bypass", "", "a/b:c", "", "application/json"},
		{"/v1/embeddings", `{"model":"sim-embed","input":["a","b"]}`, "", "", "", "", "application/json"},
		{"/v1/chat/completions", `{"model":`, "", "", "", "", "application/json"},
		{"/v1/chat/completions", `[1,2]`, "sometimes", "-1", "bad op", "k\x01", "text/plain"},
		{"/v1/chat/completions", `{"model":"m","model":"n"}`, "", "99999999999", "", strings.Repeat("k", 300), ""},
		{"/v1/messages", "{\"model\":\"\\ud800\"}", "", "", "", "", "application/json"},
	} {
		f.Add(s.path, s.body, s.cache, s.ttl, s.op, s.key, s.ct)
	}
	h := newHarness(f)
	allowed := map[int]bool{200: true, 400: true, 404: true, 405: true, 409: true, 413: true, 415: true, 422: true, 502: true, 504: true}
	f.Fuzz(func(t *testing.T, path, body, cache, ttl, op, key, ct string) {
		switch path {
		case "/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/embeddings":
		default:
			path = "/v1/chat/completions"
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": ct, "Groundhog-Cache": cache, "Groundhog-Cache-TTL": ttl, "Groundhog-Operation": op, "Idempotency-Key": key} {
			if v != "" && !strings.ContainsAny(v, "\r\n\x00") {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.GW.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
		}
		if rec.Code == 200 {
			return
		}
		if rec.Code/100 == 4 || rec.Header().Get("Content-Type") == "application/json" {
			var e struct {
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("status %d without a JSON error: %q", rec.Code, rec.Body.Bytes())
			}
			if path == "/v1/messages" && !bytes.Contains(rec.Body.Bytes(), []byte(`"type":"error"`)) && rec.Code != 404 {
				t.Fatalf("Anthropic route error not in Anthropic's shape: %s", rec.Body.Bytes())
			}
		}
	})
}
