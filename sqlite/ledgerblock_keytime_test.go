package sqlite

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// keyTimeOld is keyTime before its table-driven loop (docs/design/0004-sqlite-ledger-blocks.md),
// kept to hold the new one to it.
func keyTimeOld(id string) (int64, bool) {
	if len(id) != 32 {
		return 0, false
	}
	var v uint64
	for i := range 32 {
		c := id[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, false
		}
		if i < 16 {
			v = v<<4 | uint64(d)
		}
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

func checkKeyTime(t *testing.T, id string) {
	t.Helper()
	got, gok := keyTime(id)
	want, wok := keyTimeOld(id)
	if got != want || gok != wok {
		t.Fatalf("keyTime(%q) = %d, %v; the old keyTime gives %d, %v", id, got, gok, want, wok)
	}
}

// keyTime answers exactly as the old one: every byte value at every
// position of a valid id, the int64 boundary, lengths around 32, and random
// ids over an alphabet of hex digits, their neighbours and uppercase.
func TestKeyTimeMatchesOld(t *testing.T) {
	base := []string{
		strings.Repeat("0", 32), strings.Repeat("f", 32), strings.Repeat("9", 32), strings.Repeat("a", 32),
		"7fffffffffffffff" + strings.Repeat("f", 16), "8000000000000000" + strings.Repeat("0", 16),
		"187a3f0c9b2d4e5f0123456789abcdef",
	}
	for _, id := range base {
		checkKeyTime(t, id)
		for i := range len(id) {
			for c := range 256 {
				checkKeyTime(t, id[:i]+string(rune(c))[:1]+id[i+1:])
				b := []byte(id)
				b[i] = byte(c)
				checkKeyTime(t, string(b))
			}
		}
		for n := range 40 {
			checkKeyTime(t, (id + id)[:n])
		}
	}
	const alphabet = "0123456789abcdefABCDEF/:`g@G \x00\xff"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := make([]byte, 32)
		bad := rng.IntN(4) == 0
		for i := range b {
			if bad {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = "0123456789abcdef"[rng.IntN(16)]
			}
		}
		checkKeyTime(t, string(b))
	}
}

// FuzzKeyTimeMatchesOld holds keyTime to the old one on any input.
func FuzzKeyTimeMatchesOld(f *testing.F) {
	f.Add("187a3f0c9b2d4e5f0123456789abcdef")
	f.Add("8000000000000000" + strings.Repeat("0", 16))
	f.Add("bulk-00001")
	f.Fuzz(func(t *testing.T, id string) { checkKeyTime(t, id) })
}

// BenchmarkKeyTime: the old and the new keyTime over the same 4096
// gateway ids (groundhog.NewTimeID), in one process.
func BenchmarkKeyTime(b *testing.B) {
	ids := make([]string, 4096)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range ids {
		b := make([]byte, 32)
		for j := range b {
			b[j] = "0123456789abcdef"[rng.IntN(16)]
		}
		b[0] = '1'
		ids[i] = string(b)
	}
	for _, v := range []struct {
		name string
		fn   func(string) (int64, bool)
	}{{"old", keyTimeOld}, {"new", keyTime}} {
		b.Run(v.name, func(b *testing.B) {
			var sink int64
			for i := 0; b.Loop(); i++ {
				k, _ := v.fn(ids[i&4095])
				sink += k
			}
			if sink == 42 {
				b.Log(sink)
			}
		})
	}
}
