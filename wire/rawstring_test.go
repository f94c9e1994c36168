package wire

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// rawString with its plain fast path against json.Unmarshal into a string:
// random byte strings of quotes, backslashes, escapes, control bytes,
// ASCII, multi-byte and invalid UTF-8, with and without the quotes, cut
// short or with bytes after the closing quote. Same string, same ok. With
// the fast path letting invalid UTF-8 through (no utf8.Valid) it fails.
func TestRawStringMatchesUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	atoms := []string{"a", "model-x", " ", `"`, `\`, `\"`, `\\`, `\n`, `\u00e9`, `\ud83d\ude80`, "\x00", "\x1f", "\t", "é", "🚀", "\xff", "\xc3", "\xed\xa0\x80", "\x7f", "/"}
	fast, total := 0, 0
	for i := 0; i < 50000; i++ {
		b := []byte{'"'}
		for n := rng.IntN(8); n > 0; n-- {
			b = append(b, atoms[rng.IntN(len(atoms))]...)
		}
		switch rng.IntN(10) {
		case 0: // unterminated
		case 1:
			b = append(b, `" `...)
		case 2:
			b = append(b, `"x`...)
		default:
			b = append(b, '"')
		}
		if rng.IntN(20) == 0 {
			b = b[1:]
		}
		var want string
		wantOK := len(b) >= 2 && b[0] == '"' && json.Unmarshal(b, &want) == nil
		if !wantOK {
			want = ""
		}
		got, ok := rawString(json.RawMessage(b))
		if got != want || ok != wantOK {
			t.Fatalf("rawString(%q) = %q, %v; json.Unmarshal: %q, %v", b, got, ok, want, wantOK)
		}
		if _, p := plainString(b); p {
			fast++
		}
		total++
	}
	if fast < total/10 {
		t.Fatalf("only %d of %d strings took the fast path", fast, total)
	}
}
