package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/wire"
)

// Upstream faults: an error reaches the client and every coalesced
// follower, nothing is cached, and the next call goes upstream again.
func TestUpstreamFaults(t *testing.T) {
	for _, fault := range []string{"status=503", "timeout", "reset-mid-stream", "drop-after-success"} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", fault, stream), func(t *testing.T) {
				g := newGate()
				// The upstream deadline ends the "timeout" fault; it runs from
				// the leader's upstream request on, while the gate holds it
				// until every follower joined: long enough for that on a
				// loaded machine (a leader timed out before its followers
				// joined leaves them to lead calls of their own).
				h := newHarness(t, withGate(g), withConfig(func(c *config.Config) { c.UpstreamTimeout = 3 * time.Second }))
				body := fmt.Sprintf(`{"model":"sim-small","stream":%v,"messages":[{"role":"user","content":"fault %s"}]}`, stream, fault)
				const n = 5
				type result struct {
					status   int
					complete bool
					body     string
					err      error
				}
				results := make([]result, n)
				var wg sync.WaitGroup
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Groundhog-Cache", "use")
						req.Header.Set("Sim-Fault", fault)
						res, err := http.DefaultClient.Do(req)
						if err != nil {
							results[i].err = err
							return
						}
						defer res.Body.Close()
						results[i].status = res.StatusCode
						if stream && res.StatusCode == 200 {
							rd := wire.NewSSEReader(res.Body)
							for {
								ev, err := rd.Next()
								if err != nil {
									if err != io.EOF {
										results[i].err = err
									}
									break
								}
								if string(ev.Data) == "[DONE]" {
									results[i].complete = true
								}
								results[i].body += string(ev.Data)
							}
							return
						}
						b, err := io.ReadAll(res.Body)
						results[i].body, results[i].err = string(b), err
					}(i)
				}
				<-g.arrived
				waitFor(t, func() bool { return h.GW.Followers("local", hashOf(t, "chat", body)) == n-1 })
				g.open()
				wg.Wait()
				for i, r := range results {
					if r.complete {
						t.Fatalf("client %d received a complete stream despite fault %s", i, fault)
					}
					if r.status == 200 && r.err == nil && !strings.Contains(r.body, "error") {
						t.Fatalf("client %d: status 200 with no error for fault %s: %q", i, fault, r.body)
					}
					if r.status != 200 && r.status < 500 && !(fault == "status=503") {
						t.Fatalf("client %d: status %d", i, r.status)
					}
				}
				before := h.bill().Calls
				// Nothing was cached: the same call without the fault goes upstream.
				res, b := h.post("/v1/chat/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1), map[string]string{"Groundhog-Cache": "use"})
				if res.StatusCode != 200 {
					t.Fatalf("clean retry: %d %s", res.StatusCode, b)
				}
				if got := res.Header.Get("Groundhog-Cache"); got != "miss" {
					t.Fatalf("clean retry after %s: Groundhog-Cache %q, want miss (a failure was cached?)", fault, got)
				}
				if h.bill().Calls != before+1 {
					t.Fatalf("clean retry did not reach the provider")
				}
			})
		}
	}
}
