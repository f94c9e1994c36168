package fingerprint

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog"
)

// refCanonical is a slow, obviously-correct canonicalizer built on
// encoding/json, used to check the scanner. It shares no code with it:
// keys are sorted through utf16.Encode, strings escaped rune by rune, and
// numbers formatted with strconv's fixed and exponent forms.
func refCanonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := refEncode(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func refEncode(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		refString(b, v)
	case json.Number:
		s, err := refNumber(string(v))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := refEncode(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			refString(b, k)
			b.WriteByte(':')
			if err := refEncode(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return errors.New("unexpected type")
	}
	return nil
}

func refString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteString(strconv.FormatInt(int64(r)>>4, 16))
			b.WriteString(strconv.FormatInt(int64(r)&0xF, 16))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// refNumber: integer tokens as written (minus zero as 0), others as
// ECMAScript prints the double: fixed notation for decimal exponents -7 <
// e < 21, exponent notation with a signed, unpadded exponent otherwise.
func refNumber(tok string) (string, error) {
	if !strings.ContainsAny(tok, ".eE") {
		if tok == "-0" {
			return "0", nil
		}
		return tok, nil
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return "", err
	}
	if f == 0 {
		return "0", nil
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp >= -7+1 && exp < 21 {
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	mant, expStr, _ := strings.Cut(e, "e")
	sign := expStr[:1]
	digits := strings.TrimLeft(expStr[1:], "0")
	return mant + "e" + sign + digits, nil
}

// deliberate lists the rejections of JSON that encoding/json accepts:
// everything else Canonicalize refuses must also be invalid for
// json.Valid.
var deliberate = regexp.MustCompile(`duplicate key|nested deeper|lone surrogate|invalid UTF-8|out of range`)

func FuzzCanonicalize(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		if err != nil {
			if groundhog.ErrorCode(err) != groundhog.EINVALID {
				t.Fatalf("error code %q: %v", groundhog.ErrorCode(err), err)
			}
			if json.Valid(data) && !deliberate.MatchString(err.Error()) {
				t.Fatalf("rejected valid JSON %q: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q as %s", data, out)
		}
		if !utf8.Valid(data) {
			t.Fatalf("accepted invalid UTF-8 %q", data)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q", out)
		}
		again, err := Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		ref, err := refCanonical(data)
		if err != nil {
			t.Fatalf("reference failed on accepted input %q: %v", data, err)
		}
		if !bytes.Equal(ref, out) {
			t.Fatalf("input %q\n got %s\nwant %s", data, out, ref)
		}
		// Same value, modulo number spelling: decoded as float64 both
		// sides agree (integers beyond 2^53 round the same way).
		var vin, vout any
		if json.Unmarshal(data, &vin) == nil {
			if err := json.Unmarshal(out, &vout); err != nil {
				t.Fatalf("output %q does not decode: %v", out, err)
			}
			if !reflect.DeepEqual(vin, vout) {
				t.Fatalf("value changed: %q -> %q", data, out)
			}
		}
	})
}

func FuzzCompute(f *testing.F) {
	shapes := []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeEmbeddings, groundhog.ShapeMessages}
	f.Fuzz(func(t *testing.T, shapeIdx uint16, tenant string, body []byte) {
		shape := groundhog.Shape("unknown")
		if int(shapeIdx) < len(shapes) {
			shape = shapes[shapeIdx]
		}
		p := Params{Shape: shape, Tenant: tenant, Versions: "v=1"}
		r, err := Compute(p, body)
		canon, cerr := Canonicalize(body)
		if err != nil {
			if groundhog.ErrorCode(err) != groundhog.EINVALID {
				t.Fatalf("error code %q: %v", groundhog.ErrorCode(err), err)
			}
			if cerr == nil && shape != "unknown" {
				// Valid canonical JSON: the only other reasons are the
				// shape of the top level.
				var top map[string]json.RawMessage
				if json.Unmarshal(body, &top) == nil && validModelStream(top) {
					t.Fatalf("rejected %q: %v", body, err)
				}
			}
			return
		}
		if cerr != nil {
			t.Fatalf("Compute accepted %q that Canonicalize rejects: %v", body, cerr)
		}
		if !strings.HasPrefix(r.Hash, "sha256:") || len(r.Hash) != 7+64 {
			t.Fatalf("hash %q", r.Hash)
		}
		// Spelling does not matter: the canonical form hashes the same.
		// The canonical form spells no letter as an escape.
		r2, err := Compute(p, canon)
		if r.LetterEscapes = false; err != nil || r2 != r {
			t.Fatalf("canonical form hashes differently: %+v vs %+v (%v)", r, r2, err)
		}
		// The tenant always matters.
		p.Tenant += "x"
		if r3, _ := Compute(p, body); r3.Hash == r.Hash {
			t.Fatalf("tenant does not change the hash")
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("accepted body does not decode as an object: %v", err)
		}
		var model string
		if raw, ok := top["model"]; ok {
			if err := json.Unmarshal(raw, &model); err != nil {
				t.Fatalf("model %s accepted: %v", raw, err)
			}
		}
		if r.Model != model || r.Stream != (string(top["stream"]) == "true") {
			t.Fatalf("Result %+v for body %q", r, body)
		}
	})
}

// validModelStream reports whether the top-level fields Compute checks
// have acceptable types.
func validModelStream(top map[string]json.RawMessage) bool {
	if raw, ok := top["model"]; ok && (len(raw) == 0 || raw[0] != '"') {
		return false
	}
	if raw, ok := top["stream"]; ok {
		switch string(raw) {
		case "true", "false", "null":
		default:
			return false
		}
	}
	return true
}

func TestCanonicalizeMatchesReference(t *testing.T) {
	inputs := [][]byte{body1KB, body200KB}
	for _, g := range readJSONL[goldenGroup](t, "same.jsonl") {
		for _, c := range g.Cases {
			inputs = append(inputs, c.Body)
		}
	}
	for _, g := range readJSONL[goldenGroup](t, "differ.jsonl") {
		for _, c := range g.Cases {
			inputs = append(inputs, c.Body)
		}
	}
	for _, in := range inputs {
		got, err := Canonicalize(in)
		if err != nil {
			t.Fatalf("%.80s: %v", in, err)
		}
		want, err := refCanonical(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%.80s…: scanner and reference disagree", in)
		}
	}
}
