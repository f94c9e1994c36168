package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
)

// A streamed upstream response is bounded in total
// (max_upstream_bytes): past the bound the client's stream is broken off
// with an error event, nothing is cached, and the call is ledgered.
func TestUpstreamStreamIsBounded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 100) + `"},"finish_reason":null}]}` + "\n\n"
		for i := 0; i < 1000; i++ { // ~150 kB, never finished: far past the bound
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
	}))
	defer up.Close()
	h := newHarness(t, withUpstream(up.URL+"/v1", "sk-test"), withConfig(func(c *config.Config) { c.MaxUpstreamBytes = 8 << 10 }))
	body := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"endless"}]}`
	use := map[string]string{"Groundhog-Cache": "use"}
	for k := 0; k < 2; k++ {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Groundhog-Cache", use["Groundhog-Cache"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, rerr := io.ReadAll(res.Body)
		res.Body.Close()
		if res.Header.Get("Groundhog-Cache") != "miss" {
			t.Errorf("call %d: Groundhog-Cache %q (a bounded-off stream is never stored)", k, res.Header.Get("Groundhog-Cache"))
		}
		if rerr == nil {
			t.Errorf("call %d: the truncated stream ended cleanly", k)
		}
		if !strings.Contains(string(b), "max_upstream_bytes") {
			t.Errorf("call %d: no error event naming the bound in the stream's last %d bytes: %q", k, min(len(b), 300), b[max(0, len(b)-300):])
		}
		if len(b) > 64<<10 {
			t.Errorf("call %d: relayed %d bytes past a bound of 8 KiB", k, len(b))
		}
	}
	rows := h.ledgerRows()
	if len(rows) != 2 {
		t.Fatalf("rows %d", len(rows))
	}
	for _, r := range rows {
		if r.Outcome != groundhog.OutcomeError || r.Cost.Known() {
			t.Errorf("row %+v", r)
		}
	}
}
