package contextapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/localgw"
)

// BenchmarkContextVsCacheHit compares, on one in-process gateway over
// loopback HTTP, assembling the context of a state with 100 findings
// (POST …/context) against a plain response-cache hit on
// /v1/chat/completions, the cheapest answer the gateway gives. It reports
// both per-request times and their ratio (context / cache hit), measured
// alternately in the same loop so both see the same machine load.
func BenchmarkContextVsCacheHit(b *testing.B) {
	g, err := localgw.Start(context.Background(), b.TempDir(), localgw.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	s := seedState("")
	for i := range 100 {
		s.Findings = append(s.Findings, fmt.Sprintf("Finding %d: worker %d timed out after the downstream acknowledged charge ch_%04d", i, i%7, i))
	}
	if _, err := g.DB.PutState(context.Background(), groundhog.StateVersion{Tenant: groundhog.LocalTenant, Session: "bench", State: s}, 0); err != nil {
		b.Fatal(err)
	}
	ctxBody := []byte(chatContext)
	chatBody := []byte(`{"model":"sim-small","messages":[{"role":"user","content":"Classify incident-1042 by severity."}]}`)
	send := func(url string, body []byte, hdr ...string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("%s: %d", url, res.StatusCode)
		}
	}
	ctxURL, chatURL := g.URL+"/groundhog/v1/sessions/bench/context", g.URL+"/v1/chat/completions"
	send(chatURL, chatBody, "Groundhog-Cache", "use") // the entry the hits read
	send(ctxURL, ctxBody)
	var tCtx, tHit time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		send(ctxURL, ctxBody)
		t1 := time.Now()
		send(chatURL, chatBody, "Groundhog-Cache", "use")
		tCtx += t1.Sub(t0)
		tHit += time.Since(t1)
	}
	b.ReportMetric(float64(tCtx.Nanoseconds())/float64(b.N), "ns/context")
	b.ReportMetric(float64(tHit.Nanoseconds())/float64(b.N), "ns/cache-hit")
	b.ReportMetric(float64(tCtx)/float64(tHit), "context/hit")
}
