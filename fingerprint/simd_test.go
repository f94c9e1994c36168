package fingerprint

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// refStrRun is strRun written byte by byte: the contract of strRunAVX2
// (scan_amd64.s) over the whole 32-byte blocks of b.
func refStrRun(b []byte) (n int, bs bool) {
	limit := len(b) &^ 31
	for i := 0; i < limit; {
		switch c := b[i]; {
		case c == '"' || c < 0x20:
			return i, bs
		case c == '\\':
			if i+1 >= limit {
				return i, bs // the escape is left whole to the caller
			}
			if !canonicalEscape[b[i+1]] {
				return i, bs
			}
			bs = true
			i += 2
		default:
			i++
		}
	}
	return limit, bs
}

// checkSIMD compares the assembly with its references on b and on every
// suffix of it (every alignment of the blocks): strRun with refStrRun,
// validUTF8 with utf8.Valid, the string index with refIndex, and Compute and Canonicalize with and
// without them.
func checkSIMD(t *testing.T, b []byte) {
	t.Helper()
	if !haveSIMD {
		t.Skip("no AVX2/BMI2: only the generic path exists here")
	}
	for i := range b {
		if n, bs := strRun(b[i:]); true {
			if rn, rbs := refStrRun(b[i:]); n != rn || bs != rbs {
				t.Fatalf("strRun(%q) = %d, %v; want %d, %v", b[i:], n, bs, rn, rbs)
			}
		}
		if i < 256 || i%7 == 0 {
			checkValidUTF8(t, b[i:])
			checkIndex(t, b[i:])
		}
	}
	for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeMessages} {
		p := Params{Shape: shape, Tenant: "t", Versions: "v"}
		got, gerr := computeQuotes(t, p, b)
		want, werr := compute(p, b, false)
		if got != want || errString(gerr) != errString(werr) {
			t.Fatalf("compute(%s, %q): simd %+v %v, generic %+v %v", shape, b, got, gerr, want, werr)
		}
		noFused = true // the two passes (validUTF8, buildIndex) instead of indexUTF8AVX512/AVX2
		got, gerr = computeQuotes(t, p, b)
		noFused = false
		if got != want || errString(gerr) != errString(werr) {
			t.Fatalf("compute(%s, %q) in two passes: simd %+v %v, generic %+v %v", shape, b, got, gerr, want, werr)
		}
		if haveAVX512 {
			noAVX512 = true // the AVX2 variants (indexUTF8AVX2)
			got, gerr = computeQuotes(t, p, b)
			noAVX512 = false
			if got != want || errString(gerr) != errString(werr) {
				t.Fatalf("compute(%s, %q) with AVX2: simd %+v %v, generic %+v %v", shape, b, got, gerr, want, werr)
			}
		}
	}
	got, gerr := canonicalize(b, true)
	want, werr := canonicalize(b, false)
	if !bytes.Equal(got, want) || errString(gerr) != errString(werr) {
		t.Fatalf("canonicalize(%q): simd %q %v, generic %q %v", b, got, gerr, want, werr)
	}
}

// computeQuotes is compute with the assembly, checking the quote bitmap
// it leaves: QuoteIndex's, whenever the body was fingerprinted; none when
// it was refused.
func computeQuotes(t *testing.T, p Params, b []byte) (Result, error) {
	t.Helper()
	quotes := []uint64{1, 2, 3} // stale words: the call must not leave them
	res, err := computeQuoted(p, b, true, &quotes)
	want, _ := QuoteIndex(b, nil)
	switch {
	case err != nil && len(quotes) != 0:
		t.Fatalf("%q refused (%v) but a quote bitmap was left", b, err)
	case err == nil && !slices.Equal(quotes, want):
		t.Fatalf("%q: quote bitmap %x, QuoteIndex %x", b, quotes, want)
	}
	return res, err
}

// utf8Scanner is checkValidUTF8's scanner (the tests do not run in
// parallel).
var utf8Scanner scanner

