package bench

import (
	"strings"
	"testing"
	"time"
)

// A stall is charged to every request due during it: at 1000/s, request 0
// answered after 10ms holds the sender, which sends requests 1..9 late, all
// at once at 10ms, each answered 1ms after it was sent. Measured from when
// they were sent they would all look like 1ms; from their scheduled starts
// they took 10ms, 9ms, … 2ms.
func TestScheduleChargesStallsToScheduledStart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSchedule(t0, 1000)
	if s.interval != time.Millisecond {
		t.Fatalf("interval at 1000/s = %v, want 1ms", s.interval)
	}
	if got := s.due(7); !got.Equal(t0.Add(7 * time.Millisecond)) {
		t.Fatalf("request 7 due at %v, want t0+7ms", got.Sub(t0))
	}
	if got := s.latency(0, t0.Add(10*time.Millisecond)); got != 10*time.Millisecond {
		t.Errorf("request 0: %v, want 10ms", got)
	}
	sent := t0.Add(10 * time.Millisecond)
	var lat []time.Duration
	for i := 1; i <= 9; i++ {
		got := s.latency(i, sent.Add(time.Millisecond))
		if want := time.Duration(11-i) * time.Millisecond; got != want {
			t.Errorf("request %d sent late: %v, want %v (from its scheduled start)", i, got, want)
		}
		lat = append(lat, got)
	}
	lat = append(lat, 10*time.Millisecond)
	p50, p99 := quantiles(lat)
	if p50 != 6*time.Millisecond || p99 != 10*time.Millisecond {
		t.Errorf("p50 %v, p99 %v; want 6ms and 10ms", p50, p99)
	}
}

func TestScheduleRates(t *testing.T) {
	t0 := time.Unix(0, 0)
	for rate, want := range map[int]time.Duration{1: time.Second, 250: 4 * time.Millisecond, 3: 333333333} {
		if got := newSchedule(t0, rate).due(3).Sub(t0); got != 3*want {
			t.Errorf("rate %d: request 3 due at %v, want %v", rate, got, 3*want)
		}
	}
}

// The gateway's collections and bytes allocated are read from the Go
// collector's series of its /metrics; other series, including ones sharing
// a prefix, are not taken for them.
func TestParseGCStats(t *testing.T) {
	in := []byte(`# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0"} 2.1e-05
go_gc_duration_seconds_sum 0.0123
go_gc_duration_seconds_count 13
go_memstats_alloc_bytes 8.5e+06
go_memstats_alloc_bytes_total 2.71995536e+08
groundhog_requests_total 7
`)
	g, err := parseGCStats(in)
	if err != nil {
		t.Fatal(err)
	}
	if g.Cycles != 13 || g.Bytes != 2.71995536e+08 {
		t.Fatalf("got %+v, want 13 cycles and 271995536 bytes", g)
	}
	if _, err := parseGCStats([]byte("go_gc_duration_seconds_count 13\n")); err == nil {
		t.Fatal("no error without go_memstats_alloc_bytes_total")
	}
}

// The open-loop report sets the miss's added latency beside the bare
// proxy's, each over its own upstream-alone baseline.
func TestRateReportComparesMissWithBareProxy(t *testing.T) {
	r := &RateReport{Rate: 1000, Duration: time.Second, Body: BodyInfo{Label: "1KB", Bytes: 1775}, Results: []RateResult{
		{Name: "proxy-miss", Latency: Percentiles{N: 10, P50: 1300 * time.Microsecond, P99: 4 * time.Millisecond},
			Baseline: Percentiles{N: 10, P50: time.Millisecond, P99: 3 * time.Millisecond}},
		{Name: "miss", Latency: Percentiles{N: 10, P50: 1500 * time.Microsecond, P99: 6 * time.Millisecond},
			Baseline: Percentiles{N: 10, P50: 900 * time.Microsecond, P99: 2500 * time.Microsecond}},
	}}
	var b strings.Builder
	r.WriteMarkdown(&b)
	want := "A miss through groundhog adds 0.600 ms at p50 and 3.500 ms at p99 over the upstream alone; the bare proxy adds 0.300 ms and 1.000 ms."
	if !strings.Contains(b.String(), want) {
		t.Fatalf("report lacks %q:\n%s", want, b.String())
	}
	r.Results = r.Results[1:]
	b.Reset()
	r.WriteMarkdown(&b)
	if strings.Contains(b.String(), "bare proxy adds") {
		t.Fatalf("comparison printed without a proxy-miss result:\n%s", b.String())
	}
}

// The report says how late the load generator itself started requests: the
// worst p50 and p99 over every scenario and every upstream-alone run.
func TestRateReportShowsSenderLateness(t *testing.T) {
	r := &RateReport{Rate: 1000, Duration: time.Second, Body: BodyInfo{Label: "1KB", Bytes: 1775}, Results: []RateResult{
		{Name: "miss", Latency: Percentiles{N: 10, Late50: 40 * time.Microsecond, Late99: 150 * time.Microsecond},
			Baseline: Percentiles{N: 10, Late50: 60 * time.Microsecond, Late99: 120 * time.Microsecond}},
		{Name: "hit", Latency: Percentiles{N: 10, Late50: 50 * time.Microsecond, Late99: 900 * time.Microsecond},
			Baseline: Percentiles{Errors: 10, Late50: time.Second, Late99: time.Second}}, // nothing answered: no figure
	}}
	var b strings.Builder
	r.WriteMarkdown(&b)
	want := "The load generator started its requests 0.060 ms (p50) and 0.900 ms (p99) after their scheduled starts"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("report lacks %q:\n%s", want, b.String())
	}
}
