package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/localgw"
)

// The example's whole run against an in-process gateway: what it prints
// is what it measured.
func TestAgentRun(t *testing.T) {
	ctx := context.Background()
	g, err := localgw.Start(ctx, t.TempDir(), localgw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var progress bytes.Buffer
	sum, err := Run(ctx, Options{GatewayURL: g.URL, Session: "t", Steps: 6, FlushLedger: g.Ledger.Flush}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Refunds != 1 || sum.RefundAttempts != 2 {
		t.Errorf("refunds %d of %d attempts, want exactly 1 of 2", sum.Refunds, sum.RefundAttempts)
	}
	if sum.CacheHits != 5 {
		t.Errorf("cache hits %d, want 5 (every lookup after the first)", sum.CacheHits)
	}
	if !sum.ConstraintsIntact || sum.FinalVersion != 7 {
		t.Errorf("state: version %d, constraints intact %v", sum.FinalVersion, sum.ConstraintsIntact)
	}
	// The evidence stays out of the prompt: each step sends far less than
	// the 4,000-line log alone.
	if sum.SentInputTokens*20 > sum.FullInputTokens {
		t.Errorf("sent %d input tokens, the full transcript %d", sum.SentInputTokens, sum.FullInputTokens)
	}
	// The provider's bill agrees: 6 steps + 1 lookup upstream, 7 calls.
	if b := g.Sim.Bill(); b.Calls != 7 {
		t.Errorf("the sim billed %d calls, want 7", b.Calls)
	}
	var out bytes.Buffer
	if err := sum.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent.classify", "agent.step", "1 refund performed", "constraints intact: true", "the full transcript would have sent"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRealMainInProcess(t *testing.T) {
	var out bytes.Buffer
	if err := realMain(context.Background(), &out, "", "", 2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "in-process gateway") || !strings.Contains(out.String(), "duplicate-work report") {
		t.Errorf("output:\n%s", out.String())
	}
}
