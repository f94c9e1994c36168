package promptcache

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// countTokens is sim.CountTokens — every whitespace-separated word counts
// ceil(len/4) tokens — with the same result for every input (pinned by
// TestCountTokensMatchesSim and FuzzCountTokens), in a form for the stage's
// hot path. It counts the tokens where they start instead of the words
// where they end: a token starts at every fourth byte of a word, counted
// from the word's first byte, so a word of n bytes holds ceil(n/4) starts.
// The body is taken 64 bytes at a time as a bitmap of its non-space bytes
// (N; bit i is byte i). Word starts are N without its predecessor; a byte
// four on from a token start, with the bytes between it and that start in
// the word too, starts a token as well: starting from the word starts, a
// shift by four masked by "this byte and the three before it are in a
// word" finds the next starts of every word of the block at once, and is
// repeated until none is left (once or twice for prose, up to sixteen
// times for a block inside one long word). Where the CPU has AVX2 the
// bitmaps of whole blocks come from wordsAVX2 (words_amd64.s), else from
// blockWords; clearSpaces takes the spaces beyond ASCII out of them.
//
// On the bench's 200 KB bodies it is 8–9 times as fast as the byte loop
// it replaced, 2.2–2.4 times without the assembly (BenchmarkCountTokens).
func countTokens(s []byte) int {
	n := 0
	var prevN, prevT uint64 // the previous block's bitmaps (bits 60–63 are read)
	spaceLeft := 0
	// count adds the token starts of the block whose word bytes are N.
	count := func(N uint64) {
		p1 := N<<1 | prevN>>63
		in4 := N & p1 & (N<<2 | prevN>>62) & (N<<3 | prevN>>61)
		T := N&^p1 | prevT>>60&in4
		for x := T; x != 0; {
			x = x << 4 & in4
			T |= x
		}
		n += bits.OnesCount64(T)
		prevN, prevT = N, T
	}
	var masks [2 * asmBlocks]uint64
	for base := 0; base < len(s); {
		if nb := (len(s) - base) / 64; nb > 0 && haveWordsAVX2 && !noWordsAVX2 {
			// Whole blocks, classified by the assembly a run at a time.
			nb = min(nb, asmBlocks)
			wordsAVX2(s[base:base+64*nb], masks[:2*nb])
			for k := range nb {
				var N uint64
				N, spaceLeft = clearSpaces(s, base, masks[2*k], masks[2*k+1], spaceLeft)
				count(N)
				base += 64
			}
			continue
		}
		N, leads := blockWords(s, base)
		N, spaceLeft = clearSpaces(s, base, N, leads, spaceLeft)
		count(N)
		base += 64
	}
	return n
}

// asmBlocks is how many blocks countTokens has the assembly classify at a
// time (their bitmaps live on its stack).
const asmBlocks = 32

// noWordsAVX2 makes countTokens classify every block in Go (tests compare).
var noWordsAVX2 bool

// blockWords returns the bitmaps of the block of s at base (64 bytes, or
// the rest of s) that wordsAVX2 returns for a whole block: its bytes that
// are not ASCII spaces (every byte of 0x80 or more is among them), and its
// bytes 0xc2 and 0xe0–0xe3. Eight bytes are classified at once.
func blockWords(s []byte, base int) (N, leads uint64) {
	const hi, lo7 = 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	end := min(base+64, len(s))
	i := base
	for ; i+8 <= end; i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		y := x & lo7 // no sum below carries from one byte into the next
		// A byte's top bit says y ≥ 9, y ≥ 14, y ≠ 0x20.
		ctl := (y + 0x7777777777777777) &^ (y + 0x7272727272727272) // 0x09–0x0d
		nsp := (y ^ 0x2020202020202020) + lo7                       // not 0x20
		word := (^ctl&nsp | x) & hi
		// Gather the top bits: byte j's lands in bit j.
		N |= (word >> 7 * 0x0102040810204080 >> 56) << (i - base)
		if x&hi != 0 {
			leads |= (maySpaceLeads(x, y) >> 7 * 0x0102040810204080 >> 56) << (i - base)
		}
	}
	for ; i < end; i++ {
		c := s[i]
		if c >= utf8.RuneSelf || !asciiSpace[c] {
			N |= 1 << (i - base)
		}
		if c == 0xc2 || c >= 0xe0 && c <= 0xe3 {
			leads |= 1 << (i - base)
		}
	}
	return N, leads
}

