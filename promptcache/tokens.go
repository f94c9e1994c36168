package promptcache

import (
	"bytes"
	"encoding/binary"
	"unicode"
	"unicode/utf8"
)

// countTokens is sim.CountTokens — every whitespace-separated word counts
// ceil(len/4) tokens — with the same result for every input (pinned by
// TestCountTokensMatchesSim), in a form for the stage's hot path: ASCII
// bytes are classified by a table and runs of plain word bytes are skipped
// eight at a time, where sim.CountTokens decodes every rune and asks
// unicode.IsSpace.
func countTokens(s []byte) int {
	n, start := 0, -1
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				if start >= 0 {
					n += (i - start + 3) / 4
					start = -1
				}
				i++
				continue
			}
			if start < 0 {
				start = i
			}
			i++
			// Inside a word: skip 8 bytes at a time while none is a
			// control/space byte (< 0x21) or non-ASCII (≥ 0x80).
			for i+8 <= len(s) {
				w := binary.LittleEndian.Uint64(s[i : i+8])
				if ((w-0x2121212121212121)&^w|w)&0x8080808080808080 != 0 {
					break
				}
				i += 8
			}
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if unicode.IsSpace(r) {
			if start >= 0 {
				n += (i - start + 3) / 4
				start = -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		n += (len(s) - start + 3) / 4
	}
	return n
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
