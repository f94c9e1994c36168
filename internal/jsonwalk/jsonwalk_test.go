package jsonwalk

import (
	"encoding/json"
	"strings"
	"testing"
)

// accepts reports whether a Walker steps over b as one value and nothing
// more.
func accepts(b []byte) bool {
	w := Walker{B: b}
	w.WS()
	return w.Value() && w.End()
}

func TestWalkerAcceptsJSON(t *testing.T) {
	for _, s := range []string{
		`null`, `true`, `false`, `0`, `-0`, `12`, `-1.5e-3`, `1E+2`, `0.25`, `""`, `"a\"b\\c\/d\b\f\n\r\t\u00e9\uD83D\uDE00"`,
		`[]`, `{}`, ` [1, "x", {"a": [null, {}]}] `, "{\n\t\"k\" : 1 ,\r\n \"l\":[ ]}", `"` + strings.Repeat("long text ", 100) + `"`,
		`"caf` + "\xc3\xa9" + `"`, `"bad utf-8 ` + "\xff" + `"`, // encoding/json does not check UTF-8 either
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	} {
		if !accepts([]byte(s)) {
			t.Errorf("refused %q", s)
		}
	}
	for _, s := range []string{
		``, ` `, `nul`, `tru`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `"`, `"\x"`, `"\u12"`, `"a` + "\x01" + `"`, `[1,]`, `{"a"}`,
		`{"a":1,}`, `{a:1}`, `[1 2]`, `{} {}`, `[`, `]`, `NaN`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		if accepts([]byte(s)) {
			t.Errorf("took %q", s)
		}
	}
}

func TestObjectRefusesWhatEncodingJSONWouldReadOtherwise(t *testing.T) {
	for s, want := range map[string]bool{
		`{"a":1,"b":2}`: true, `{"a":1,"a":2}`: false, `{"\u0061":1}`: false, `{"ä":1}`: false, `{}`: true,
	} {
		w := Walker{B: []byte(s)}
		if got := w.Object(func([]byte) bool { return w.Value() }) && w.End(); got != want {
			t.Errorf("Object(%s) = %v, want %v", s, got, want)
		}
	}
	if !Fold([]byte("MaxTokens"), "maxtokens") || Fold([]byte("maxTokens2"), "maxtokens") || !Fold([]byte("x"), "y", "x") {
		t.Error("Fold")
	}
	for n, want := range map[string]bool{`12`: true, `-7`: true, `1.0`: false, `1e2`: false, `1234567890123456`: false} {
		w := Walker{B: []byte(n)}
		if got := w.Integer() && w.End(); got != want {
			t.Errorf("Integer(%s) = %v, want %v", n, got, want)
		}
	}
	for n, want := range map[string]bool{`0.5`: true, `-3`: true, `1e400`: false, `1E2`: false} {
		w := Walker{B: []byte(n)}
		if got := w.Float() && w.End(); got != want {
			t.Errorf("Float(%s) = %v, want %v", n, got, want)
		}
	}
}

// FuzzWalker: whatever a Walker takes as one value, encoding/json takes as
// JSON; and it never panics.
func FuzzWalker(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[1e5,-0.5,true]`, `"\ud800"`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if accepts(b) && !json.Valid(b) {
			t.Fatalf("took %q, which encoding/json refuses", b)
		}
		w := Walker{B: b}
		w.WS()
		_ = w.Object(func([]byte) bool { return w.Value() })
	})
}

// FuzzValid: Valid is json.Valid for every input.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[1e5,-0.5,true]`, `"\ud800"`, ` {"a":1} x`, `[01]`, `"` + "\x7f\xff" + `"`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	chunk := []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f9f4fb6dbf","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for _, v := range []struct {
		name  string
		valid func([]byte) bool
	}{{"encoding-json", json.Valid}, {"walker", Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				if !v.valid(chunk) {
					b.Fatal("refused")
				}
			}
		})
	}
}
