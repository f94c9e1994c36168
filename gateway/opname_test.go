package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOperationNameBound: Groundhog-Operation is bounded
// in length and charset with a clear 400 in the provider's error shape,
// before the provider is called.
func TestOperationNameBound(t *testing.T) {
	h := newHarness(t)
	chat := `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	msgs := `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		path, body, op string
		want           int
	}{
		{"/v1/chat/completions", chat, strings.Repeat("a", 128), 200},
		{"/v1/chat/completions", chat, strings.Repeat("a", 129), 400},
		{"/v1/chat/completions", chat, "emoji-\u2603", 400},
		{"/v1/chat/completions", chat, "semi;colon", 400},
		{"/v1/messages", msgs, strings.Repeat("b", 129), 400},
	} {
		before := h.bill().Calls
		res, b := h.post(tc.path, tc.body, map[string]string{"Groundhog-Operation": tc.op})
		if res.StatusCode != tc.want {
			t.Fatalf("%s op %.20q: %d %s, want %d", tc.path, tc.op, res.StatusCode, b, tc.want)
		}
		if tc.want != 400 {
			continue
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(e.Error.Message, "Groundhog-Operation must be 1–128 characters") {
			t.Fatalf("%s: error body %s", tc.path, b)
		}
		if strings.HasPrefix(tc.path, "/v1/messages") && e.Type != "error" {
			t.Fatalf("messages error not in Anthropic shape: %s", b)
		}
		if h.bill().Calls != before {
			t.Fatalf("a refused operation name reached the provider")
		}
	}
}
