package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// Anthropic answers whose work ran in several iterations: a server-side
// compaction (which wrote 55,096 cache tokens before the answer), and an
// advisor consulted on another model. Their top-level usage covers only the
// final iteration (compaction) or the executor's iterations (advisor).
const (
	compactionUsage = `{"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":229,"output_tokens":5,` +
		`"iterations":[{"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":55096},"cache_creation_input_tokens":55096,"cache_read_input_tokens":0,"input_tokens":100,"output_tokens":131,"type":"compaction"},` +
		`{"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":229,"output_tokens":5,"type":"message"}]}`
	advisorUsage = `{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":2390,"output_tokens":121,` +
		`"iterations":[{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":1128,"output_tokens":110,"type":"message"},` +
		`{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":2518,"model":"claude-opus-4-8","output_tokens":22,"type":"advisor_message"},` +
		`{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":1262,"output_tokens":11,"type":"message"}]}`
)

// iterationsProvider answers /v1/messages with a message of model whose
// usage is usage; as a stream, message_start reports the first iteration's
// input side and the last message_delta carries the iterations, as
// Anthropic streams them.
func iterationsProvider(t *testing.T, model, usage string) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := io.ReadAll(r.Body)
		if strings.Contains(string(req), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":55096,\"output_tokens\":7}}}\n\n", model)
			fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello!\"}}\n\n")
			fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
			fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":%s}\n\n", usage)
			fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":%s}`, model, usage)
	}))
	t.Cleanup(up.Close)
	return up
}

// Every iteration of an Anthropic usage is booked, each at its own model's
// price: the compaction answer cost $0.209637 (the compaction's 55,096
// cache-write tokens included), not the $0.000762 its top-level figures
// price to; the advisor's iteration is priced at claude-opus-4-8's rates.
func TestUsageIterationsBookedAtTheirOwnModelsPrice(t *testing.T) {
	for _, tt := range []struct {
		name, model, usage string
		stream             bool
		cost               string
		want               groundhog.Usage
		promptCache        string
	}{
		// 100×$3 + 131×$15 + 55,096×$3.75 + 229×$3 + 5×$15 per million.
		{"compaction", "claude-sonnet-4-6", compactionUsage, false, "0.209637",
			groundhog.Usage{InputTokens: 55425, CacheWriteTokens: 55096, OutputTokens: 136}, "read=0 write=55096"},
		{"compaction stream", "claude-sonnet-4-6", compactionUsage, true, "0.209637",
			groundhog.Usage{InputTokens: 55425, CacheWriteTokens: 55096, OutputTokens: 136}, "read=0 write=55096"},
		// (1128+1262)×$2 + 121×$10 on claude-sonnet-5, 2518×$5 + 22×$25 on claude-opus-4-8.
		{"advisor", "claude-sonnet-5", advisorUsage, false, "0.019130",
			groundhog.Usage{InputTokens: 4908, OutputTokens: 143}, "read=0 write=0"},
		{"advisor stream", "claude-sonnet-5", advisorUsage, true, "0.019130",
			groundhog.Usage{InputTokens: 4908, OutputTokens: 143}, "read=0 write=0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := iterationsProvider(t, tt.model, tt.usage)
			h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"))
			body := fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":%t,"messages":[{"role":"user","content":"Now say hello."}]}`, tt.model, tt.stream)
			res, _ := h.post("/v1/messages", body, nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			hdr := res.Header
			if tt.stream {
				hdr = res.Trailer // a stream's figures are known at its end
			}
			if got := hdr.Get("Groundhog-Cost-USD"); got != tt.cost {
				t.Errorf("Groundhog-Cost-USD = %s, want %s", got, tt.cost)
			}
			if got := hdr.Get("Groundhog-Prompt-Cache"); got != tt.promptCache {
				t.Errorf("Groundhog-Prompt-Cache = %q, want %q", got, tt.promptCache)
			}
			rows := h.ledgerRows()
			if len(rows) != 1 {
				t.Fatalf("%d ledger rows, want 1", len(rows))
			}
			if rows[0].Usage != tt.want {
				t.Errorf("ledger usage = %+v, want %+v", rows[0].Usage, tt.want)
			}
			if want, _ := groundhog.ParseMoney(tt.cost); rows[0].Cost != want {
				t.Errorf("ledger cost = %v, want %s", rows[0].Cost, tt.cost)
			}
		})
	}
}
