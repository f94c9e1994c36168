package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
)

// overheadRig is a harness whose rows also go through the observers a
// deployment runs (metrics and spans), with the simulated provider taking
// firstToken to answer and perOutputToken between output tokens.
type overheadRig struct {
	h       *harness
	metrics *metrics.Metrics
	spans   *tracetest.InMemoryExporter
	mu      sync.Mutex
	rows    []groundhog.LedgerEntry // with UpstreamWait, which no store keeps
}

func newOverheadRig(t *testing.T, firstToken, perOutputToken time.Duration) *overheadRig {
	r := &overheadRig{metrics: metrics.New(nil), spans: tracetest.NewInMemoryExporter()}
	tp := observe.NewProvider(sdktrace.WithSyncer(r.spans), "test")
	obs := &observe.Recorder{Metrics: r.metrics, Tracer: tp.Tracer("test")}
	r.h = newHarness(t, func(s *setup) {
		s.sim.FirstToken, s.sim.PerOutputToken = firstToken, perOutputToken
		s.onRow = func(e groundhog.LedgerEntry, st []groundhog.Stage) {
			_ = obs.RecordStages(e, st)
			r.mu.Lock()
			r.rows = append(r.rows, e)
			r.mu.Unlock()
		}
	})
	return r
}

func (r *overheadRig) client(extra ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(r.h.URL + "/v1"), option.WithAPIKey("k"),
		option.WithHeader("Groundhog-Cache", "use"), option.WithMaxRetries(0)}, extra...)...)
}

func (r *overheadRig) rowsSoFar() []groundhog.LedgerEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]groundhog.LedgerEntry(nil), r.rows...)
}

