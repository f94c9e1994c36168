package promptcache

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner below walks a request body in place: it never decodes into
// maps, it only finds the byte spans of values, so the prefix model can hash
// segments straight from the body and the injector can edit the body at
// exact offsets. It checks structure (strings, brackets, commas, colons,
// literals) as far as it walks; the gateway has validated the body fully
// (fingerprint.Compute) before any stage sees it.

// errSyntax is the one error of the scanner; the offset is in the message.
var errSyntax = errors.New("invalid JSON")

func syntaxErr(off int, what string) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, off)
}

const maxDepth = 256

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// skipString returns the offset just past the string starting at b[i]=='"'.
// It jumps from quote to quote (IndexByte is vectorized) and counts the
// backslashes before each: an even number means the quote ends the string.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, syntaxErr(i, "unterminated string")
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// skipValue returns the offset just past the value starting at b[i] (no
// leading whitespace).
func skipValue(b []byte, i, depth int) (int, error) { return walkValue(b, i, depth, nil) }

// walkValue is skipValue; with ix given it also records the children of
// the containers down to indexDepth and the marker's occurrences (index).
func walkValue(b []byte, i, depth int, ix *index) (int, error) {
	if i >= len(b) {
		return 0, syntaxErr(i, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '"':
		e, err := ix.skipString(b, i)
		if ix != nil && err == nil {
			ix.str(b, i, e)
		}
		return e, err
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, syntaxErr(i, "nested too deeply")
		}
		rec := ix != nil && depth <= indexDepth
		slot := 0
		if rec {
			slot = ix.open(i)
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		j := skipWS(b, i+1)
		if j < len(b) && b[j] == end {
			if rec {
				ix.close(depth, slot)
			}
			return j + 1, nil
		}
		for {
			var err error
			var key span
			if c == '{' {
				if j >= len(b) || b[j] != '"' {
					return 0, syntaxErr(j, "expected object key")
				}
				ks := j
				if j, err = ix.skipString(b, j); err != nil {
					return 0, err
				}
				key = span{ks, j}
				if ix != nil {
					ix.str(b, ks, j)
				}
				j = skipWS(b, j)
				if j >= len(b) || b[j] != ':' {
					return 0, syntaxErr(j, "expected ':'")
				}
				j = skipWS(b, j+1)
			}
			vs := j
			if j, err = walkValue(b, j, depth+1, ix); err != nil {
				return 0, err
			}
			if rec {
				ix.stack[depth] = append(ix.stack[depth], ixKid{key: key, val: span{vs, j}})
			}
			j = skipWS(b, j)
			if j >= len(b) {
				return 0, syntaxErr(j, "unexpected end of input")
			}
			if b[j] == end {
				if rec {
					ix.close(depth, slot)
				}
				return j + 1, nil
			}
			if b[j] != ',' {
				return 0, syntaxErr(j, "expected ',' or closing bracket")
			}
			j = skipWS(b, j+1)
		}
	case c == 't':
		return lit(b, i, "true")
	case c == 'f':
		return lit(b, i, "false")
	case c == 'n':
		return lit(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, nil
	}
	return 0, syntaxErr(i, "unexpected character")
}

func lit(b []byte, i int, s string) (int, error) {
	if !bytes.HasPrefix(b[i:], []byte(s)) {
		return 0, syntaxErr(i, "invalid literal")
	}
	return i + len(s), nil
}

// span is a value's bytes in the body: b[start:end].
type span struct{ start, end int }

func (s span) ok() bool { return s.end > s.start }

// member is one object member: its key (raw, without quotes, escapes not
// decoded), the span of the whole member from the key's quote to the value's
// end, and the value's span.
type member struct {
	key   []byte
	whole span
	val   span
}

// members calls fn for each member of the object at v. It returns an error
// when v is not an object or is malformed.
func members(b []byte, v span, fn func(m member) error) error {
	if !v.ok() || b[v.start] != '{' {
		return syntaxErr(v.start, "expected an object")
	}
	j := skipWS(b, v.start+1)
	if b[j] == '}' {
		return nil
	}
	for {
		ks := j
		ke, err := skipString(b, j)
		if err != nil {
			return err
		}
		j = skipWS(b, ke)
		j = skipWS(b, j+1) // ':'
		ve, err := skipValue(b, j, 1)
		if err != nil {
			return err
		}
		if err := fn(member{key: b[ks+1 : ke-1], whole: span{ks, ve}, val: span{j, ve}}); err != nil {
			return err
		}
		j = skipWS(b, ve)
		if j >= v.end || b[j] == '}' {
			return nil
		}
		j = skipWS(b, j+1) // ','
	}
}

// elems calls fn for each element of the array at v.
func elems(b []byte, v span, fn func(i int, e span) error) error {
	if !v.ok() || b[v.start] != '[' {
		return syntaxErr(v.start, "expected an array")
	}
	j := skipWS(b, v.start+1)
	if b[j] == ']' {
		return nil
	}
	for i := 0; ; i++ {
		ve, err := skipValue(b, j, 1)
		if err != nil {
			return err
		}
		if err := fn(i, span{j, ve}); err != nil {
			return err
		}
		j = skipWS(b, ve)
		if j >= v.end || b[j] == ']' {
			return nil
		}
		j = skipWS(b, j+1)
	}
}

// field returns the span of member key of the object at v (zero span when
// absent or v is not an object).
func field(b []byte, v span, key string) span {
	var out span
	if !v.ok() || b[v.start] != '{' {
		return out
	}
	members(b, v, func(m member) error {
		if string(m.key) == key {
			out = m.val
		}
		return nil
	})
	return out
}

// str decodes the string at v ("" when v is not a string).
func str(b []byte, v span) string {
	if !v.ok() || b[v.start] != '"' {
		return ""
	}
	raw := b[v.start+1 : v.end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	return unescape(raw)
}

// strView is str without a copy when the string has no escapes; the result
// must not outlive the body.
func strView(b []byte, v span) string {
	if !v.ok() || b[v.start] != '"' {
		return ""
	}
	raw := b[v.start+1 : v.end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return view(raw)
	}
	return unescape(raw)
}

// unescape decodes the JSON escapes of a string's contents (invalid escapes
// are kept as they are: the body was validated before).
func unescape(raw []byte) string { return string(unescapeAppend(make([]byte, 0, len(raw)), raw)) }

// unescapeAppend appends the decoded contents to out, copying the runs
// between escapes whole.
func unescapeAppend(out, raw []byte) []byte {
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 || k+1 >= len(raw) {
			return append(out, raw...)
		}
		out = append(out, raw[:k]...)
		i := k + 1
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
			out, i = appendUnicodeEscape(out, raw, i)
		default:
			out = append(out, raw[i])
		}
		raw = raw[i+1:]
	}
}

// appendUnicodeEscape appends the rune of the \u escape whose u is at
// raw[i] (with the low surrogate's escape after it, when it pairs) and
// returns the index of its last byte; an escape that does not parse is
// appended as it is, up to its u.
func appendUnicodeEscape(out, raw []byte, i int) ([]byte, int) {
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
			return utf8.AppendRune(out, rr), i
		}
	}
	return append(out, '\\', 'u'), i
}

