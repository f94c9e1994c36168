package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// Streams the provider itself ends with an error: a Responses stream that
// fails for insufficient quota (an error event, then response.failed with
// no usage) and an Anthropic stream cut by an overloaded_error event after
// its first text.
var providerFailedStreams = []struct {
	name, path, body, stream string
	cost                     string
}{
	{"responses failed", "/v1/responses", `{"model":"gpt-5-nano","input":"hi","stream":true}`,
		"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"error\":null,\"model\":\"gpt-5-nano-2025-08-07\",\"output\":[],\"usage\":null}}\n\n" +
			"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"error\":null,\"model\":\"gpt-5-nano-2025-08-07\",\"output\":[],\"usage\":null}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota.\",\"param\":null}}\n\n" +
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota.\"},\"model\":\"gpt-5-nano-2025-08-07\",\"output\":[],\"usage\":null}}\n\n",
		"0.000000"},
	{"messages error event", "/v1/messages", `{"model":"claude-sonnet-4-6","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		"unknown"},
}

// A stream the provider ends with its own error reaches the client exactly
// as the provider sent it — no gateway error event after it, no cut
// connection (the body reads to its end, the trailers arrive) — and is
// booked as the provider's error with the status the client saw, never
// cached: the identical call with Groundhog-Cache: use goes to the provider
// again.
func TestStreamEndedByProviderErrorIsRelayedAsSent(t *testing.T) {
	for _, tt := range providerFailedStreams {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tt.stream)
			}))
			t.Cleanup(up.Close)
			h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
			for i := 0; i < 2; i++ {
				req, _ := http.NewRequest(http.MethodPost, h.URL+tt.path, strings.NewReader(tt.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Groundhog-Cache", "use")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil {
					t.Fatalf("call %d: reading the stream: %v", i+1, err)
				}
				if res.StatusCode != http.StatusOK || string(got) != tt.stream {
					t.Fatalf("call %d: status %d, body\n%s\nwant the provider's stream\n%s", i+1, res.StatusCode, got, tt.stream)
				}
				if c := res.Trailer.Get("Groundhog-Cost-USD"); c != tt.cost {
					t.Errorf("call %d: Groundhog-Cost-USD trailer %q, want %q", i+1, c, tt.cost)
				}
			}
			if n := calls.Load(); n != 2 {
				t.Errorf("%d upstream calls, want 2: a provider's error is never cached", n)
			}
			rows := h.ledgerRows()
			if len(rows) != 2 {
				t.Fatalf("%d ledger rows, want 2", len(rows))
			}
			for _, row := range rows {
				if row.Outcome != groundhog.OutcomeError || row.Status != http.StatusOK {
					t.Errorf("row outcome %s status %d, want error 200", row.Outcome, row.Status)
				}
				if want, err := groundhog.ParseMoney(tt.cost); (err == nil && row.Cost != want) || (err != nil && row.Cost.Known()) {
					t.Errorf("row cost %v, want %s", row.Cost, tt.cost)
				}
			}
		})
	}
}
