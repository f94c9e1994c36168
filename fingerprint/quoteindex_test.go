package fingerprint

import (
	"math/rand"
	"testing"
)

// quoteBitsSlow is QuoteIndex's definition, byte by byte.
func quoteBitsSlow(b []byte) []uint64 {
	q := make([]uint64, len(b)/64+1)
	run := 0
	for i, c := range b {
		if c == '"' && run%2 == 0 {
			q[i/64] |= 1 << (i % 64)
		}
		if c == '\\' {
			run++
		} else {
			run = 0
		}
	}
	return q
}

// TestQuoteIndexMatchesDefinition: random bodies rich in quotes and
// backslash runs of every length (across the 64-byte block edges), every
// length from 0 to 300 and a few large ones, the buffer reused.
func TestQuoteIndexMatchesDefinition(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD on this CPU")
	}
	for _, avx2 := range []bool{false, true} {
		noAVX512 = avx2
		rng := rand.New(rand.NewSource(1))
		alpha := []byte(`"\\\\a{}:, ` + "\x00\x1f\xff")
		var buf []uint64
		for n := 0; n < 2000; n++ {
			size := n % 301
			if n%100 == 0 {
				size = 5000 + rng.Intn(70000)
			}
			b := make([]byte, size)
			for i := range b {
				b[i] = alpha[rng.Intn(len(alpha))]
			}
			q, ok := QuoteIndex(b, buf)
			if !ok {
				t.Fatal("QuoteIndex declined with SIMD available")
			}
			want := quoteBitsSlow(b)
			if len(q) != len(want) {
				t.Fatalf("size %d: %d words, want %d", size, len(q), len(want))
			}
			for k := range want {
				if q[k] != want[k] {
					t.Fatalf("avx2-only %v, size %d: word %d = %064b, want %064b", avx2, size, k, q[k], want[k])
				}
			}
			buf = q
		}
	}
	noAVX512 = false
}
