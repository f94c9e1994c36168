package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A Responses cache hit is the stored answer's bytes: a request that
// omits prompt_cache_retention gets the value the provider echoed (a
// model-dependent default such as "24h", never null), and an answer that
// needs no rewrite is not re-encoded (the provider's spacing and key order
// stay). A request that sets an echoed field gets its own value, and only
// that value changes.
func TestResponsesHitKeepsTheStoredBytes(t *testing.T) {
	const stored = "{\n  \"id\": \"resp_1\",\n  \"object\": \"response\",\n  \"status\": \"completed\",\n  \"model\": \"gpt-5-nano-2025-08-07\",\n" +
		"  \"output\": [{\"type\": \"message\", \"id\": \"msg_1\", \"status\": \"completed\", \"role\": \"assistant\", \"content\": [{\"type\": \"output_text\", \"text\": \"Hello \\u003cthere\\u003e\", \"annotations\": []}]}],\n" +
		"  \"prompt_cache_key\": null,\n  \"prompt_cache_retention\": \"24h\",\n  \"metadata\": {},\n  \"store\": true,\n  \"user\": null,\n" +
		"  \"usage\": {\"input_tokens\": 10, \"input_tokens_details\": {\"cached_tokens\": 0}, \"output_tokens\": 3, \"output_tokens_details\": {\"reasoning_tokens\": 0}, \"total_tokens\": 13}\n}\n"
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, stored)
	}))
	t.Cleanup(up.Close)
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
	use := map[string]string{"Groundhog-Cache": "use"}
	req := `{"model":"gpt-5-nano","input":"hello"}`

	res, first := h.post("/v1/responses", req, use)
	if res.StatusCode != 200 || string(first) != stored {
		t.Fatalf("miss: %d\n%s", res.StatusCode, first)
	}
	res, hit := h.post("/v1/responses", req, use)
	if res.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("second call: Groundhog-Cache %q, want hit", res.Header.Get("Groundhog-Cache"))
	}
	if string(hit) != stored {
		t.Errorf("hit is not the stored bytes (%d bytes, stored %d):\n%s", len(hit), len(stored), hit)
	}

	// The caller sets prompt_cache_retention: only that value changes.
	res, own := h.post("/v1/responses", `{"model":"gpt-5-nano","input":"hello","prompt_cache_retention":"in_memory"}`, use)
	if res.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("third call: Groundhog-Cache %q, want hit", res.Header.Get("Groundhog-Cache"))
	}
	if want := strings.Replace(stored, `"prompt_cache_retention": "24h"`, `"prompt_cache_retention": "in_memory"`, 1); string(own) != want {
		t.Errorf("hit for a caller that set the retention:\n%q\nwant\n%q", own, want)
	}

	// Served as a stream, the stored retention is echoed too.
	res, stream := h.post("/v1/responses", `{"model":"gpt-5-nano","input":"hello","stream":true}`, use)
	if res.Header.Get("Groundhog-Cache") != "hit" || !strings.Contains(string(stream), `"prompt_cache_retention":"24h"`) || strings.Contains(string(stream), `"prompt_cache_retention":null`) {
		t.Errorf("stream hit %q does not echo the stored retention:\n%s", res.Header.Get("Groundhog-Cache"), stream)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1", n)
	}
}
