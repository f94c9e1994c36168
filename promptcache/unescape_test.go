package promptcache

import (
	"bytes"
	"math/rand"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// unescapeBytewise is the byte loop unescapeAppend replaced: the reference
// of TestUnescapeMatchesBytewise and FuzzUnescape, and the baseline of
// BenchmarkUnescape.
func unescapeBytewise(out, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if i+4 < len(raw) {
				r, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 32)
				if err == nil {
					i += 4
					rr := rune(r)
					if utf16.IsSurrogate(rr) && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
						if r2, err := strconv.ParseUint(string(raw[i+3:i+7]), 16, 32); err == nil {
							if d := utf16.DecodeRune(rr, rune(r2)); d != utf8.RuneError {
								rr = d
								i += 6
							}
						}
					}
					out = utf8.AppendRune(out, rr)
					continue
				}
			}
			out = append(out, '\\', 'u')
		default:
			out = append(out, raw[i])
		}
	}
	return out
}

// TestUnescapeMatchesBytewise: random strings of escapes (valid, cut
// short, surrogate pairs whole, lone and mismatched) and text decode as
// the byte loop decoded them, appended after what out held.
func TestUnescapeMatchesBytewise(t *testing.T) {
	pieces := []string{`\n`, `\t`, `\r`, `\b`, `\f`, `\"`, `\\`, `\/`, `\u0041`, `\u00e9`, `\u65e5`, `\ud83d\ude80`, `\ud83d`, `\ude80`,
		`\ud83d\u0041`, `\u12`, `\uzzzz`, `\u+123`, `\x`, `\`, "plain text ", "日本", "é", `"`, "\xff"}
	rng := rand.New(rand.NewSource(3))
	for range 20000 {
		var raw []byte
		for k := rng.Intn(30); k > 0; k-- {
			raw = append(raw, pieces[rng.Intn(len(pieces))]...)
		}
		for cut := len(raw); cut >= max(0, len(raw)-8); cut-- {
			got := unescapeAppend([]byte("prefix"), raw[:cut])
			want := unescapeBytewise([]byte("prefix"), raw[:cut])
			if !bytes.Equal(got, want) {
				t.Fatalf("%q: got %q, want %q", raw[:cut], got, want)
			}
		}
	}
}

// FuzzUnescape: any bytes decode as the byte loop decoded them.
func FuzzUnescape(f *testing.F) {
	f.Add([]byte(`a\nb\u00e9\ud83d\ude80\`))
	f.Add([]byte(`\ud83d\u12`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := unescapeAppend(nil, raw), unescapeBytewise(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q", raw, got, want)
		}
	})
}

// BenchmarkUnescape: the strings of the agent body that hold escapes (tool
// results with code and newlines), decoded by runs and by the byte loop,
// alternating in one run.
func BenchmarkUnescape(b *testing.B) {
	body := agentBody(200<<10, 300)
	var strs [][]byte
	n := 0
	for i := 0; i < len(body); {
		j := bytes.IndexByte(body[i:], '"')
		if j < 0 {
			break
		}
		end, err := skipString(body, i+j)
		if err != nil {
			b.Fatal(err)
		}
		if s := body[i+j+1 : end-1]; bytes.IndexByte(s, '\\') >= 0 {
			strs = append(strs, s)
			n += len(s)
		}
		i = end
	}
	for _, v := range []struct {
		name string
		fn   func(out, raw []byte) []byte
	}{{"bytewise", unescapeBytewise}, {"runs", unescapeAppend}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			var out []byte
			for b.Loop() {
				for _, s := range strs {
					out = v.fn(out[:0], s)
				}
			}
		})
	}
}
