package gateway_test

// Regression tests for defects of the gateway pipeline: each one
// failed on the code before its fix.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
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

// The only client of an idempotent call times out; the
// call still runs to completion, its result is committed under the
// operation record, and the retry replays it: the provider bills once.
func TestRetryAfterClientTimeoutPaysOnce(t *testing.T) {
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

// The leader of a cacheable call is its
// flight's only subscriber and leaves; the flight completes and fills the
// cache, so the repeat is a hit.
func TestCacheableCallOutlivesItsClient(t *testing.T) {
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

// report builds today's report over the harness's ledger.
func (h *harness) report() ledger.Row {
	h.t.Helper()
	if err := h.Ledger.Flush(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		h.t.Fatal(err)
	}
	return rep.Total
}

// Attempts the provider billed are never booked as a
// known $0. Over a workload with faults the report's spend equals the
// sim's bill for every call whose usage the gateway received; a call the
// provider billed but whose usage never arrived (drop after success, reset
// mid-stream) is unknown and counted in unknown_cost_calls.
func TestBilledFailuresAreNotFreeInTheReport(t *testing.T) {
	h := newHarness(t)
	chat := func(s string) string {
		return `{"model":"sim-small","messages":[{"role":"user","content":"` + s + `"}]}`
	}
	for i, fault := range []string{"", "status=503", "", "status=429", ""} {
		hdr := map[string]string{}
		if fault != "" {
			hdr["Sim-Fault"] = fault
		}
		h.post("/v1/chat/completions", chat(fmt.Sprint("call ", i)), hdr)
	}
	rep, bill := h.report(), h.bill()
	if rep.Spend != groundhog.TotalOf(bill.USD) || rep.UnknownCostCalls != 0 {
		t.Fatalf("clean workload: report spend $%s (unknown %d), sim bill $%s", rep.Spend, rep.UnknownCostCalls, bill.USD)
	}
	r, _ := h.post("/v1/chat/completions", chat("dropped"), map[string]string{"Sim-Fault": "drop-after-success"})
	if r.StatusCode/100 != 5 {
		t.Fatalf("drop-after-success answered %d", r.StatusCode)
	}
	r, _ = h.post("/v1/chat/completions", `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"reset"}]}`, map[string]string{"Sim-Fault": "reset-mid-stream"})
	_ = r
	after, bill2 := h.report(), h.bill()
	if bill2.USD <= bill.USD {
		t.Fatalf("the faults were not billed by the sim: $%s then $%s", bill.USD, bill2.USD)
	}
	if after.UnknownCostCalls != 2 || after.Spend != rep.Spend {
		t.Fatalf("after billed failures: spend $%s (was $%s), unknown_cost_calls %d, want 2; sim bill $%s",
			after.Spend, rep.Spend, after.UnknownCostCalls, bill2.USD)
	}
	for _, row := range h.ledgerRows() {
		if row.Outcome == groundhog.OutcomeError && row.Status >= 500 && row.Status != 503 && row.Cost.Known() {
			t.Errorf("billed failure booked as known %s: %+v", row.Cost, row)
		}
	}
}

// A call that is neither idempotent nor
// cacheable may be cancelled when its client leaves, but the attempt that
// reached the provider is booked as unknown, not $0.
func TestCancelledAttemptCostsUnknown(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	defer g.open() // the gate's handler does not read the body, so it cannot see the gateway hang up
	leaveEarly(t, h, g, "/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"bye"}]}`, nil)
	waitFor(t, func() bool { return len(h.ledgerRows()) == 1 }) // the cancelled flight records the row
	rows := h.ledgerRows()
	if len(rows) != 1 || rows[0].Status != 499 || rows[0].Cost.Known() {
		t.Fatalf("rows %+v", rows)
	}
	if rep := h.report(); rep.UnknownCostCalls != 1 {
		t.Fatalf("unknown_cost_calls %d", rep.UnknownCostCalls)
	}
}

// A hit, a coalesced answer and a replay of a model the
// price table does not know say their saving is unknown, as the cost is.
func TestUnknownSavingsSayUnknown(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	body := `{"model":"unpriced-model-x","messages":[{"role":"user","content":"what is it worth"}]}`
	use := map[string]string{"Groundhog-Cache": "use"}
	hash := hashOf(t, "chat", body)
	leader := make(chan *http.Response, 1)
	go func() { r, _ := h.post("/v1/chat/completions", body, use); leader <- r }()
	<-g.arrived
	follower := make(chan *http.Response, 1)
	go func() { r, _ := h.post("/v1/chat/completions", body, use); follower <- r }()
	waitFor(t, func() bool { return h.GW.Followers("local", hash) == 1 })
	g.open()
	lr, fr := <-leader, <-follower
	if lr.Header.Get("Groundhog-Cost-USD") != "unknown" {
		t.Fatalf("leader cost %q", lr.Header.Get("Groundhog-Cost-USD"))
	}
	if fr.Header.Get("Groundhog-Cache") != "coalesced" || fr.Header.Get("Groundhog-Saved-USD") != "unknown" {
		t.Errorf("coalesced: cache %q saved %q", fr.Header.Get("Groundhog-Cache"), fr.Header.Get("Groundhog-Saved-USD"))
	}
	hr, _ := h.post("/v1/chat/completions", body, use)
	if hr.Header.Get("Groundhog-Cache") != "hit" || hr.Header.Get("Groundhog-Saved-USD") != "unknown" {
		t.Errorf("hit: cache %q saved %q", hr.Header.Get("Groundhog-Cache"), hr.Header.Get("Groundhog-Saved-USD"))
	}
	idem := map[string]string{"Idempotency-Key": "unpriced-1"}
	h.post("/v1/chat/completions", body, idem)
	rr, _ := h.post("/v1/chat/completions", body, idem)
	if rr.Header.Get("Idempotent-Replayed") != "true" || rr.Header.Get("Groundhog-Saved-USD") != "unknown" {
		t.Errorf("replay: replayed %q saved %q", rr.Header.Get("Idempotent-Replayed"), rr.Header.Get("Groundhog-Saved-USD"))
	}
}

// Every provider-route response says what the cache stage
// did: an idempotent replay says "replayed", an error says what happened
// (or "off" when the call never reached the cache stage).
func TestEveryResponseCarriesGroundhogCache(t *testing.T) {
	h := newHarness(t)
	body := `{"model":"sim-small","messages":[{"role":"user","content":"state"}]}`
	idem := map[string]string{"Idempotency-Key": "state-1"}
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		want string
	}{
		{"first idempotent call", body, idem, "off"},
		{"replay", body, idem, "replayed"},
		{"mismatched payload", `{"model":"sim-small","messages":[{"role":"user","content":"other"}]}`, idem, "off"},
		{"bad request", `{"messages":[]}`, nil, "off"},
		{"upstream error on a miss", body, map[string]string{"Groundhog-Cache": "use", "Sim-Fault": "status=503"}, "miss"},
		{"transport error, cache off", body, map[string]string{"Sim-Fault": "drop-after-success"}, "off"},
	}
	for _, tc := range cases {
		r, b := h.post("/v1/chat/completions", tc.body, tc.hdr)
		if got := r.Header.Get("Groundhog-Cache"); got != tc.want {
			t.Errorf("%s: %d Groundhog-Cache %q, want %q (%s)", tc.name, r.StatusCode, got, tc.want, b)
		}
	}
}
