package gateway_test

// Regression tests for issue 10 (the gateway-pipeline defects): each one
// failed on the code before its fix.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// leaveEarly sends body with hdr and gives up (as a client timeout does)
// once the call is at the provider's gate; it returns after the gateway's
// handler has seen the client go and returned.
func leaveEarly(t *testing.T, h *harness, g *gate, path, body string, hdr map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-g.arrived // the call is at the provider
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the request should have been cancelled")
	}
	waitFor(t, func() bool { return h.GW.InFlight() == 0 }) // the handler saw the client go
}

// Issue 10 item 2: the only client of an idempotent call times out; the
// call still runs to completion, its result is committed under the
// operation record, and the retry replays it: the provider bills once.
func TestIssue10RetryAfterClientTimeoutPaysOnce(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"slow answer"}]}`
	leaveEarly(t, h, g, "/v1/chat/completions", body, map[string]string{"Idempotency-Key": "ct-1"})
	g.open()
	waitFor(t, func() bool { return len(h.ledgerRows()) == 1 })
	row := h.ledgerRows()[0]
	if row.Status != 499 || row.Outcome != groundhog.OutcomeUpstream || row.Cost <= 0 {
		t.Fatalf("abandoned call's row: %+v", row)
	}
	r, _ := h.post("/v1/chat/completions", body, map[string]string{"Idempotency-Key": "ct-1"})
	if r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d replayed=%q", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	if b := h.bill(); b.Calls != 1 || b.USD != row.Cost {
		t.Fatalf("sim bill %d calls $%s, ledger $%s", b.Calls, b.USD, row.Cost)
	}
}

// Issue 10 item 2, cacheable variant: the leader of a cacheable call is its
// flight's only subscriber and leaves; the flight completes and fills the
// cache, so the repeat is a hit.
func TestIssue10CacheableCallOutlivesItsClient(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"slow cacheable"}]}`
	use := map[string]string{"Groundhog-Cache": "use"}
	leaveEarly(t, h, g, "/v1/chat/completions", body, use)
	g.open()
	waitFor(t, func() bool { return len(h.ledgerRows()) == 1 })
	r, _ := h.post("/v1/chat/completions", body, use)
	if r.StatusCode != 200 || r.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("repeat: %d %q", r.StatusCode, r.Header.Get("Groundhog-Cache"))
	}
	if b := h.bill(); b.Calls != 1 {
		t.Fatalf("sim billed %d calls", b.Calls)
	}
}
