package fingerprint

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestPlainDecimalMatchesAppendNumber: wherever plainDecimal says a
// fraction token is canonical as written, the slow path (ParseFloat, then
// appendNumber) prints exactly the token. Random tokens around every
// bound: 1–18 significant digits, 0–8 leading zeros of the fraction,
// trailing zeros, signs, and the decimals nearest the 15-digit limit.
func TestPlainDecimalMatchesAppendNumber(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int, first bool) string {
		var b strings.Builder
		for i := range n {
			c := byte('0' + r.IntN(10))
			if i == 0 && first && c == '0' {
				c = '1' + byte(r.IntN(9))
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	fast, missed := 0, 0
	check := func(tok string) {
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		slow := string(appendNumber(nil, f))
		if plainDecimal([]byte(tok)) {
			if slow != tok {
				t.Fatalf("plainDecimal(%s) = true, but its canonical form is %s", tok, slow)
			}
			fast++
		} else if slow == tok {
			missed++
		}
	}
	for range 300000 {
		var tok string
		if r.IntN(2) == 0 { // "0.000ddd"
			tok = "0." + strings.Repeat("0", r.IntN(9)) + digits(1+r.IntN(18), false)
		} else {
			tok = digits(1+r.IntN(17), true) + "." + digits(1+r.IntN(17), false)
		}
		if r.IntN(4) == 0 {
			tok = "-" + tok
		}
		check(tok)
	}
	// Hand-picked bounds.
	for _, tok := range []string{
		"0.5", "-0.5", "0.0", "-0.0", "0.10", "1.0", "0.000001", "0.0000001", "0.0000015",
		"0.1234567890123456", "0.123456789012345", "123456789012345.5", "12345678901234.5",
		"0.30000000000000004", "0.3", "9007199254740993.5", "999999999999999.9", "0.000009999999999999999",
		"1.7976931348623157", "0.2", "0.87", "0.77", "0.6699999999999999",
	} {
		check(tok)
	}
	if fast == 0 {
		t.Fatal("no token took the fast path")
	}
	t.Logf("fast %d, canonical but not recognized %d", fast, missed)
}
