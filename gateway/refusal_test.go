package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// refusingProvider answers every call with a refusal in the shape of the
// route, as a stream when asked, in the real providers' formats.
func refusingProvider(t *testing.T, calls *atomic.Int64) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		stream := strings.Contains(string(body), `"stream":true`)
		usageChat := `"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`
		switch {
		case r.URL.Path == "/v1/chat/completions" && !stream:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim-small","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"logprobs":null,"finish_reason":"stop"}],%s}`, usageChat)
		case r.URL.Path == "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
			fmt.Fprint(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`+"\n\n")
			fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[],%s}`+"\n\n", usageChat)
			fmt.Fprint(w, "data: [DONE]\n\n")
		case r.URL.Path == "/v1/messages" && !stream:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"sim-small","content":[],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}`)
		case r.URL.Path == "/v1/messages":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"sim-small\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
			fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n")
			fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		case r.URL.Path == "/v1/responses" && !stream:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"resp_1","object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"model":"sim-small","output":[],"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`)
		case r.URL.Path == "/v1/responses":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"sim-small\",\"output\":[]}}\n\n")
			fmt.Fprint(w, "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"content_filter\"},\"model\":\"sim-small\",\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1,\"total_tokens\":6}}}\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// Refusals are passed to the client and ledgered, but
// never stored: the identical second call goes to the provider again.
func TestRefusalsAreNeverCached(t *testing.T) {
	var calls atomic.Int64
	up := refusingProvider(t, &calls)
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
	cases := []struct{ path, body, marker string }{
		{"/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"bad 1"}]}`, "I can't help"},
		{"/v1/chat/completions", `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"bad 2"}]}`, "content_filter"},
		{"/v1/messages", `{"model":"sim-small","max_tokens":10,"messages":[{"role":"user","content":"bad 3"}]}`, "refusal"},
		{"/v1/messages", `{"model":"sim-small","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"bad 4"}]}`, "refusal"},
		{"/v1/responses", `{"model":"sim-small","input":"bad 5"}`, "content_filter"},
		{"/v1/responses", `{"model":"sim-small","stream":true,"input":"bad 6"}`, "content_filter"},
	}
	use := map[string]string{"Groundhog-Cache": "use"}
	for i, tc := range cases {
		before := calls.Load()
		for k := 0; k < 2; k++ {
			r, b := h.post(tc.path, tc.body, use)
			if r.StatusCode != 200 || !strings.Contains(string(b), tc.marker) {
				t.Fatalf("case %d call %d: %d %s", i, k, r.StatusCode, b)
			}
			if got := r.Header.Get("Groundhog-Cache"); got != "miss" {
				t.Errorf("case %d (%s) call %d: Groundhog-Cache %q, want miss (a refusal is never stored)", i, tc.path, k, got)
			}
		}
		if n := calls.Load() - before; n != 2 {
			t.Errorf("case %d: provider called %d times for two identical refused calls", i, n)
		}
	}
	rows := h.ledgerRows()
	if len(rows) != 2*len(cases) {
		t.Fatalf("%d ledger rows, want %d", len(rows), 2*len(cases))
	}
	for _, row := range rows {
		if row.Outcome != groundhog.OutcomeUpstream {
			t.Errorf("row %+v", row)
		}
	}
}