// checkValidUTF8 compares validUTF8AVX2, indexUTF8AVX2 and, where the CPU has it,
// validUTF8AVX512 with utf8.Valid.
func checkValidUTF8(t *testing.T, b []byte) {
	t.Helper()
	want := utf8.Valid(b)
	if got := validUTF8AVX2(b); got != want {
		t.Fatalf("validUTF8AVX2(%q) = %v; want %v", b, got, want)
	}
	s := &utf8Scanner // its bits are reused: no allocation per check
	s.in = b
	noAVX512 = true
	if got := s.buildIndexUTF8(); got != want {
		t.Fatalf("indexUTF8AVX2(%q) valid = %v; want %v", b, got, want)
	}
	noAVX512 = false
	if haveAVX512 {
		if got := validUTF8AVX512(b); got != want {
			t.Fatalf("validUTF8AVX512(%q) = %v; want %v", b, got, want)
		}
		noAVX512 = false
		if got := s.buildIndexUTF8(); got != want {
			t.Fatalf("indexUTF8AVX512(%q) valid = %v; want %v", b, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// simdSeeds: every fuzz corpus entry and golden line of the package, the
// benchmark bodies, and strings dense in the bytes the assembly classifies.
func simdSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		benchbody.Chat(1<<10, benchbody.Options{Stream: true}),
		benchbody.Chat(8<<10, benchbody.Options{}),
		[]byte(`{"a":"` + `\\\"\\\\\"\n\t\/\u00e9` + `"}`),
		[]byte(`{"k":"` + string(bytes.Repeat([]byte(`\\`), 40)) + `\"x"}`),
		[]byte(`{"k":"` + string(bytes.Repeat([]byte("é✅🚀a"), 20)) + `"}`),
	}
	dirs, _ := filepath.Glob("testdata/fuzz/*")
	for _, dir := range append(dirs, "testdata/golden") {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				tb.Fatal(err)
			}
			seeds = append(seeds, data)
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				if lit, ok := bytes.CutPrefix(line, []byte("[]byte(")); ok {
					if u, err := strconv.Unquote(string(bytes.TrimSuffix(lit, []byte(")")))); err == nil {
						line = []byte(u)
					}
				}
				seeds = append(seeds, line)
			}
		}
	}
	return seeds
}

// TestSIMDMatchesGeneric: the assembly against its references on every
// corpus input, and on random strings made of the bytes it classifies
// (quotes, runs of backslashes, escape letters, control and multibyte
// bytes, truncated sequences), long enough to span several blocks.
func TestSIMDMatchesGeneric(t *testing.T) {
	for _, b := range simdSeeds(t) {
		checkSIMD(t, b)
	}
	alphabet := []string{`"`, `\`, `\\`, `\"`, "\n", "\x01", "\x1f", " ", "a", "b", "n", "u", "/", "t", "é", "\xc3", "\xa9", "\xe2\x9c", "\x85", "\xf0\x9f\x9a\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xff", "0"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b []byte
		if r.IntN(2) == 0 {
			b = append(b, `{"k":"`...)
		}
		for n := r.IntN(160); n > 0; n-- {
			b = append(b, alphabet[r.IntN(len(alphabet))]...)
		}
		if r.IntN(2) == 0 {
			b = append(b, `"}`...)
		}
		checkSIMD(t, b)
	}
}

// TestValidUTF8Exhaustive: validUTF8 against utf8.Valid for every
// sequence of one or two bytes and every three-byte one that starts with a
// non-ASCII byte, at both ends of a block (where the previous block's
// bytes carry in and where the last block is padded), with ASCII after it
// or not.
func TestValidUTF8Exhaustive(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2/BMI2")
	}
	pad := bytes.Repeat([]byte("a"), 128)
	buf := make([]byte, 0, 128)
	for n := 1; n <= 3; n++ {
		limit := 1 << (8 * n)
		for v := range limit {
			var seq [3]byte
			for k := range n {
				seq[k] = byte(v >> (8 * k))
			}
			if n == 3 && seq[0] < 0x80 {
				continue // an ASCII byte and a shorter sequence
			}
			if n == 3 && raceOn && v%17 != 0 {
				continue // see raceOn
			}
			ats := []int{0, 31, 32 - n, 61, 64 - n, 125}
			if n == 3 {
				ats = []int{31, 61, 62, 125, 126} // 62, 126: across a 64-byte block end (indexUTF8AVX2)
			}
			for _, at := range ats {
				b := append(append(buf[:0], pad[:at]...), seq[:n]...)
				checkValidUTF8(t, b)
				checkValidUTF8(t, append(b, pad[:40]...))
			}
		}
	}
}

// FuzzSIMD: the assembly against its references on any input.
func FuzzSIMD(f *testing.F) {
	for _, b := range simdSeeds(f) {
		if len(b) < 4<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSIMD(t, b) })
}
