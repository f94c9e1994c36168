package wire

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// randomJSON writes a random JSON value: nested objects and arrays,
// strings short and long with every kind of escape, numbers, literals,
// white space anywhere it may go.
func randomJSON(rng *rand.Rand, depth int) string {
	ws := func() string { return []string{"", "", " ", "\n\t "}[rng.Intn(4)] }
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.Intn(40) {
			switch rng.Intn(12) {
			case 0:
				b.WriteString(`\"`)
			case 1:
				b.WriteString(`\\`)
			case 2:
				b.WriteString(`\u0022`)
			case 3:
				b.WriteString(`]}[{,:`)
			case 4:
				b.WriteString("é😀")
			default:
				b.WriteByte(byte('a' + rng.Intn(26)))
			}
		}
		if rng.Intn(8) == 0 {
			b.WriteString(strings.Repeat("long text ", 20))
		}
		b.WriteByte('"')
		return b.String()
	}
	if depth > 4 {
		return str()
	}
	switch rng.Intn(7) {
	case 0:
		n := rng.Intn(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws() + str() + ws() + ":" + ws() + randomJSON(rng, depth+1) + ws()
		}
		return "{" + strings.Join(parts, ",") + ws() + "}"
	case 1:
		n := rng.Intn(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws() + randomJSON(rng, depth+1) + ws()
		}
		return "[" + strings.Join(parts, ",") + ws() + "]"
	case 2:
		return []string{"0", "-1.5e3", "12345678901234567890", "3.14"}[rng.Intn(4)]
	case 3:
		return []string{"true", "false", "null"}[rng.Intn(3)]
	}
	return str()
}

// ValueEnd finds the end of every value of a valid JSON text, whatever
// follows it, as a JSON decoder reads the value.
func TestValueEndOfRandomValues(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for range 20000 {
		v := randomJSON(rng, 0)
		if !json.Valid([]byte(v)) {
			t.Fatalf("the generator wrote invalid JSON: %s", v)
		}
		for _, rest := range []string{"", `,"k":[1]}`, " ]", "\n}"} {
			b := []byte(v + rest)
			if got := ValueEnd(b, 0); got != len(v) {
				t.Fatalf("ValueEnd(%q) = %d, want %d", b, got, len(v))
			}
		}
	}
}

// FuzzValueEnd: on any bytes ValueEnd stays within them and never panics;
// on a valid JSON value it returns the value's end.
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`{"a":"b\"c","d":[1,{"e":"\\"}]}`, `"` + strings.Repeat("x", 40) + `\""`, `[`, `{"a":"`, `"abc`, `[1, "a]", {"b": null}] `, "12 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := range min(len(b)+1, 4) {
			if got := ValueEnd(b, i); got < i || got > max(len(b), i) {
				t.Fatalf("ValueEnd(%q, %d) = %d, outside the bytes", b, i, got)
			}
		}
		v := bytes.TrimRight(b, " \t\r\n")
		if len(v) > 0 && json.Valid(b) && b[0] != ' ' && b[0] != '\t' && b[0] != '\r' && b[0] != '\n' {
			if got := ValueEnd(b, 0); got != len(v) {
				t.Fatalf("ValueEnd(%q) = %d, want %d", b, got, len(v))
			}
		}
	})
}

func BenchmarkValueEnd(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	parts := make([]string, 200)
	for i := range parts {
		parts[i] = randomJSON(rng, 1)
	}
	v := []byte("[" + strings.Join(parts, ",") + "]")
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if ValueEnd(v, 0) != len(v) {
			b.Fatal("wrong end")
		}
	}
}
