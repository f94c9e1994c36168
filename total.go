package groundhog

import (
	"math/big"
	"math/bits"
	"strings"
)

// Total is an exact sum of Money amounts: picodollars as a 128-bit two's
// complement integer, so report sums and projections stay exact far beyond
// Money's int64 (about ±1.7×10^26 dollars; Money stops near 9.2 million).
// Arithmetic that would leave that range does not wrap: it marks the Total
// overflowed (Overflow), and such a Total formats as "overflow" and makes a
// report an error, never a wrong figure. The zero value is 0. Totals are
// comparable with ==.
type Total struct {
	hi   int64
	lo   uint64
	over bool
}

// TotalOf returns m as a Total. CostUnknown is a real -1 here: callers sum
// known amounts only.
func TotalOf(m Money) Total {
	return Total{hi: int64(m) >> 63, lo: uint64(m)}
}

// Add returns t + m.
func (t Total) Add(m Money) Total {
	return t.Plus(TotalOf(m))
}

// Plus returns t + u.
func (t Total) Plus(u Total) Total {
	lo, carry := bits.Add64(t.lo, u.lo, 0)
	h, _ := bits.Add64(uint64(t.hi), uint64(u.hi), carry)
	hi := int64(h)
	// Signed overflow of a+b+carry: both operands of one sign, the result
	// of the other.
	over := (t.hi >= 0) == (u.hi >= 0) && (hi >= 0) != (t.hi >= 0)
	return Total{hi: hi, lo: lo, over: t.over || u.over || over}
}

// Times returns t × k.
func (t Total) Times(k int64) Total {
	if t.over {
		return t
	}
	return totalOfBig(new(big.Int).Mul(t.big(), big.NewInt(k)))
}

// Overflow reports whether an operation left the 128-bit range: t is then
// no amount at all.
func (t Total) Overflow() bool { return t.over }

// Sign returns -1, 0 or +1.
func (t Total) Sign() int {
	switch {
	case t.hi < 0:
		return -1
	case t.hi == 0 && t.lo == 0:
		return 0
	}
	return 1
}

// Money returns t as a Money and whether it fits (and did not overflow).
func (t Total) Money() (Money, bool) {
	if t.over || t.hi != int64(t.lo)>>63 {
		return 0, false
	}
	return Money(t.lo), true
}

// Float64 returns t in dollars, rounded to a float: for charts only, never
// for money arithmetic.
func (t Total) Float64() float64 {
	f, _ := new(big.Rat).SetFrac(t.big(), big.NewInt(int64(Dollar))).Float64()
	return f
}

// String renders t with six decimals, like Money.
func (t Total) String() string { return t.Format(6) }

// Format renders t in dollars with the given number of decimals (0–12),
// rounding half away from zero, exactly as Money.Format does for amounts
// that fit a Money. An overflowed Total renders as "overflow".
func (t Total) Format(decimals int) string {
	if t.over {
		return "overflow"
	}
	decimals = min(max(decimals, 0), 12)
	v := t.big()
	neg := v.Sign() < 0
	v.Abs(v)
	unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(12-decimals)), nil)
	v.Add(v, new(big.Int).Rsh(unit, 1))
	v.Quo(v, unit)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)
	whole, frac := new(big.Int).QuoRem(v, scale, new(big.Int))
	s := whole.String()
	if decimals > 0 {
		f := frac.String()
		s += "." + strings.Repeat("0", decimals-len(f)) + f
	}
	if neg {
		s = "-" + s
	}
	return s
}

var two128 = new(big.Int).Lsh(big.NewInt(1), 128)

func (t Total) big() *big.Int {
	v := new(big.Int).Lsh(big.NewInt(t.hi), 64)
	return v.Add(v, new(big.Int).SetUint64(t.lo))
}

// totalOfBig converts v, marking an overflow outside [-2^127, 2^127).
func totalOfBig(v *big.Int) Total {
	if v.BitLen() > 127 && !(v.Sign() < 0 && v.BitLen() == 128 && new(big.Int).Neg(v).TrailingZeroBits() == 127) {
		return Total{over: true}
	}
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, two128)
	}
	lo := new(big.Int).And(u, new(big.Int).SetUint64(^uint64(0))).Uint64()
	hi := new(big.Int).Rsh(u, 64).Uint64()
	return Total{hi: int64(hi), lo: lo}
}
