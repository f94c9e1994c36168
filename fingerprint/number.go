package fingerprint

import (
	"math"
	"strconv"
)

// appendNumber appends f as ECMAScript's Number.prototype.toString prints it
// (ECMA-262 Number::toString, the form RFC 8785 §3.2.2.3 prescribes): the
// shortest digits that round-trip, plain notation for 1e-7 < |f| < 1e21,
// exponent notation ("1e+21", "1.5e-7") outside, and "0" for both zeros.
// f must be finite.
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if math.Signbit(f) {
		dst = append(dst, '-')
		f = -f
	}
	// strconv's shortest round-trip digits, in the form "d.ddde±xx".
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [24]byte
	k := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	i++ // 'e'
	neg := e[i] == '-'
	exp := 0
	for _, c := range e[i+1:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	// ECMA-262 names: the value is 0.d1d2…dk × 10^n.
	n := exp + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := 0; j < n-k; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := 0; j < -n; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// plainDecimal reports whether tok, a number token with a fraction and no
// exponent (RFC 8259 grammar, already checked), is the canonical text of
// the double it denotes, so it can be copied instead of parsed and
// printed: at most 15 significant digits, no trailing zero in the
// fraction, and not below 1e-6 (where ECMAScript switches to exponent
// notation). A decimal of at most 15 significant digits is the shortest
// text that rounds to its double (two such decimals never round to the
// same double: DBL_DIG is 15), so strconv's shortest digits are its
// digits, and in this range ECMAScript prints them in plain notation as
// written (TestPlainDecimalMatchesAppendNumber compares).
func plainDecimal(tok []byte) bool {
	i := 0
	if tok[0] == '-' {
		i = 1
	}
	sig := 0 // significant digits
	if tok[i] == '0' {
		i++ // "0.": only the fraction's digits after its leading zeros count
	} else {
		for tok[i] != '.' {
			i++
			sig++
		}
	}
	i++ // '.'
	frac := tok[i:]
	if len(frac) == 0 || frac[len(frac)-1] == '0' {
		return false
	}
	if sig == 0 {
		z := 0
		for frac[z] == '0' {
			z++
		}
		if z > 5 { // 0.000000d… is below 1e-6: exponent notation
			return false
		}
		sig = len(frac) - z
	} else {
		sig += len(frac)
	}
	return sig <= 15
}
