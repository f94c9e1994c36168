package fingerprint

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// RFC 8785 Appendix B: IEEE 754 doubles and their canonical text. NaN and
// Infinity cannot be written in JSON and are left out.
var rfcNumbers = []struct {
	bits uint64
	want string
}{
	{0x0000000000000000, "0"},
	{0x8000000000000000, "0"}, // minus zero
	{0x0000000000000001, "5e-324"},
	{0x8000000000000001, "-5e-324"},
	{0x7fefffffffffffff, "1.7976931348623157e+308"},
	{0xffefffffffffffff, "-1.7976931348623157e+308"},
	{0x4340000000000000, "9007199254740992"},
	{0xc340000000000000, "-9007199254740992"},
	{0x4430000000000000, "295147905179352830000"},
	{0x44b52d02c7e14af5, "9.999999999999997e+22"},
	{0x44b52d02c7e14af6, "1e+23"},
	{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
	{0x444b1ae4d6e2ef4e, "999999999999999700000"},
	{0x444b1ae4d6e2ef4f, "999999999999999900000"},
	{0x444b1ae4d6e2ef50, "1e+21"},
	{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
	{0x3eb0c6f7a0b5ed8d, "0.000001"},
	{0x41b3de4355555553, "333333333.3333332"},
	{0x41b3de4355555554, "333333333.33333325"},
	{0x41b3de4355555555, "333333333.3333333"},
	{0x41b3de4355555556, "333333333.3333334"},
	{0x41b3de4355555557, "333333333.33333343"},
	{0xbecbf647612f3696, "-0.0000033333333333333333"},
	{0x43143ff3c1cb0959, "1424953923781206.2"},
}

func TestAppendNumberRFC8785(t *testing.T) {
	for _, tc := range rfcNumbers {
		f := math.Float64frombits(tc.bits)
		if got := string(appendNumber(nil, f)); got != tc.want {
			t.Errorf("appendNumber(%016x = %g) = %s, want %s", tc.bits, f, got, tc.want)
		}
		// The same double written in exponent form goes through the
		// scanner's float path.
		in := strconv.FormatFloat(f, 'e', -1, 64)
		got, err := Canonicalize([]byte(in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", in, got, tc.want)
		}
	}
}

func TestCanonicalizeNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1", "1"},
		{"1.0", "1"},
		{"1e0", "1"},
		{"1E0", "1"},
		{"10E-1", "1"},
		{"0.1e1", "1"},
		{"0.5", "0.5"},
		{"5e-1", "0.5"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"-0e5", "0"},
		{"0", "0"},
		{"-1", "-1"},
		{"100", "100"},
		{"1e2", "100"},
		{"1e+2", "100"},
		{"4.50", "4.5"},
		{"2e-3", "0.002"},
		{"1e-7", "1e-7"},
		{"1.5e-7", "1.5e-7"},
		{"1e-6", "0.000001"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"1E30", "1e+30"},
		{"0.000000000000000000000000001", "1e-27"},
		{"333333333.33333329", "333333333.3333333"},
		{"1e-400", "0"}, // underflows to zero, as ECMAScript reads it
		// Integers are kept as written (package doc): exact up to 2^53 by
		// RFC 8785 itself, and beyond it so big ids never collide.
		{"9007199254740992", "9007199254740992"},
		{"9007199254740993", "9007199254740993"},
		{"-9007199254740993", "-9007199254740993"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		// ... while a fraction makes it a double.
		{"9007199254740993.0", "9007199254740992"},
		{"[1,1.0,1e0,-0]", "[1,1,1,0]"},
	} {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalizeRFC8785Example(t *testing.T) {
	// RFC 8785 §3.2.2 (input) and §3.2.3 (output).
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalizeKeySortRFC8785(t *testing.T) {
	// RFC 8785 §3.2.3: sorting by UTF-16 code units puts the emoji
	// (surrogates 0xD83D…) before U+FB33, unlike code point order.
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := "{" + strings.Join([]string{
		`"\r":"Carriage Return"`,
		`"1":"One"`,
		"\"\u0080\":\"Control\"",
		`"ö":"Latin Small Letter O With Diaeresis"`,
		`"€":"Euro Sign"`,
		`"😀":"Emoji: Grinning Face"`,
		"\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"",
	}, ",") + "}"
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCompareKeys(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		sign int
	}{
		{"a", "b", -1},
		{"a", "a", 0},
		{"a", "ab", -1},
		{"", "a", -1},
		{"B", "a", -1},
		{"z", "é", -1},
		{"é", "ê", -1},
		{"\uffff", "😀", 1},  // U+FFFF > high surrogate 0xD83D
		{"\ue000", "😀", 1},  // U+E000 > high surrogate
		{"\ud7ff", "😀", -1}, // U+D7FF < high surrogate
		{"😀", "😁", -1},
		{"𐀀", "😀", -1}, // U+10000 < U+1F600
		{"x😀", "x\uffff", -1},
		{"ab😀", "ab😀", 0},
	} {
		got := compareKeys([]byte(tc.a), []byte(tc.b))
		if sign(got) != tc.sign {
			t.Errorf("compareKeys(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.sign)
		}
		if sign(compareKeys([]byte(tc.b), []byte(tc.a))) != -tc.sign {
			t.Errorf("compareKeys(%q, %q) not antisymmetric", tc.b, tc.a)
		}
	}
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestCanonicalizeStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"abc"`, `"abc"`},
		{`"\u00e9"`, `"é"`},
		{`"é"`, `"é"`},
		{`"\/"`, `"/"`},
		{`"a\"b"`, `"a\"b"`},
		{`"\\"`, `"\\"`},
		{`"\u0022\u005C"`, `"\"\\"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0008\u000C\u000a\u000D\u0009"`, `"\b\f\n\r\t"`},
		{`"\u0000\u001f\u001F"`, `"\u0000\u001f\u001f"`},
		{`"\u007f"`, "\"\x7f\""},               // DEL is not a control character in JSON
		{`"\u2028\u2029"`, "\"\u2028\u2029\""}, // no HTML/JS escaping
		{`"<>&"`, `"<>&"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`"😀 and 中文 and é"`, `"😀 and 中文 and é"`},
		{`"` + strings.Repeat("long ascii run ", 20) + `\n"`, `"` + strings.Repeat("long ascii run ", 20) + `\n"`},
		{`"12345678\"12345678"`, `"12345678\"12345678"`},
		{`""`, `""`},
		{`{"\u0061":1}`, `{"a":1}`},
		{`{"a\nb":1,"a":2}`, `{"a":2,"a\nb":1}`},
	} {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalizeStructure(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{" \t\r\n{ \"b\" : [ 1 , 2 ] , \"a\" : { } } \n", `{"a":{},"b":[1,2]}`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`null`, `null`},
		{`true`, `true`},
		{` false `, `false`},
		{`[3,1,2]`, `[3,1,2]`}, // arrays keep their order
		{`{"c":{"z":1,"y":[{"b":1,"a":2}]},"a":0}`, `{"a":0,"c":{"y":[{"a":2,"b":1}],"z":1}}`},
		{`{"a":1,"b":2,"c":3}`, `{"a":1,"b":2,"c":3}`},
		{`{"cache_control":{"type":"ephemeral"},"stream":true}`, `{"cache_control":{"type":"ephemeral"},"stream":true}`}, // Canonicalize excludes nothing
	} {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonicalize(%q): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	okDeep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := Canonicalize([]byte(okDeep)); err != nil {
		t.Errorf("nesting of exactly %d: %v", maxDepth, err)
	}
	for _, tc := range []struct {
		name, in, msg string
	}{
		{"empty", ``, "invalid JSON: unexpected end of input at offset 0"},
		{"only whitespace", "  ", "invalid JSON: unexpected end of input at offset 2"},
		{"trailing garbage", `{} x`, `invalid JSON: unexpected character 'x' after top-level value at offset 3`},
		{"two values", `1 2`, `invalid JSON: unexpected character '2' after top-level value at offset 2`},
		{"unclosed object", `{"a":1`, "invalid JSON: unexpected end of input at offset 6"},
		{"unclosed array", `[1,`, "invalid JSON: unexpected end of input at offset 3"},
		{"trailing comma", `[1,]`, `invalid JSON: unexpected character ']' looking for a value at offset 3`},
		{"trailing comma in object", `{"a":1,}`, `invalid JSON: unexpected character '}' looking for an object key at offset 7`},
		{"unquoted key", `{a:1}`, `invalid JSON: unexpected character 'a' looking for an object key at offset 1`},
		{"missing colon", `{"a" 1}`, `invalid JSON: unexpected character '1' after object key at offset 5`},
		{"single quotes", `'a'`, `invalid JSON: unexpected character '\'' looking for a value at offset 0`},
		{"leading zero", `01`, `invalid JSON: unexpected character '1' after top-level value at offset 1`},
		{"plus sign", `+1`, `invalid JSON: unexpected character '+' looking for a value at offset 0`},
		{"bare dot", `1.`, "invalid JSON: unexpected end of input at offset 2"},
		{"bare exponent", `1e`, "invalid JSON: unexpected end of input at offset 2"},
		{"minus alone", `-`, "invalid JSON: unexpected end of input at offset 1"},
		{"NaN", `NaN`, `invalid JSON: unexpected character 'N' looking for a value at offset 0`},
		{"overflow", `1e400`, "invalid JSON: number 1e400 out of range at offset 0"},
		{"bad literal", `tru`, "invalid JSON: unexpected end of input at offset 3"},
		{"bad literal 2", `nul1`, `invalid JSON: unexpected character '1' in literal null at offset 3`},
		{"unterminated string", `"abc`, "invalid JSON: unterminated string at offset 4"},
		{"unterminated long string", `"` + strings.Repeat("x", 30), "invalid JSON: unterminated string at offset 31"},
		{"raw newline in string", "\"a\nb\"", "invalid JSON: control character 0x0a in string at offset 2"},
		{"raw tab in string", "\"a\tb\"", "invalid JSON: control character 0x09 in string at offset 2"},
		{"bad escape", `"\x"`, `invalid JSON: invalid escape \x at offset 1`},
		{"short unicode escape", `"\u12"`, `invalid JSON: invalid \u escape at offset 1`},
		{"bad hex", `"\u12g4"`, `invalid JSON: invalid \u escape at offset 1`},
		{"lone high surrogate", `"\ud800"`, `invalid JSON: lone surrogate \ud800 at offset 1`},
		{"lone high surrogate then text", `"\ud83dabc"`, `invalid JSON: lone surrogate \ud83d at offset 1`},
		{"high surrogate then non-low", `"\ud83d\u0041"`, `invalid JSON: lone surrogate \ud83d at offset 1`},
		{"two high surrogates", `"\ud83d\ud83d"`, `invalid JSON: lone surrogate \ud83d at offset 1`},
		{"lone low surrogate", `"x\udc00"`, `invalid JSON: lone surrogate \udc00 at offset 2`},
		{"invalid UTF-8", "\"ab\xffcd\"", "invalid JSON: invalid UTF-8 in string at offset 3"},
		{"invalid UTF-8 in long string", "\"" + strings.Repeat("é", 10) + "\xc3\x28\"", "invalid JSON: invalid UTF-8 in string at offset 21"},
		{"truncated UTF-8 before escape", "\"\xe4\xb8\\n\"", "invalid JSON: invalid UTF-8 in string at offset 1"},
		{"UTF-8 surrogate encoding", "\"\xed\xa0\x80\"", "invalid JSON: invalid UTF-8 in string at offset 1"},
		{"overlong UTF-8", "\"\xc0\xaf\"", "invalid JSON: invalid UTF-8 in string at offset 1"},
		{"invalid UTF-8 in key", "{\"\xff\":1}", "invalid JSON: invalid UTF-8 in string at offset 2"},
		{"byte outside string", "\xef\xbb\xbf{}", "invalid JSON: unexpected byte 0xef looking for a value at offset 0"},
		{"duplicate key", `{"a":1,"b":2,"a":3}`, `JSON has duplicate key "a" at offset 13`},
		{"duplicate key spelled differently", `{"é":1,"\u00e9":2}`, `JSON has duplicate key "é" at offset 8`},
		{"nested duplicate key", `[{"x":{"k":1,"k":1}}]`, `JSON has duplicate key "k" at offset 13`},
		{"too deep", deep, "JSON is nested deeper than 256 levels at offset 256"},
		{"too deep objects", strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1), "JSON is nested deeper than 256 levels at offset 1280"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Canonicalize([]byte(tc.in))
			if err == nil {
				t.Fatalf("Canonicalize(%q) = %s, want error", tc.in, out)
			}
			if code := groundhog.ErrorCode(err); code != groundhog.EINVALID {
				t.Errorf("code = %q, want %q", code, groundhog.EINVALID)
			}
			if msg := groundhog.ErrorMessage(err); msg != tc.msg {
				t.Errorf("message = %s\n          want %s", msg, tc.msg)
			}
		})
	}
}

func TestDeepNestingDoesNotOverflow(t *testing.T) {
	// A megabyte of '[' must fail fast at the depth limit, not recurse.
	in := strings.Repeat("[", 1<<20)
	if _, err := Canonicalize([]byte(in)); groundhog.ErrorCode(err) != groundhog.EINVALID {
		t.Fatalf("err = %v, want EINVALID", err)
	}
}

func TestCanonicalizeIsIdempotent(t *testing.T) {
	for _, in := range []string{
		`{"b":[1.0,2e3,{"y":"\u00e9","x":null}],"a":"\ud83d\ude00\n"}`,
		`[1e21,1e-7,123456789012345678901234567890,-0.0]`,
		`"\u0001\u001f\"\\\/"`,
	} {
		once, err := Canonicalize([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		twice, err := Canonicalize(once)
		if err != nil {
			t.Fatal(err)
		}
		if string(once) != string(twice) {
			t.Errorf("not idempotent: %s -> %s", once, twice)
		}
	}
}
