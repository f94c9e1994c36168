package groundhog

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// formatBefore is Money.Format as it was before it appended into one
// buffer: the reference the new one must match byte for byte.
func formatBefore(m Money, decimals int) string {
	if m == CostUnknown {
		return "unknown"
	}
	decimals = min(max(decimals, 0), 12)
	if m == math.MinInt64 {
		return TotalOf(m).Format(decimals)
	}
	neg := m < 0
	v := int64(m)
	if neg {
		v = -v
	}
	unit := int64(1)
	for i := 0; i < 12-decimals; i++ {
		unit *= 10
	}
	q := v / unit
	if r := v % unit; r >= unit-r {
		q++
	}
	scale := int64(1)
	for i := 0; i < decimals; i++ {
		scale *= 10
	}
	s := strconv.FormatInt(q/scale, 10)
	if decimals > 0 {
		frac := strconv.FormatInt(q%scale, 10)
		s += "." + strings.Repeat("0", decimals-len(frac)) + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}

func TestFormatMatchesBefore(t *testing.T) {
	vals := []Money{0, 1, -1, -2, 5, 9, 10, 499_999, 500_000, 999_999, 1_000_000, 4 * Microdollar * 1000, Dollar, -Dollar,
		Dollar - 1, 123_456_789_012_345, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, math.MaxInt64 - 499_999}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		vals = append(vals, Money(r.Int64()), Money(r.Int64N(1e13)), -Money(r.Int64N(1e9)), Money(r.Int64N(1000))*Microdollar)
	}
	vals = append(vals, CostUnknown)
	for _, m := range vals {
		if got, want := string(m.AppendString([]byte("x"))), "x"+m.String(); got != want {
			t.Fatalf("Money(%d).AppendString = %q, String %q", m, got, want)
		}
		if m == CostUnknown {
			continue
		}
		for d := -1; d <= 13; d++ {
			if got, want := m.Format(d), formatBefore(m, d); got != want {
				t.Fatalf("Money(%d).Format(%d) = %q, before %q", m, d, got, want)
			}
		}
	}
}
