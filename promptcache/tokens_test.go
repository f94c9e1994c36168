package promptcache

import (
	"encoding/binary"
	"math/rand"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog/internal/benchbody"
	"github.com/groundhog-ai/groundhog/sim"
)

// countTokensBytewise is the byte loop countTokens replaced (ASCII bytes
// classified by a table, runs of word bytes skipped eight at a time): the
// baseline of BenchmarkCountTokens.
func countTokensBytewise(s []byte) int {
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

// countBoth returns countTokens(b) with the assembly classification and
// without it, failing when they differ.
func countBoth(t testing.TB, b []byte) int {
	t.Helper()
	got := countTokens(b)
	noWordsAVX2 = true
	gen := countTokens(b)
	noWordsAVX2 = false
	if got != gen {
		t.Fatalf("%q: countTokens %d with the assembly, %d without", b, got, gen)
	}
	return got
}

// TestCountTokensAcrossBlocks: the count equals sim.CountTokens for words
// of every length ending at every offset of a 64-byte block, for spaces
// of every kind there, and for runes cut by a block's end.
func TestCountTokensAcrossBlocks(t *testing.T) {
	spaces := []string{" ", "\t", "\n", "\v", "\f", "\r", "\u0085", "\u00a0", "\u2003", "\u3000"}
	words := []string{"x", "é", "日", "🚀", "\xff", "\x00", "\x1f", "!", "\u200b"}
	for pad := range 70 {
		for wl := 1; wl < 140; wl += 1 + wl/16 {
			for _, sp := range spaces {
				for _, w := range words {
					s := strings.Repeat("a", pad) + sp + strings.Repeat(w, wl) + sp + strings.Repeat("b", wl%9) + sp
					for _, in := range []string{s, s[:len(s)-len(sp)], strings.Repeat(s, 3)} {
						if got, want := countBoth(t, []byte(in)), sim.CountTokens(in); got != want {
							t.Fatalf("%q: countTokens %d, sim.CountTokens %d", in, got, want)
						}
					}
				}
			}
		}
	}
	// Long inputs from the pieces of TestCountTokensMatchesSim.
	rng := rand.New(rand.NewSource(2))
	for range 2000 {
		var b strings.Builder
		for k := rng.Intn(400); k > 0; k-- {
			switch rng.Intn(4) {
			case 0:
				b.WriteString(spaces[rng.Intn(len(spaces))])
			case 1:
				b.WriteString(words[rng.Intn(len(words))])
			default:
				b.WriteString(strings.Repeat("w", rng.Intn(12)))
			}
		}
		s := b.String()
		if got, want := countBoth(t, []byte(s)), sim.CountTokens(s); got != want {
			t.Fatalf("%q: countTokens %d, sim.CountTokens %d", s, got, want)
		}
	}
}

// FuzzCountTokens: the count equals sim.CountTokens on any bytes, at
// every alignment of the first block.
func FuzzCountTokens(f *testing.F) {
	f.Add([]byte("hello world"))
	f.Add([]byte(strings.Repeat("abc def\u00a0ghij\t", 9)))
	f.Add([]byte("\xe3\x80\x80" + strings.Repeat("z", 62) + "\u3000tail"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for off := 0; off < min(len(b), 4); off++ {
			if got, want := countBoth(t, b[off:]), sim.CountTokens(string(b[off:])); got != want {
				t.Fatalf("%q: countTokens %d, sim.CountTokens %d", b[off:], got, want)
			}
		}
	})
}

// BenchmarkCountTokens: the count on the text of the bench's bodies (the
// whole body read as text: words, JSON punctuation, escapes), bitmap and
// the byte loop it replaced, alternating in one run.
func BenchmarkCountTokens(b *testing.B) {
	bodies := []struct {
		name string
		body []byte
	}{
		{"chat200KB", benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small"})},
		{"agent200KB", agentBody(200<<10, 300)},
	}
	for _, c := range bodies {
		want := sim.CountTokens(string(c.body))
		for _, v := range []struct {
			name string
			fn   func([]byte) int
		}{{"bytewise", countTokensBytewise}, {"bitmap", countTokens}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.body)))
				for b.Loop() {
					if v.fn(c.body) != want {
						b.Fatal("wrong count")
					}
				}
			})
		}
	}
}

// TestSpaceAtIsUnicodeSpace: spaceAt finds exactly the runes beyond ASCII
// that unicode.IsSpace reports, whole, and nothing in their bytes cut
// short or followed by anything.
func TestSpaceAtIsUnicodeSpace(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		b := utf8.AppendRune(nil, r)
		want := 0
		if unicode.IsSpace(r) {
			want = len(b)
		}
		if got := spaceAt(append(b, 'x'), 0); got != want {
			t.Fatalf("spaceAt(%U) = %d, want %d", r, got, want)
		}
		if want > 0 {
			if got := spaceAt(b[:len(b)-1], 0); got != 0 {
				t.Fatalf("spaceAt(%U cut short) = %d", r, got)
			}
		}
	}
}

// TestWordsAVX2MatchesGo: the assembly's bitmaps of whole blocks are
// blockWords's, for every byte value at every position of a block and for
// random blocks of the bytes that matter (spaces, leads, their neighbours).
func TestWordsAVX2MatchesGo(t *testing.T) {
	if !haveWordsAVX2 {
		t.Skip("no AVX2 here: blockWords is the only classification")
	}
	check := func(b []byte) {
		t.Helper()
		masks := make([]uint64, 2*(len(b)/64))
		wordsAVX2(b, masks)
		for k := range len(b) / 64 {
			N, leads := blockWords(b, 64*k)
			if masks[2*k] != N || masks[2*k+1] != leads {
				t.Fatalf("block %d of %q: assembly %x %x, Go %x %x", k, b[64*k:64*k+64], masks[2*k], masks[2*k+1], N, leads)
			}
		}
	}
	for c := range 256 {
		b := make([]byte, 128)
		for i := range b {
			b[i] = 'a'
		}
		for i := 0; i < 128; i += 7 {
			b[i] = byte(c)
		}
		check(b)
	}
	interesting := []byte{' ', '\t', '\n', '\v', '\f', '\r', 0x08, 0x0e, 0x1f, 0x21, 'a', 0x7f, 0x80, 0x85, 0xa0, 0xc1, 0xc2, 0xc3, 0xdf, 0xe0, 0xe1, 0xe2, 0xe3, 0xe4, 0xef, 0xf0, 0xfc, 0xff}
	rng := rand.New(rand.NewSource(4))
	for range 5000 {
		b := make([]byte, 64*(1+rng.Intn(4)))
		for i := range b {
			b[i] = interesting[rng.Intn(len(interesting))]
		}
		check(b)
	}
}
