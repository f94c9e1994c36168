package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/pricing"
)

// docs/measure.md's worked example through the real pipeline and the
// simulated provider, scaled to 4,000 calls with 600 same-day repeats
// (15 %) and priced so one call costs $0.04: the repeats cost $24.00 a day
// and a cache would save $720.00 in 30 days — the design's figures exactly.
func TestReportWorkedExampleThroughThePipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("4,000 calls through the gateway")
	}
	h := newHarness(t, withConfig(func(c *config.Config) {
		// $0.04 per output token, input free; max_tokens 1 → $0.04 a call.
		c.Prices = map[string]pricing.YAMLPrice{"ledger-test": {Input: "0", CachedInput: "0", CacheWrite: "0", Output: "40000"}}
	}))
	const distinct, repeats = 3400, 600
	body := func(i int) string {
		return fmt.Sprintf(`{"model":"ledger-test","max_tokens":1,"messages":[{"role":"user","content":"document %d"}]}`, i)
	}
	// Eight workers; request i's repeat (if any) is sent by the same worker
	// right after it, so repeats are sequential, never concurrent.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < distinct; i += 8 {
				n := 1
				if i < repeats {
					n = 2
				}
				for k := 0; k < n; k++ {
					r, b := h.post("/v1/chat/completions", body(i), map[string]string{"Groundhog-Operation": "extract"})
					if r.StatusCode != 200 {
						errs <- fmt.Errorf("call %d: %d %s", i, r.StatusCode, b)
						return
					}
					if k == 0 && r.Header.Get("Groundhog-Cost-USD") != "0.040000" {
						errs <- fmt.Errorf("call %d cost %s, want 0.040000", i, r.Header.Get("Groundhog-Cost-USD"))
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := h.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Operations) != 1 || rep.Operations[0].Operation != "extract" {
		t.Fatalf("operations %+v", rep.Operations)
	}
	r := rep.Operations[0]
	want := map[string]string{
		"calls": "4000", "distinct": "3400", "repeats": "600", "repeat_share": "0.1500",
		"repeat_cost_usd": "24.000000", "shadow_saved_usd": "24.000000", "projected_30d_usd": "720.000000",
		"spend_usd": "160.000000", "concurrent_identical": "0", "upstream_calls": "4000",
	}
	got := map[string]string{
		"calls": fmt.Sprint(r.Calls), "distinct": fmt.Sprint(r.Distinct), "repeats": fmt.Sprint(r.Repeats),
		"repeat_share": fmt.Sprintf("%.4f", r.RepeatShare), "repeat_cost_usd": r.RepeatCost.String(),
		"shadow_saved_usd": r.ShadowSaved.String(), "projected_30d_usd": r.Projected30d.String(),
		"spend_usd": r.Spend.String(), "concurrent_identical": fmt.Sprint(r.ConcurrentIdentical),
		"upstream_calls": fmt.Sprint(r.UpstreamCalls),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	// The provider's own bill agrees with the ledger's spend.
	if bill := h.bill(); bill.Calls != distinct+repeats || bill.USD.String() != r.Spend.String() {
		t.Errorf("sim bill = %d calls, $%s; ledger: %d calls, $%s", bill.Calls, bill.USD, r.Calls, r.Spend)
	}
}
