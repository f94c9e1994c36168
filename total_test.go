package groundhog

import (
	"math"
	"math/big"
	"testing"
)

func TestTotalExactBeyondMoney(t *testing.T) {
	// $10^12 in $200,000 steps: far past int64 picodollars, exact.
	var tot Total
	step := 200_000 * Dollar
	for range 5_000_000 {
		tot = tot.Add(step)
	}
	if got, want := tot.String(), "1000000000000.000000"; got != want {
		t.Fatalf("5e6 × $200,000 = %s, want %s", got, want)
	}
	if got := tot.Times(30).Format(2); got != "30000000000000.00" {
		t.Fatalf("× 30 = %s", got)
	}
	if _, ok := tot.Money(); ok {
		t.Fatal("a $10^12 total claims to fit a Money")
	}
	if m, ok := TotalOf(12345 * Microdollar).Money(); !ok || m != 12345*Microdollar {
		t.Fatalf("small total as Money = %v %v", m, ok)
	}
	for _, m := range []Money{0, 1, -1, 499_999, 500_000, -500_000, math.MaxInt64, math.MinInt64 + 1, math.MinInt64, 4_000_000_000} {
		for _, d := range []int{0, 2, 6, 12} {
			if got, want := TotalOf(m).Format(d), m.Format(d); m != CostUnknown && got != want {
				t.Errorf("TotalOf(%d).Format(%d) = %s, Money says %s", m, d, got, want)
			}
		}
	}
	if f := TotalOf(1500 * Microdollar).Float64(); f != 0.0015 {
		t.Errorf("Float64 = %v", f)
	}
}

func TestTotalArithmeticMatchesBig(t *testing.T) {
	vals := []Money{0, 1, -1, math.MaxInt64, math.MinInt64, 123456789, -987654321}
	for _, a := range vals {
		for _, b := range vals {
			want := new(big.Int).Add(big.NewInt(int64(a)), big.NewInt(int64(b)))
			got := TotalOf(a).Add(b)
			if got.big().Cmp(want) != 0 || got.Overflow() {
				t.Fatalf("%d + %d = %s, want %s", a, b, got.big(), want)
			}
			if s := got.Sign(); s != want.Sign() {
				t.Fatalf("sign of %s = %d", want, s)
			}
		}
	}
}

// Beyond the 128-bit range a Total is marked overflowed, never wrapped.
func TestTotalOverflowIsMarked(t *testing.T) {
	big := TotalOf(math.MaxInt64).Times(1 << 62).Times(2) // 2^126 - 2^63
	if big.Overflow() {
		t.Fatal("2^126 overflowed")
	}
	if o := big.Plus(big).Plus(big); !o.Overflow() || o.String() != "overflow" {
		t.Fatalf("3 × 2^126 = %s, want overflow", o)
	}
	if o := big.Times(4); !o.Overflow() {
		t.Fatal("2^128 × ... not marked")
	}
	if o := big.Times(4).Add(1); !o.Overflow() {
		t.Fatal("overflow is not sticky")
	}
	neg := TotalOf(math.MinInt64).Times(1 << 62).Times(2) // -2^126
	if o := neg.Plus(neg); o.Overflow() {
		t.Fatal("-2^127 is in range")
	}
	if o := neg.Plus(neg).Add(-1); !o.Overflow() {
		t.Fatal("-2^127 - 1 not marked")
	}
}

// Price.Cost of absurd token counts is unknown, never a wrapped figure.
func TestPriceCostOverflowIsUnknown(t *testing.T) {
	p := Price{Input: 15_000_000, CachedInput: 1_500_000, CacheWrite: 18_750_000, Output: 75_000_000}
	if c := p.Cost(Usage{InputTokens: 1000, OutputTokens: 10}); c != 1000*15_000_000+10*75_000_000 {
		t.Fatalf("cost = %d", c)
	}
	for _, u := range []Usage{
		{OutputTokens: 1 << 40},                                       // 1.1e12 × 75e6: past int64
		{InputTokens: math.MaxInt64 / 10_000_000},                     // one term fits, ×15e6 does not
		{OutputTokens: 100_000_000_000, InputTokens: 500_000_000_000}, // the sum overflows
		{OutputTokens: -5},
	} {
		if c := p.Cost(u); c != CostUnknown {
			t.Errorf("Cost(%+v) = %d, want CostUnknown", u, c)
		}
	}
}
