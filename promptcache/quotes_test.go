package promptcache

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// TestRequestQuotes: a caller's quote bitmap of the body is read instead
// of one built again, with the same prefix; one of the wrong length, or of
// a body the stage rewrote first (a stable prompt_cache_key added), is not.
func TestRequestQuotes(t *testing.T) {
	body := benchbody.Chat(64<<10, benchbody.Options{Model: "sim-small"})
	if !WantsQuotes(len(body)) {
		t.Fatalf("no bitmap read for a %d-byte body", len(body))
	}
	var quotes []uint64
	if _, err := fingerprint.ComputeQuoted(fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}, body, &quotes); err != nil {
		t.Fatal(err)
	}
	if len(quotes) == 0 {
		t.Skip("no assembly here: the fingerprint builds no bitmap")
	}
	ctx := context.Background()
	before := func(req *Request) (*Call, error) { return NewTracker(Config{}).Before(ctx, req) }
	want, err := before(&Request{Tenant: "t", Operation: "o", Shape: groundhog.ShapeChat, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	got, err := before(&Request{Tenant: "t", Operation: "o", Shape: groundhog.ShapeChat, Body: body, Quotes: quotes})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.prefix.Segments, want.prefix.Segments) || got.Diagnosis != want.Diagnosis {
		t.Fatalf("with the caller's bitmap: %d segments, diagnosis %+v; built: %d, %+v",
			len(got.prefix.Segments), got.Diagnosis, len(want.prefix.Segments), want.Diagnosis)
	}
	// A bitmap with no quote at all is read (no string ends: the body is
	// refused), which shows the caller's is the one read...
	blank := make([]uint64, len(quotes))
	if _, err := before(&Request{Tenant: "t", Operation: "o", Shape: groundhog.ShapeChat, Body: body, Quotes: blank}); err == nil {
		t.Fatal("a blank bitmap of the body's length was not read")
	}
	// ...but not when its length is another body's,
	if _, err := before(&Request{Tenant: "t", Operation: "o", Shape: groundhog.ShapeChat, Body: body, Quotes: blank[1:]}); err != nil {
		t.Fatalf("a bitmap of another length was read: %v", err)
	}
	// nor when the stage sends other bytes than the body's.
	c, err := before(&Request{Tenant: "t", Operation: "o", Shape: groundhog.ShapeChat, Body: body, Quotes: blank, CacheKey: true})
	if err != nil || c.Key == "" {
		t.Fatalf("with a cache key added: key %q, %v", c.Key, err)
	}
}

// BenchmarkFingerprintThenStage: a miss's fingerprint and prompt-cache
// stage on the bench's 200 KB chat body (the conversation known), the
// stage reading the fingerprint's quote bitmap or building its own,
// interleaved call by call; it reports both and the median ratio.
func BenchmarkFingerprintThenStage(b *testing.B) {
	body := benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small"})
	ctx := context.Background()
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}
	st := &Stage{Tracker: NewTracker(Config{})}
	var quotes []uint64
	run := func(q *[]uint64) time.Duration {
		t0 := time.Now()
		if _, err := fingerprint.ComputeQuoted(p, body, q); err != nil {
			b.Fatal(err)
		}
		req := &Request{Tenant: "t", Operation: "bench", Shape: groundhog.ShapeChat, Body: body}
		if q != nil {
			req.Quotes = *q
		}
		runStage(ctx, st, req)
		return time.Since(t0)
	}
	run(nil)
	if run(&quotes); len(quotes) == 0 {
		b.Skip("no assembly here: no bitmap to share")
	}
	var ratios []float64
	var built, shared time.Duration
	for b.Loop() {
		tb := run(nil)
		ts := run(&quotes)
		built += tb
		shared += ts
		ratios = append(ratios, float64(ts)/float64(tb))
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(built.Microseconds())/float64(len(ratios)), "built-µs")
	b.ReportMetric(float64(shared.Microseconds())/float64(len(ratios)), "shared-µs")
	b.ReportMetric(ratios[len(ratios)/2], "median-shared-x-built")
}
