package fingerprint

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// refIndex is buildIndex written byte by byte: the bitmaps indexAVX2
// (index_amd64.s) must give for b padded with zero bytes to whole blocks.
func refIndex(b []byte) []uint64 {
	nb := len(b)/64 + 1
	out := make([]uint64, 2*nb)
	escaped := false // the byte at i follows an unescaped backslash
	for i := range 64 * nb {
		var c byte
		if i < len(b) {
			c = b[i]
		}
		bit := uint64(1) << (i & 63)
		w := 2 * (i >> 6)
		if c == '"' && !escaped {
			out[w] |= bit
		}
		if c < 0x20 || (escaped && !canonicalEscape[c]) {
			out[w+1] |= bit
		}
		escaped = c == '\\' && !escaped
	}
	return out
}

// checkIndex compares the string index of b with refIndex, built by
// indexAVX2 and, where the CPU has it, by indexAVX512.
func checkIndex(t *testing.T, b []byte) {
	t.Helper()
	defer func() { noAVX512 = false }()
	want := refIndex(b)
	// buildIndex, then the one pass that also checks UTF-8 (indexUTF8AVX2,
	// and indexUTF8AVX512 where the CPU has it): same bitmaps, valid or not.
	for _, pass := range []struct {
		name  string
		build func(*scanner)
	}{
		{"index", func(s *scanner) { s.buildIndex() }},
		{"indexUTF8", func(s *scanner) { s.buildIndexUTF8() }},
	} {
		for _, off := range []bool{true, false} {
			if !off && !haveAVX512 {
				continue
			}
			noAVX512 = off
			var s scanner
			s.in = b
			pass.build(&s)
			diffIndex(t, pass.name+" (AVX-512 "+strconv.FormatBool(!off)+")", b, s.bits, want)
		}
	}
}

func diffIndex(t *testing.T, what string, b []byte, got, want []uint64) {
	t.Helper()
	if !slicesEqual(got, want) {
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%s of %q: word %d (block %d, %s) = %064b; want %064b", what, b, k, k/2, [2]string{"quotes", "not as they are"}[k%2], got[k], want[k])
			}
		}
		t.Fatalf("%s of %q: %d words; want %d", what, b, len(got), len(want))
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIndexMatchesReference: indexAVX2 against refIndex on every byte
// value after a backslash and alone, and on random texts dense in
// backslash runs, quotes and escape letters that cross block boundaries
// (the carry of an odd run into the next block).
func TestIndexMatchesReference(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2/BMI2")
	}
	pad := bytes.Repeat([]byte("a"), 130)
	for c := range 256 {
		for _, at := range []int{0, 1, 31, 32, 62, 63, 64, 127} {
			for _, pre := range []string{"", `\`, `\\`, `\\\`} {
				b := append(append(append([]byte{}, pad[:at]...), pre...), byte(c))
				checkIndex(t, b)
				checkIndex(t, append(b, pad[:70]...))
			}
		}
	}
	alphabet := []string{`"`, `\`, `\`, `\`, `\\`, "\n", "\x00", "\x1f", " ", "a", "b", "f", "n", "r", "t", "u", "/", "é", "\xff", "\x7f", "\x80"}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b []byte
		for n := r.IntN(400); n > 0; n-- {
			b = append(b, alphabet[r.IntN(len(alphabet))]...)
		}
		checkIndex(t, b)
	}
}
