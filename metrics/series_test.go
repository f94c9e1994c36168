package metrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// gathered returns the value of every series of the metric name, by its
// label values (sorted by label name, as Gather gives them) joined with "|".
func gathered(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			k := ""
			for _, l := range s.GetLabel() {
				k += l.GetValue() + "|"
			}
			v := s.GetCounter().GetValue()
			if h := s.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[k] = v
		}
	}
	return out
}

// Rows sharing labels share one bundle of series; a series of the bundle
// appears in /metrics only once a row uses it, as it did before bundles.
func TestSeriesBundleLazy(t *testing.T) {
	m := New(nil)
	hit := groundhog.LedgerEntry{Tenant: "acme", Operation: "extract", Outcome: groundhog.OutcomeCacheHit, Latency: time.Millisecond}
	m.Observe(&hit)
	for _, name := range []string{"groundhog_saved_usd_total", "groundhog_concurrent_identical_total", "groundhog_cost_usd_total"} {
		if got := gathered(t, m, name); len(got) != 0 {
			t.Fatalf("%s has series %v before any row used it", name, got)
		}
	}
	saved := hit
	saved.Saved, saved.InFlight = 2*groundhog.Microdollar, true
	m.Observe(&saved)
	m.Observe(&saved)
	m.Observe(&hit)
	if got := gathered(t, m, "groundhog_calls_total")["extract|cache_hit|acme|"]; got != 4 {
		t.Fatalf("calls %v, want 4", got)
	}
	if got := gathered(t, m, "groundhog_request_duration_seconds")["extract|cache_hit|"]; got != 4 {
		t.Fatalf("latency observations %v, want 4", got)
	}
	if got := gathered(t, m, "groundhog_saved_usd_total")["extract|acme|"]; got != 4e-6 {
		t.Fatalf("saved %v, want 4e-6", got)
	}
	if got := gathered(t, m, "groundhog_concurrent_identical_total")["extract|acme|"]; got != 2 {
		t.Fatalf("concurrent identical %v, want 2", got)
	}
	if got := gathered(t, m, "groundhog_cost_usd_total"); len(got) != 0 {
		t.Fatalf("cost series %v: no row had a cost", got)
	}
}

// The bundle cache is bounded; past the bound rows are still counted.
func TestSeriesBundleBounded(t *testing.T) {
	m := New(nil)
	n := maxCachedChildren + 20
	for i := range n {
		e := groundhog.LedgerEntry{Tenant: "t" + strconv.Itoa(i), Outcome: groundhog.OutcomeCoalesced, Latency: time.Millisecond}
		m.Observe(&e)
		m.Observe(&e)
	}
	if got := m.seriesC.n.Load(); got > maxCachedChildren {
		t.Fatalf("%d bundles cached, over the bound %d", got, maxCachedChildren)
	}
	got := gathered(t, m, "groundhog_coalesced_followers_total")
	if len(got) != n {
		t.Fatalf("%d follower series, want %d", len(got), n)
	}
	for k, v := range got {
		if v != 2 {
			t.Fatalf("%s counted %v, want 2", k, v)
		}
	}
}
