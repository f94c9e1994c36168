package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// object is a JSON object that keeps its members in order and its values as
// raw (compact) JSON. Conversions build on it so that fields groundhog does
// not know survive, and so that rebuilt bodies keep the provider's key order.
type object []member

type member struct {
	key string
	val json.RawMessage
}

// Raw JSON literals shared by the builders. They are never mutated.
var (
	rawNull       = json.RawMessage("null")
	rawEmptyArr   = json.RawMessage("[]")
	rawEmptyObj   = json.RawMessage("{}")
	rawEmptyStr   = json.RawMessage(`""`)
	rawInProgress = json.RawMessage(`"in_progress"`)
)

// parseObject parses b, which must hold one JSON object, keeping member
// order. Values are compacted. A duplicate key keeps its first position and
// its last value, as encoding/json does for the value.
func parseObject(b []byte) (object, error) {
	if o, ok := parsePlainObject(b); ok {
		return o, nil
	}
	return parseObjectByDecoder(b)
}

// parsePlainObject is parseObject for the usual text of a provider's
// object, read in one pass of a Walker: compact (no white space between
// tokens) and with plain, distinct keys (so the text of each is its name,
// and no value replaces another). ok is false for any other text, which
// the json.Decoder reads. The values are slices of one copy of b.
func parsePlainObject(b []byte) (o object, ok bool) {
	if len(b) < 2 || b[0] != '{' {
		return nil, false
	}
	b = bytes.Clone(b)
	w := jsonwalk.Walker{B: b}
	if !w.Object(func(key []byte) bool {
		start := w.I
		if !w.Value() {
			return false
		}
		o = append(o, member{string(key), b[start:w.I:w.I]})
		return true
	}) || w.I != len(b) || w.Spaced {
		return nil, false
	}
	return o, true
}

// parseObjectByDecoder is parseObject by json.Compact and a json.Decoder.
func parseObjectByDecoder(b []byte) (object, error) {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return parseCompactObject(c.Bytes())
}

// parseCompactObject is parseObject for input known to be compact JSON (a
// value taken out of an already parsed object).
func parseCompactObject(b []byte) (object, error) {
	if o, ok := parsePlainObject(b); ok {
		return o, nil
	}
	return parseCompactByDecoder(b)
}

// parseCompactByDecoder is parseCompactObject by a json.Decoder.
func parseCompactByDecoder(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after object", ErrMalformed)
	}
	return o, nil
}

// get returns the raw value of key, or nil when absent.
func (o object) get(key string) json.RawMessage {
	for i := range o {
		if o[i].key == key {
			return o[i].val
		}
	}
	return nil
}

// has reports whether key is present (possibly null).
func (o object) has(key string) bool { return o.get(key) != nil }

// set replaces the value of key in place, or appends it.
func (o *object) set(key string, val json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].val = val
			return
		}
	}
	*o = append(*o, member{key, val})
}

// setIfPresent replaces key's value only when key is already present.
func (o object) setIfPresent(key string, val json.RawMessage) {
	for i := range o {
		if o[i].key == key {
			o[i].val = val
		}
	}
}

// del removes key.
func (o *object) del(key string) {
	for i := range *o {
		if (*o)[i].key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// clone returns a copy whose member slice can be changed independently.
func (o object) clone() object { return append(object(nil), o...) }

// str returns key's value as a string; ok is false when it is absent, null
// or not a string.
func (o object) str(key string) (string, bool) { return rawString(o.get(key)) }

// obj returns key's value parsed as an object; ok is false when it is
// absent, null or not an object.
func (o object) obj(key string) (object, bool) {
	v := o.get(key)
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	sub, err := parseCompactObject(v)
	return sub, err == nil
}

// arr returns key's value as a list of raw elements; ok is false when it is
// absent, null or not an array.
func (o object) arr(key string) ([]json.RawMessage, bool) { return rawArray(o.get(key)) }

// bytes renders o as compact JSON.
func (o object) bytes() []byte { return o.appendTo(nil) }

// raw renders o as a json.RawMessage.
func (o object) raw() json.RawMessage { return o.appendTo(nil) }

func (o object) appendTo(dst []byte) []byte {
	dst = append(dst, '{')
	for i, m := range o {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.val...)
	}
	return append(dst, '}')
}

// rawString decodes v as a JSON string.
func rawString(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if s, ok := plainString(v); ok { // rawstring.go
		return s, true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// rawArray splits v, a JSON array, into its compact raw elements.
func rawArray(v json.RawMessage) ([]json.RawMessage, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	if a, ok := rawArrayWalk(v); ok {
		return a, true
	}
	return rawArrayByUnmarshal(v)
}

// rawArrayWalk is rawArray in one pass of a Walker, for an array it takes
// whole (so valid JSON): each element the text json.Unmarshal hands a
// json.RawMessage, as a slice of one copy of v.
func rawArrayWalk(v []byte) ([]json.RawMessage, bool) {
	c := bytes.Clone(v)
	w := jsonwalk.Walker{B: c}
	a := []json.RawMessage{}
	if !w.Array(func() bool {
		start := w.I
		if !w.Value() {
			return false
		}
		a = append(a, c[start:w.I:w.I])
		return true
	}) || !w.End() {
		return nil, false
	}
	return a, true
}

// rawArrayByUnmarshal is rawArray by json.Unmarshal.
func rawArrayByUnmarshal(v json.RawMessage) ([]json.RawMessage, bool) {
	var a []json.RawMessage
	if json.Unmarshal(v, &a) != nil {
		return nil, false
	}
	return a, true
}

// rawInt decodes v as a non-negative integer token count. Integral floats
// ("12.0") are accepted; absent or null is 0 with ok true.
func rawInt(v json.RawMessage) (int64, bool) {
	if len(v) == 0 || isNull(v) {
		return 0, true
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt64/2 {
		return 0, false
	}
	return int64(f), true
}

// isNull reports whether v is the JSON null literal.
func isNull(v json.RawMessage) bool { return string(v) == "null" }

// isObject reports whether v is a JSON object.
func isObject(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }

// jsonString returns s as a JSON string literal.
func jsonString(s string) json.RawMessage { return appendString(nil, s) }

// jsonInt returns n as a JSON number.
func jsonInt(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }

// jsonArray joins raw elements into a JSON array.
func jsonArray(elems []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string literal. Unlike encoding/json it
// leaves <, > and & alone (as the providers do); invalid UTF-8 becomes
// U+FFFD, and U+2028/U+2029 are escaped so the output stays valid JavaScript.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// splitText cuts s into pieces of about deltaSize bytes for synthesized
// deltas. Cuts fall on rune boundaries (a delta must be valid UTF-8 on its
// own) and, where one is near, just after a space so pieces look like the
// word-ish tokens providers send. The pieces concatenate to s; an empty s
// gives no pieces.
func splitText(s string) []string {
	var out []string
	for len(s) > 0 {
		if len(s) <= deltaSize {
			out = append(out, s)
			break
		}
		cut := deltaSize
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 { // a rune longer than deltaSize cannot happen; be safe
			_, cut = utf8.DecodeRuneInString(s)
		}
		for j := cut - 1; j >= deltaSize/2; j-- {
			if s[j] == ' ' {
				cut = j + 1
				break
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// deltaSize is the target size in bytes of one synthesized text delta:
// about eight tokens, small enough that a client renders the replay
// progressively, large enough that a long answer is not thousands of events.
const deltaSize = 32
