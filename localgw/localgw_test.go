package localgw_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/localgw"
)

// The in-process gateway serves the Gemini API on the simulated provider:
// the official Go SDK, pointed at it with a custom base URL, gets an
// answer with usage from generateContent and the same answer from
// groundhog's cache when it asks again with Groundhog-Cache: use; the
// ledger books one row per call, of shape gemini, and the upstream call's
// cost is the simulated provider's bill.
func TestGeminiThroughLocalGateway(t *testing.T) {
	ctx := context.Background()
	g, err := localgw.Start(ctx, t.TempDir(), localgw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cl, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:  "any-key-while-keyless",
		Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: g.URL, Headers: http.Header{
			"Groundhog-Cache": {"use"}, "Groundhog-Operation": {"localgw"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var texts, caches []string
	for range 2 {
		res, err := cl.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Name three rivers of Europe."), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() == "" || res.UsageMetadata == nil || res.UsageMetadata.PromptTokenCount == 0 || res.UsageMetadata.CandidatesTokenCount == 0 {
			t.Fatalf("answer %q, usage %+v", res.Text(), res.UsageMetadata)
		}
		texts = append(texts, res.Text())
		caches = append(caches, res.SDKHTTPResponse.Headers.Get("Groundhog-Cache"))
	}
	if texts[1] != texts[0] || caches[0] != "miss" || caches[1] != "hit" {
		t.Fatalf("answers %q, Groundhog-Cache %v; want one answer, miss then hit", texts, caches)
	}
	if err := g.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []groundhog.LedgerEntry
	err = g.DB.ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		rows = append(rows, *e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bill := g.Sim.Bill()
	if len(rows) != 2 || bill.Calls != 1 {
		t.Fatalf("%d ledger rows, %d upstream calls; want 2 and 1", len(rows), bill.Calls)
	}
	for _, r := range rows {
		if r.Shape != groundhog.ShapeGemini || r.Operation != "localgw" {
			t.Errorf("row shape %q operation %q", r.Shape, r.Operation)
		}
		if r.Outcome != groundhog.OutcomeCacheHit && r.Cost != bill.USD {
			t.Errorf("upstream call booked at %s, the simulated provider billed %s", r.Cost, bill.USD)
		}
	}
}
