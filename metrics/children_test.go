package metrics

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// usd's fast path gives the same double as parsing the 12-decimal string.
func TestUSDMatchesDecimalParse(t *testing.T) {
	vals := []groundhog.Money{1, 7, 999_999, 1_000_000_000_000, 123_456_789_012_345, 1<<53 - 1, 1 << 53, 1<<53 + 1, math.MaxInt64 - 1}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		vals = append(vals, groundhog.Money(r.Int64N(1<<53)), groundhog.Money(r.Int64N(1<<20)))
	}
	for _, m := range vals {
		want, err := strconv.ParseFloat(m.Format(12), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := usd(m); got != want {
			t.Fatalf("usd(%d) = %v, want %v", m, got, want)
		}
	}
}

// Past the cache bound, children are still counted (uncached).
func TestChildCacheBounded(t *testing.T) {
	m := New(nil)
	n := maxCachedChildren + 50
	for i := range n {
		m.Observe(&groundhog.LedgerEntry{Tenant: "t" + strconv.Itoa(i), Outcome: groundhog.OutcomeCacheHit, Latency: time.Millisecond})
		m.Observe(&groundhog.LedgerEntry{Tenant: "t" + strconv.Itoa(i), Outcome: groundhog.OutcomeCacheHit, Latency: time.Millisecond})
	}
	if len(m.callsC.m) > maxCachedChildren {
		t.Fatalf("cache holds %d children, over the bound %d", len(m.callsC.m), maxCachedChildren)
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "groundhog_calls_total" {
			continue
		}
		if len(mf.Metric) != n {
			t.Fatalf("%d call series, want %d", len(mf.Metric), n)
		}
		for _, s := range mf.Metric {
			if v := s.GetCounter().GetValue(); v != 2 {
				t.Fatalf("series %v counted %v, want 2", s.Label, v)
			}
		}
		return
	}
	t.Fatal("no groundhog_calls_total")
}

func BenchmarkObserveHit(b *testing.B) {
	m := New(nil)
	e := &groundhog.LedgerEntry{Tenant: "local", Operation: strings.Repeat("o", 8), Outcome: groundhog.OutcomeCacheHit,
		Saved: 1234567, Latency: time.Millisecond, InFlight: true}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(e)
	}
}
