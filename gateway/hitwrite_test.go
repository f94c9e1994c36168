package gateway_test

import (
	"bytes"
	"strings"
	"testing"
)

// A streamed cache hit knows its whole stream before it writes a byte: it
// is sent with its Content-Length (no chunked framing), and its events are
// the ones the miss relayed, the terminal event included — for a stream
// stored from a stream and for one made from a stored JSON answer.
func TestStreamedHitHasItsLength(t *testing.T) {
	h := newHarness(t)
	use := map[string]string{"Groundhog-Cache": "use"}
	cases := []struct {
		name, path, first, stream, last string
	}{
		{"chat stored as a stream", "/v1/chat/completions",
			`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"count the hills"}]}`,
			`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"count the hills"}]}`,
			"data: [DONE]\n\n"},
		{"messages stored as a stream", "/v1/messages",
			`{"model":"claude-3-5-haiku-latest","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"count the valleys"}]}`,
			`{"model":"claude-3-5-haiku-latest","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"count the valleys"}]}`,
			"event: message_stop\n"},
		{"chat stored as JSON, served as a stream", "/v1/chat/completions",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"count the rivers"}]}`,
			`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"count the rivers"}]}`,
			"data: [DONE]\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, miss := h.post(tc.path, tc.first, use)
			if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != "miss" {
				t.Fatalf("first call: %d, Groundhog-Cache %q: %s", res.StatusCode, res.Header.Get("Groundhog-Cache"), miss)
			}
			res, hit := h.post(tc.path, tc.stream, use)
			if res.StatusCode != 200 || res.Header.Get("Groundhog-Cache") != "hit" {
				t.Fatalf("second call: %d, Groundhog-Cache %q: %s", res.StatusCode, res.Header.Get("Groundhog-Cache"), hit)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("hit Content-Type %q", ct)
			}
			if res.ContentLength != int64(len(hit)) || len(res.TransferEncoding) != 0 {
				t.Errorf("hit of %d bytes sent with Content-Length %d, Transfer-Encoding %v", len(hit), res.ContentLength, res.TransferEncoding)
			}
			if !bytes.Contains(hit, []byte(tc.last)) {
				t.Errorf("hit stream has no %q:\n%s", tc.last, hit)
			}
			if tc.first == tc.stream && !bytes.Equal(hit, miss) {
				t.Errorf("hit stream differs from the miss's:\nmiss %s\nhit  %s", miss, hit)
			}
		})
	}
}
