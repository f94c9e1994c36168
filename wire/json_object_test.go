package wire

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// sameObject reports whether two parses of an object agree: the verdict,
// and the members (names, order, text of the values).
func sameObject(a object, aerr error, b object, berr error) bool {
	if (aerr == nil) != (berr == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].key != b[i].key || string(a[i].val) != string(b[i].val) {
			return false
		}
	}
	return true
}

// TestParseObjectMatchesDecoder: for random objects — compact and not,
// keys escaped, beyond ASCII or repeated, nested values, strings with
// spaces, invalid text — parseObject gives what json.Compact and a
// json.Decoder give, parseCompactObject what the json.Decoder gives, and
// compact objects with plain keys are read in one pass.
func TestParseObjectMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	ws := func() string { return pick("", "", "", " ", "\n") }
	value := func() string {
		return pick("null", "0", "12", "1.5e3", `"x"`, `"a b"`, `""`, "true", "{}", "[]", `{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":7}`, `[1,{"a":"}"}]`)
	}
	plain := 0
	for range 50000 {
		var ms []string
		for k := rng.Intn(7); k > 0; k-- {
			ms = append(ms, `"`+pick("input_tokens", "output_tokens", "cache_read_input_tokens", "Input_Tokens", "in\\u0070ut", "ünits", "a", "a")+`":`+ws()+value())
		}
		s := ws() + "{" + strings.Join(ms, ","+ws()) + "}" + ws()
		switch rng.Intn(20) {
		case 0:
			s = s[:rng.Intn(len(s)+1)]
		case 1:
			s = "[1]"
		}
		got, gerr := parseObject([]byte(s))
		want, werr := parseObjectByDecoder([]byte(s))
		if !sameObject(got, gerr, want, werr) {
			t.Fatalf("%q:\nparseObject %v %q\ndecoder     %v %q", s, gerr, got, werr, want)
		}
		got, gerr = parseCompactObject([]byte(s))
		want, werr = parseCompactByDecoder([]byte(s))
		if !sameObject(got, gerr, want, werr) {
			t.Fatalf("%q:\nparseCompactObject %v %q\ndecoder            %v %q", s, gerr, got, werr, want)
		}
		if _, ok := parsePlainObject([]byte(s)); ok {
			plain++
		}
	}
	if plain < 2000 {
		t.Fatalf("only %d objects read in one pass", plain)
	}
}

func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{"input_tokens":3,"output_tokens":5}`, `{"a":1,"a":2}`, `{"\u0061":1}`, `{}`, `{"a":{"b":[1,2]}}`, ` {"a" : 1} `, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := parseObject(b)
		want, werr := parseObjectByDecoder(b)
		if !sameObject(got, gerr, want, werr) {
			t.Fatalf("%q:\nparseObject %v %q\ndecoder     %v %q", b, gerr, got, werr, want)
		}
		got, gerr = parseCompactObject(b)
		want, werr = parseCompactByDecoder(b)
		if !sameObject(got, gerr, want, werr) {
			t.Fatalf("%q:\nparseCompactObject %v %q\ndecoder            %v %q", b, gerr, got, werr, want)
		}
	})
}

// rawArray gives json.Unmarshal's elements (each one's text) for random
// arrays — nested, spaced, with nulls, invalid or cut short — and reads the
// valid ones in one pass.
func TestRawArrayMatchesUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(19))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	ws := func() string { return pick("", "", " ", "\n") }
	walked := 0
	for range 50000 {
		var es []string
		for k := rng.Intn(5); k > 0; k-- {
			es = append(es, ws()+pick("null", "0", "-1.5e3", `"a b"`, `"\u00e9\""`, "true", "{}", "[]", `{"a": [1, {"b":"]"}]}`, `[null,[]]`)+ws())
		}
		s := ws() + "[" + strings.Join(es, ",") + "]" + ws()
		switch rng.Intn(15) {
		case 0:
			s = s[:rng.Intn(len(s)+1)]
		case 1:
			s = "[1,]"
		case 2:
			s = "[1] [2]"
		}
		checkRawArray(t, []byte(s))
		if _, ok := rawArrayWalk([]byte(strings.TrimSpace(s))); ok {
			walked++
		}
	}
	if walked < 30000 {
		t.Fatalf("only %d arrays read in one pass", walked)
	}
}

func checkRawArray(t *testing.T, b []byte) {
	t.Helper()
	got, gok := rawArray(b)
	var want []json.RawMessage
	wok := false
	if len(b) > 0 && b[0] == '[' {
		want, wok = rawArrayByUnmarshal(b)
	}
	same := gok == wok && len(got) == len(want) && (got == nil) == (want == nil)
	for i := 0; same && i < len(got); i++ {
		same = string(got[i]) == string(want[i])
	}
	if !same {
		t.Fatalf("%q:\nrawArray       %v %q\njson.Unmarshal %v %q", b, gok, got, wok, want)
	}
}

func FuzzRawArray(f *testing.F) {
	for _, s := range []string{`[]`, `[1, "a", null, {"b": [2]}]`, ` [1] `, `[1,]`, `[`, `[1] x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkRawArray(t, b) })
}
