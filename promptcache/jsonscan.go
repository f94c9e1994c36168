package promptcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexAny(b[j:], "\"\\")
		if k < 0 {
			return 0, syntaxErr(i, "unterminated string")
		}
		j += k
		if b[j] == '"' {
			return j + 1, nil
		}
		j += 2 // backslash and the escaped byte
		if j > len(b) {
			return 0, syntaxErr(i, "unterminated string")
		}
	}
}

// skipValue returns the offset just past the value starting at b[i] (no
// leading whitespace).
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, syntaxErr(i, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, syntaxErr(i, "nested too deeply")
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		j := skipWS(b, i+1)
		if j < len(b) && b[j] == end {
			return j + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if j >= len(b) || b[j] != '"' {
					return 0, syntaxErr(j, "expected object key")
				}
				if j, err = skipString(b, j); err != nil {
					return 0, err
				}
				j = skipWS(b, j)
				if j >= len(b) || b[j] != ':' {
					return 0, syntaxErr(j, "expected ':'")
				}
				j = skipWS(b, j+1)
			}
			if j, err = skipValue(b, j, depth+1); err != nil {
				return 0, err
			}
			j = skipWS(b, j)
			if j >= len(b) {
				return 0, syntaxErr(j, "unexpected end of input")
			}
			if b[j] == end {
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
	var s string
	json.Unmarshal(b[v.start:v.end], &s)
	return s
}

func isNull(b []byte, v span) bool { return !v.ok() || string(b[v.start:v.end]) == "null" }