func isNull(b []byte, v span) bool { return !v.ok() || string(b[v.start:v.end]) == "null" }

// objInfo is what one pass over an object finds: the spans of the members
// the prefix model reads, and (when asked) the whole spans of the members
// other than content/output.
type objInfo struct {
	typ, text, role, content, output, marker span
	others                                   []span
}

// scanObj reads the object at v in one pass. mk is the shape's marker key.
func scanObj(b []byte, v span, mk string, others bool) objInfo {
	return scanObjTo(b, v, mk, others, nil)
}

// scanObjTo is scanObj appending the others to buf[:0].
func scanObjTo(b []byte, v span, mk string, others bool, buf []span) objInfo {
	var o objInfo
	if others {
		o.others = buf[:0]
	}
	if !v.ok() || b[v.start] != '{' {
		return o
	}
	members(b, v, func(m member) error {
		o.add(m, mk, others)
		return nil
	})
	return o
}

// add takes one member into o (scanObj's step).
func (o *objInfo) add(m member, mk string, others bool) {
	switch string(m.key) {
	case "type":
		o.typ = m.val
	case "text":
		o.text = m.val
	case "role":
		o.role = m.val
	case "content":
		o.content = m.val
		return
	case "output":
		o.output = m.val
		return
	case mk:
		o.marker = m.val
	}
	if others {
		o.others = append(o.others, m.whole)
	}
}
