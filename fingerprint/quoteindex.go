package fingerprint

// QuoteIndex returns the bitmap of the quotes of b that are not escaped:
// bit i of word k is set iff b[64k+i] is '"' and no odd run of backslashes
// ends right before it. A string's closing quote is the first set bit after
// its opening quote (a backslash run inside a string cannot reach back past
// that quote), so a walker finds string ends with a trailing-zero count
// instead of a search and a backslash count per quote. The result has
// len(b)/64 + 1 words (no bit beyond len(b) is set); it is buf's array when
// buf has the room, so a caller can reuse it.
//
// It is the first of the two bitmaps Compute's string index builds (the
// same assembly, index_amd64.s) and needs AVX2 and BMI1/2 on amd64; ok is
// false (and q nil) where the assembly is not available: the caller then
// finds string ends its own way.
func QuoteIndex(b []byte, buf []uint64) (q []uint64, ok bool) {
	if !haveSIMD {
		return nil, false
	}
	nb := len(b)/64 + 1
	bits := buf
	if cap(bits) < 2*nb {
		bits = make([]uint64, 2*nb)
	}
	bits = bits[:2*nb]
	carry := index(b, bits, 0)
	var tail [64]byte
	whole := len(b) &^ 63
	copy(tail[:], b[whole:])
	index(tail[:], bits[2*(nb-1):], carry)
	return quoteWords(bits, bits), true // in place
}

// quoteWords returns the quote words of index bits (the even slots: two
// words per 64-byte block, the quotes first) in dst's array when it has
// the room; dst may be bits itself (slot 2k moves to k, never over a slot
// still to read).
func quoteWords(dst, bits []uint64) []uint64 {
	nb := len(bits) / 2
	if cap(dst) < nb {
		dst = make([]uint64, nb)
	}
	dst = dst[:nb]
	for k := range dst {
		dst[k] = bits[2*k]
	}
	return dst
}