// scrape reads /metrics as Prometheus would.
func (r *overheadRig) scrape(t *testing.T) string {
	srv := httptest.NewServer(r.metrics.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// A miss against a provider that takes 80ms books almost all of its time as
// upstream wait and an overhead far below the provider's latency; the hit
// that follows books an overhead > 0 and no upstream wait. Both reach
// /metrics under their route and outcome, and their spans carry the figure.
func TestOverheadMissAndHit(t *testing.T) {
	const upstream = 80 * time.Millisecond
	r := newOverheadRig(t, upstream, 0)
	ctx := context.Background()
	client := r.client()
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("overhead please")}}
	for i := 0; i < 2; i++ {
		if _, err := client.Chat.Completions.New(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	rows := r.rowsSoFar()
	if len(rows) != 2 || rows[0].Outcome != groundhog.OutcomeUpstream || rows[1].Outcome != groundhog.OutcomeCacheHit {
		t.Fatalf("rows %+v, want an upstream call then a cache hit", rows)
	}
	miss, hit := rows[0], rows[1]
	if miss.Latency < upstream || miss.UpstreamWait < upstream {
		t.Errorf("miss: latency %v, upstream wait %v; both must be at least the provider's %v", miss.Latency, miss.UpstreamWait, upstream)
	}
	if o := metrics.Overhead(&miss); o <= 0 || o >= upstream/4 {
		t.Errorf("miss overhead %v (latency %v - wait %v), want > 0 and far below the provider's %v", o, miss.Latency, miss.UpstreamWait, upstream)
	}
	if hit.UpstreamWait != 0 || metrics.Overhead(&hit) <= 0 || metrics.Overhead(&hit) != hit.Latency {
		t.Errorf("hit: upstream wait %v, overhead %v, latency %v; want no wait and all of its time as overhead", hit.UpstreamWait, metrics.Overhead(&hit), hit.Latency)
	}

	text := r.scrape(t)
	for _, want := range []string{
		"# TYPE groundhog_overhead_seconds histogram",
		`groundhog_overhead_seconds_count{outcome="upstream",route="chat"} 1`,
		`groundhog_overhead_seconds_count{outcome="cache_hit",route="chat"} 1`,
		`groundhog_overhead_seconds_bucket{outcome="upstream",route="chat",le="1e-05"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The miss's overhead is under 20ms: it is counted in that bucket, its
	// whole latency (over 80ms) would not be.
	if !strings.Contains(text, `groundhog_overhead_seconds_bucket{outcome="upstream",route="chat",le="0.025"} 1`) {
		t.Errorf("the miss's overhead is not in the 25ms bucket:\n%s", grepLines(text, "groundhog_overhead_seconds"))
	}

	var got []float64
	for _, sp := range r.spans.GetSpans() {
		for _, a := range sp.Attributes {
			if a.Key == "groundhog.overhead_ms" {
				got = append(got, a.Value.AsFloat64())
			}
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d spans carry groundhog.overhead_ms, want 2", len(got))
	}
	if want := float64(metrics.Overhead(&miss)) / 1e6; got[0] != want || got[0] >= float64(upstream/time.Millisecond) {
		t.Errorf("miss span groundhog.overhead_ms %v, want %v (its row's), below %v", got[0], want, upstream)
	}
	if got[1] <= 0 {
		t.Errorf("hit span groundhog.overhead_ms %v, want > 0", got[1])
	}
}

// A follower that joins a flight 100ms into the leader's 300ms upstream
// call waits only for the rest of it: its upstream wait is the part of its
// own time the flight spent waiting, and its overhead stays small.
func TestOverheadCoalescedFollower(t *testing.T) {
	const upstream = 300 * time.Millisecond
	r := newOverheadRig(t, upstream, 0)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("shared work")}}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := r.client()
			if _, err := client.Chat.Completions.New(ctx, params); err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	var leader, follower *groundhog.LedgerEntry
	rows := r.rowsSoFar()
	for i := range rows {
		switch rows[i].Outcome {
		case groundhog.OutcomeUpstream:
			leader = &rows[i]
		case groundhog.OutcomeCoalesced:
			follower = &rows[i]
		}
	}
	if leader == nil || follower == nil {
		t.Fatalf("rows %+v, want an upstream call and a coalesced follower", rows)
	}
	if follower.UpstreamWait <= 0 || follower.UpstreamWait >= leader.UpstreamWait {
		t.Errorf("follower's upstream wait %v, want > 0 and below the leader's %v (it joined late)", follower.UpstreamWait, leader.UpstreamWait)
	}
	if o := metrics.Overhead(follower); o <= 0 || o >= upstream/4 {
		t.Errorf("follower's overhead %v (latency %v - wait %v), want > 0 and far below %v", o, follower.Latency, follower.UpstreamWait, upstream)
	}
	if !strings.Contains(r.scrape(t), `groundhog_overhead_seconds_count{outcome="coalesced",route="chat"} 1`) {
		t.Error("/metrics has no coalesced overhead")
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A streamed miss relays the provider's events as they come: the time the
// provider takes to its first event and between events is upstream wait,
// not overhead.
func TestOverheadStreamedMiss(t *testing.T) {
	const first, perToken = 40 * time.Millisecond, 2 * time.Millisecond
	r := newOverheadRig(t, first, perToken)
	ctx := context.Background()
	client := r.client()
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream it")}}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	rows := r.rowsSoFar()
	if len(rows) != 1 || rows[0].Outcome != groundhog.OutcomeUpstream || !rows[0].Stream {
		t.Fatalf("rows %+v, want one streamed upstream call", rows)
	}
	row := rows[0]
	// At least the first token's wait and one gap per further chunk.
	minWait := first + time.Duration(max(chunks-3, 0))*perToken
	if row.UpstreamWait < minWait {
		t.Errorf("upstream wait %v over %d chunks, want at least %v", row.UpstreamWait, chunks, minWait)
	}
	if o := metrics.Overhead(&row); o <= 0 || o >= first/2 {
		t.Errorf("streamed miss overhead %v (latency %v - wait %v), want > 0 and far below %v", o, row.Latency, row.UpstreamWait, minWait)
	}
}
