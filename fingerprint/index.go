package fingerprint

import (
	"encoding/binary"
	"math/bits"
)

// The string index: with the assembly (simd), reset classifies the whole
// body once, 64 bytes at a time (indexAVX2), into two bitmaps per 64-byte
// block: the quotes that are not escaped, and the bytes a string may not
// hold as they are (control characters, the escaped byte of \/, \u or an
// invalid escape). str then finds a string's end by a trailing-zero count
// on the first bitmap, and knows from the second whether the string's
// canonical form is its input bytes (only canonical escapes inside): the
// common case, one span copy and no call per string. Any other string
// (and every string of a body that is not valid UTF-8) goes through the
// byte-level scan, which reports errors and decodes escapes as before.
//
// A byte's escape status does not depend on where strings start: it is
// escaped iff an odd run of backslashes ends right before it, and the
// opening quote of a string ends any run, so inside a string the bitmaps
// say what a scan from its opening quote would find.

// noIndex switches the string index off: only the tests and benchmarks set
// it, to compare with the code without it (BenchmarkSpanCPU*).
var noIndex bool

// noAVX512 makes the index use indexAVX2 where indexAVX512 would run: the
// tests check both.
var noAVX512 bool

// buildIndex fills s.bits for s.in: len(in)/64 + 1 blocks, the last one
// padded with zero bytes (control characters: no string ends there).
func (s *scanner) buildIndex() {
	in := s.in
	nb := len(in)/64 + 1
	if cap(s.bits) < 2*nb {
		s.bits = make([]uint64, 2*nb, 2*nb+2*nb/16)
	}
	s.bits = s.bits[:2*nb]
	carry := index(in, s.bits, 0)
	var tail [64]byte
	whole := len(in) &^ 63
	copy(tail[:], in[whole:])
	index(tail[:], s.bits[2*(nb-1):], carry)
}

// strEnd returns the offset of the closing quote of the string whose
// opening quote is at o, and whether the bytes between hold only what a
// canonical string holds as it is (no control character, only canonical
// escapes). When not, or when no closing quote follows, ok is false and
// nothing is known: the byte-level scan decides.
func (s *scanner) strEnd(o int) (end int, ok bool) {
	i := o + 1
	b := s.bits
	w := i >> 6
	sh := uint(i & 63)
	q, d := b[2*w]>>sh, b[2*w+1]>>sh
	for {
		if q != 0 {
			n := bits.TrailingZeros64(q)
			if d&(1<<n-1) != 0 {
				return 0, false
			}
			return w<<6 + int(sh) + n, true
		}
		if d != 0 {
			return 0, false
		}
		w++
		sh = 0
		if 2*w >= len(b) {
			return 0, false
		}
		q, d = b[2*w], b[2*w+1]
	}
}

// nextStop returns the offset of the first unescaped quote or byte a
// string may not hold as it is at or after i (quote tells which), or -1
// when there is none in the index.
func (s *scanner) nextStop(i int) (p int, quote bool) {
	b := s.bits
	w := i >> 6
	sh := uint(i & 63)
	q, d := b[2*w]>>sh, b[2*w+1]>>sh
	for {
		if m := q | d; m != 0 {
			n := bits.TrailingZeros64(m)
			return w<<6 + int(sh) + n, q>>n&1 != 0
		}
		w++
		sh = 0
		if 2*w >= len(b) {
			return -1, false
		}
		q, d = b[2*w], b[2*w+1]
	}
}

// strIndexed is str for a string with escapes to rewrite (\/, \u): from
// stop to stop of the index, the spans between copied and each escape
// decoded by escape. It reports ok false, having written nothing, for
// anything else (a control character, an unterminated string, an invalid
// escape): the byte-level scan then reports the error as it always did.
func (s *scanner) strIndexed(start int) (ok bool) {
	in := s.in
	mark := len(s.out)
	from, i := start, start+1
	for {
		p, quote := s.nextStop(i)
		if p < 0 || p >= len(in) {
			break
		}
		if quote {
			s.out = append(s.out, in[from:p+1]...)
			s.pos = p + 1
			return true
		}
		if in[p] < 0x20 || in[p-1] != '\\' {
			break
		}
		s.out = append(s.out, in[from:p-1]...)
		next, err := s.escape(p - 1)
		if err != nil {
			break
		}
		from, i = next, next
	}
	s.out = s.out[:mark]
	return false
}

// noFused makes reset run the UTF-8 check and the string index as two
// passes where buildIndexUTF8 would do both in one: only the tests and
// benchmarks set it.
var noFused bool

// fused says whether reset builds the index and checks UTF-8 in one pass
// (indexUTF8AVX512, or indexUTF8AVX2 without AVX-512).
func fused() bool { return !noFused }

// buildIndexUTF8 is buildIndex and validUTF8 in one pass over s.in
// (indexUTF8AVX512, or indexUTF8AVX2): it fills s.bits and reports whether
// s.in is valid UTF-8. The bitmaps are the same whatever it reports.
func (s *scanner) buildIndexUTF8() (valid bool) {
	in := s.in
	nb := len(in)/64 + 1
	if cap(s.bits) < 2*nb {
		s.bits = make([]uint64, 2*nb, 2*nb+2*nb/16)
	}
	s.bits = s.bits[:2*nb]
	if haveAVX512 && !noAVX512 {
		return indexUTF8AVX512(in, s.bits)
	}
	var st [96]byte
	carry := indexUTF8AVX2(in, s.bits, &st, 0)
	var tail [64]byte
	whole := len(in) &^ 63
	copy(tail[:], in[whole:])
	indexUTF8AVX2(tail[:], s.bits[2*(nb-1):], &st, carry)
	var bad uint64
	for i := 32; i < 96; i += 8 {
		bad |= binary.LittleEndian.Uint64(st[i:])
	}
	return bad == 0
}
