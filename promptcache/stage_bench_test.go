package promptcache

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fanout"
)

// BenchmarkStageRatio: what the gateway's Stage (the shared-prefix digest
// and the warm-then-fan-out look-up) adds to the Tracker it wraps, on the
// 200 KB, 300-message agent request (the next turn of a known
// conversation), interleaved call by call; the ratio is the figure.
func BenchmarkStageRatio(b *testing.B) {
	body := agentBody(200<<10, 300)
	prev := agentPrefix(200<<10, 300, 297)
	ctx := context.Background()
	warm := func(tr *Tracker) *Request {
		req := &Request{Tenant: "t", Operation: "agent", Shape: messages, Body: prev, Breakpoints: true}
		call, _ := tr.Before(ctx, req)
		tr.After(ctx, call, groundhog.Usage{})
		req.Body = body
		return req
	}
	tr := NewTracker(Config{})
	treq := warm(tr)
	st := &Stage{Tracker: NewTracker(Config{}), FanOut: fanout.New(fanout.Config{})}
	sreq := warm(st.Tracker)
	var ratios []float64
	var tt, ts time.Duration
	for b.Loop() {
		t0 := time.Now()
		call, err := tr.Before(ctx, treq)
		if err != nil {
			b.Fatal(err)
		}
		tr.After(ctx, call, groundhog.Usage{CachedInputTokens: int64(call.Diagnosis.Expected)})
		t1 := time.Now()
		p := st.Before(ctx, sreq, true)
		p.Started(true)
		st.After(ctx, p, groundhog.Usage{CachedInputTokens: int64(p.call.Diagnosis.Expected)})
		p.Done()
		t2 := time.Now()
		tt += t1.Sub(t0)
		ts += t2.Sub(t1)
		ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
	}
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-x-tracker")
	b.ReportMetric(float64(ts)/float64(tt), "total-x-tracker")
}