// clearSpaces returns N, the word bytes of the block of s at base (every
// byte of 0x80 or more counted in), without the bytes of its spaces beyond
// ASCII. spaceLeft bytes at the block's start are the rest of a space begun
// in the block before; it returns how many of the next block's are.
//
// The only spaces beyond ASCII are U+0085 and U+00A0 (lead byte 0xc2) and
// U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F and U+3000
// (0xe1–0xe3). Any other byte of 0x80 or more is in a word however it
// decodes, and each of those lead bytes starts a rune where
// sim.CountTokens's decoding starts one (a continuation byte is never one
// of them). So a space is looked for only at the block's leads (spaceAt).
func clearSpaces(s []byte, base int, N, leads uint64, spaceLeft int) (uint64, int) {
	N &^= 1<<spaceLeft - 1
	spaceLeft = 0
	for ; leads != 0; leads &= leads - 1 {
		j := bits.TrailingZeros64(leads)
		if size := spaceAt(s, base+j); size > 0 {
			N &^= (1<<size - 1) << j // bytes past the block's end are the next block's
			spaceLeft = max(0, j+size-64)
		}
	}
	return N, spaceLeft
}

// spaceAt returns the length of the space beyond ASCII whose UTF-8 starts
// at s[i] (0 when none does): U+0085 and U+00A0 (c2 85, c2 a0), U+1680
// (e1 9a 80), U+2000–U+200A (e2 80 80–8a), U+2028, U+2029, U+202F (e2 80
// a8, a9, af), U+205F (e2 81 9f) and U+3000 (e3 80 80), the runes
// unicode.IsSpace reports beyond ASCII (TestSpaceAtIsUnicodeSpace). Bytes
// that do not spell a rune whole decode to U+FFFD, which is not a space.
func spaceAt(s []byte, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	b1 := s[i+1]
	if s[i] == 0xc2 {
		if b1 == 0x85 || b1 == 0xa0 {
			return 2
		}
		return 0
	}
	if i+2 >= len(s) {
		return 0
	}
	b2 := s[i+2]
	switch s[i] {
	case 0xe1:
		if b1 == 0x9a && b2 == 0x80 {
			return 3
		}
	case 0xe2:
		if b1 == 0x80 && (b2 >= 0x80 && b2 <= 0x8a || b2 == 0xa8 || b2 == 0xa9 || b2 == 0xaf) || b1 == 0x81 && b2 == 0x9f {
			return 3
		}
	case 0xe3:
		if b1 == 0x80 && b2 == 0x80 {
			return 3
		}
	}
	return 0
}

// maySpaceLeads returns, in the top bit of each byte, the bytes of x
// (y = x without the top bits) that are 0xc2 or 0xe0–0xe3: a superset of
// the lead bytes of the non-ASCII spaces.
func maySpaceLeads(x, y uint64) uint64 {
	const hi, lo7 = 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	e := (y ^ 0x6060606060606060) + 0x7c7c7c7c7c7c7c7c // top bit: low 7 bits ∉ 0x60–0x63
	c := (y ^ 0x4242424242424242) + lo7                // top bit: low 7 bits ≠ 0x42
	return x & ^(e & c) & hi
}

// asciiSpace is unicode.IsSpace for the ASCII bytes.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// countString counts the tokens of the decoded JSON string at v (0 when v
// is not a string), decoding escapes into a reused buffer.
func (bd *builder) countString(v span) int {
	b := bd.p.body
	if !v.ok() || b[v.start] != '"' {
		return 0
	}
	raw := b[v.start+1 : v.end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return countTokens(raw)
	}
	bd.unesc = unescapeAppend(bd.unesc[:0], raw)
	return countTokens(bd.unesc)
}
