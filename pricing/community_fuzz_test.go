package pricing

import (
	"bytes"
	"math/big"
	"testing"
)

// FuzzPerTokenRate: an accepted rate is the input × 1e12 rounded half up —
// within half a unit, never further — and a non-negative in-range integer.
func FuzzPerTokenRate(f *testing.F) {
	for _, s := range []string{"3e-06", "0.000003", "1.5E-5", "0", "5e-13", "4.99e-13", "1", "-1e-6", "1e-30", "9.99999999999995e-07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := PerTokenRate(s)
		if err != nil {
			return
		}
		want, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("PerTokenRate(%q) = %d, but %q is no number", s, got, s)
		}
		want.Mul(want, big.NewRat(1_000_000_000_000, 1))
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(got), want)
		// got − exact ∈ (−0.5, 0.5]: half up.
		if diff.Cmp(big.NewRat(1, 2)) > 0 || diff.Cmp(big.NewRat(-1, 2)) <= 0 || got < 0 || got > maxRate {
			t.Fatalf("PerTokenRate(%q) = %d, exact %s", s, got, want.FloatString(3))
		}
	})
}

// FuzzParseCommunity: any input either fails or yields prices that are
// non-negative and in range; it never panics.
func FuzzParseCommunity(f *testing.F) {
	f.Add([]byte(`{"m": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05}}`))
	f.Add([]byte(`{"openai/m": {"input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06}, "anthropic/m": {"input_cost_per_token": 2e-06, "output_cost_per_token": 1e-06}}`))
	f.Add([]byte(`{"sample_spec": {"input_cost_per_token": 0, "output_cost_per_token": 0}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseCommunity(bytes.NewReader(b))
		if err != nil {
			return
		}
		for m, p := range tab {
			for _, r := range []int64{p.Input, p.CachedInput, p.CacheWrite, p.CacheWrite1h, p.Output} {
				if r < 0 || r > maxRate {
					t.Fatalf("%s: rate %d out of range", m, r)
				}
			}
		}
	})
}
