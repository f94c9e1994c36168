package fingerprint_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestASCIIEscapeMatchesOld: strings with \u00XX escapes for every XX (hex
// digits in both cases, invalid digits, truncated escapes, surrogates
// next to them), in bodies long enough for the string index (≥ 512 B,
// where the index's \u fast path runs) and short ones, against the old
// scanner: same hash, same canonical text, same error.
func TestASCIIEscapeMatchesOld(t *testing.T) {
	pad := strings.Repeat("x", 600)
	var escs []string
	for c := range 256 {
		escs = append(escs, fmt.Sprintf(`\u%04x`, c), fmt.Sprintf(`\u%04X`, c))
	}
	escs = append(escs, `\u00g1`, `\u00 1`, `\u0`, `\u00`, `\u007`, `\u00"`, `\ud83d\ude00`, `\ud83d`, `\u0100`, `\u1000`, `\uFFFF`, `\u003c\u003e\u0026`)
	for _, e := range escs {
		for _, body := range []string{
			`{"model":"m","content":"` + pad + e + `tail"}`,
			`{"model":"m","content":"` + pad + e + `"}`,
			`{"model":"m","content":"` + e + pad + `"}`,
			`{"model":"m","content":"` + pad + e,
			`{"content":"` + e + `"}`,
			`{"` + e + `":"` + pad + `"}`,
		} {
			checkSame(t, "acme", []byte(body))
		}
	}
}
