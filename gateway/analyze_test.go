package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/ledger/ledgertest"
	"github.com/groundhog-ai/groundhog/wire"
)

var shapePaths = map[groundhog.Shape]string{
	groundhog.ShapeChat:       "/v1/chat/completions",
	groundhog.ShapeResponses:  "/v1/responses",
	groundhog.ShapeMessages:   "/v1/messages",
	groundhog.ShapeEmbeddings: "/v1/embeddings",
}

// `groundhog analyze` on a request log gives the same figures as the live
// report of the same workload: a generated workload (four operations, four
// API shapes, two tenants, repeats, key-order and number-spelling variants,
// streams, a model without a price) is sent through the real gateway while
// the client writes the request log a team would have; the ledger report and
// the offline analysis of that log must be identical, field for field.
func TestAnalyzeMatchesLiveReport(t *testing.T) {
	calls := 3000
	if testing.Short() {
		calls = 600
	}
	h := newHarness(t)
	ctx := context.Background()
	keys := map[string]string{}
	for _, tenant := range []string{"acme", "globex"} {
		secret, k := groundhog.NewAPIKey(tenant, time.Now())
		if err := h.DB.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		keys[tenant] = secret
	}
	var log bytes.Buffer
	day := time.Now().UTC().Format(time.DateOnly)
	err := ledgertest.Generate(ledgertest.Options{Calls: calls, Tenants: []string{"acme", "globex"}, Seed: 7}, func(c *ledgertest.Call) error {
		send := c.Request
		if c.Shape == groundhog.ShapeChat && bytes.Contains(send, []byte(`"stream": true`)) {
			// The client asks for usage so its log can carry it; the
			// option is not part of the fingerprint.
			send = bytes.Replace(send, []byte(`"stream": true`), []byte(`"stream": true, "stream_options": {"include_usage": true}`), 1)
		}
		req, _ := http.NewRequest(http.MethodPost, h.URL+shapePaths[c.Shape], bytes.NewReader(send))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+keys[c.Tenant])
		req.Header.Set("Groundhog-Operation", c.Operation)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		if res.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", c.Shape, c.Request, res.StatusCode, body)
		}
		var u groundhog.Usage
		if res.Header.Get("Content-Type") == "text/event-stream" || bytes.HasPrefix(body, []byte("data:")) {
			var events []groundhog.Event
			rd := wire.NewSSEReader(bytes.NewReader(body))
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				events = append(events, ev)
			}
			_, u, err = wire.UsageFromEvents(c.Shape, events)
		} else {
			_, u, err = wire.UsageFromBody(c.Shape, body)
		}
		if err != nil {
			return err
		}
		line := *c
		line.Time, line.Duration, line.Usage, line.CostUSD, line.ShapeField = start.UTC(), time.Since(start), u, "", "path"
		log.Write(ledgertest.AppendJSONL(nil, &line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if time.Now().UTC().Format(time.DateOnly) != day {
		t.Skip("the workload crossed midnight UTC; the comparison needs one day")
	}
	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	offline, stats, err := ledger.Analyze(ctx, &log, ledger.AnalyzeOptions{Prices: h.Cfg.PriceTable})
	if err != nil {
		t.Fatal(err)
	}
	if len(offline) != 1 || stats.Calls != int64(calls) {
		t.Fatalf("analyze: %d reports, %d calls", len(offline), stats.Calls)
	}
	lj, _ := json.MarshalIndent(live, "", " ")
	oj, _ := json.MarshalIndent(offline[0], "", " ")
	if !bytes.Equal(lj, oj) {
		t.Fatalf("live report and offline analysis differ:\nlive:\n%s\noffline:\n%s", lj, oj)
	}
	if live.Total.Repeats == 0 || live.Total.UnknownCostCalls == 0 || len(live.Operations) != 4 {
		t.Fatalf("workload too plain to prove anything: %s", lj)
	}
}
