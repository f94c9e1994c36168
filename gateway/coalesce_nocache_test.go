package gateway_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
)

// Coalescing without the cache: with the cache off,
// Groundhog-Coalesce: on (or the operation's coalesce: true) makes identical
// calls in flight share one upstream call, and nothing is stored — the next
// call after the flight goes upstream again. Groundhog-Coalesce: off keeps
// identical calls of a cached operation apart.
func TestCoalescingWithoutTheCache(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name      string
		hdr       map[string]string
		op        string
		wantCalls int64 // upstream calls for n concurrent identical calls
	}{
		{"header on, cache off", map[string]string{"Groundhog-Coalesce": "on"}, "", 1},
		{"operation coalesce: true", map[string]string{"Groundhog-Operation": "dedupe"}, "dedupe", 1},
		{"header off beats cache on", map[string]string{"Groundhog-Cache": "use", "Groundhog-Coalesce": "off"}, "", 4},
		{"nothing: no sharing", nil, "", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGate()
			h := newHarness(t, withGate(g), withConfig(func(cfg *config.Config) {
				cfg.Operations = map[string]config.Operation{"dedupe": {Coalesce: &yes}}
			}))
			const n = 4
			body := `{"model":"sim-small","messages":[{"role":"user","content":"` + strings.ReplaceAll(c.name, " ", "-") + `"}]}`
			var wg sync.WaitGroup
			states := make([]string, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					res, _ := h.post("/v1/chat/completions", body, c.hdr)
					if res.StatusCode != http.StatusOK {
						t.Errorf("call %d: status %d", i, res.StatusCode)
					}
					states[i] = res.Header.Get("Groundhog-Cache")
				}(i)
			}
			if c.wantCalls == 1 {
				<-g.arrived
				waitFor(t, func() bool { return h.GW.Followers("local", hashOf(t, "chat", body)) == n-1 })
			} else {
				for i := 0; i < n; i++ {
					<-g.arrived // every call reached the provider on its own
				}
			}
			g.open()
			wg.Wait()
			if got := h.bill().Calls; got != c.wantCalls {
				t.Fatalf("%d upstream calls for %d identical concurrent calls, want %d (states %v)", got, n, c.wantCalls, states)
			}
			coalesced := 0
			for _, r := range h.ledgerRows() {
				if r.Outcome == groundhog.OutcomeCoalesced {
					coalesced++
					if !r.InFlight || r.Saved <= 0 {
						t.Errorf("coalesced row %+v: want in_flight and the leader's cost saved", r)
					}
				}
			}
			if want := n - int(c.wantCalls); want > 0 && coalesced != want {
				t.Fatalf("%d coalesced rows, want %d", coalesced, want)
			}
			if c.wantCalls == 1 && c.hdr["Groundhog-Cache"] == "" {
				// Nothing was stored: the same call again pays again.
				before := h.bill().Calls
				res, _ := h.post("/v1/chat/completions", body, c.hdr)
				if res.Header.Get("Groundhog-Cache") == "hit" || h.bill().Calls != before+1 {
					t.Fatalf("a coalesced call without the cache was stored: %v, calls %d→%d", res.Header, before, h.bill().Calls)
				}
			}
		})
	}
	// A bad value is a 400.
	h := newHarness(t)
	res, b := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"x"}]}`, map[string]string{"Groundhog-Coalesce": "maybe"})
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("Groundhog-Coalesce: maybe → %d %s", res.StatusCode, b)
	}
}
