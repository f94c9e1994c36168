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
						if got, want := countTokens([]byte(in)), sim.CountTokens(in); got != want {
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
		if got, want := countTokens([]byte(s)), sim.CountTokens(s); got != want {
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
			if got, want := countTokens(b[off:]), sim.CountTokens(string(b[off:])); got != want {
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
