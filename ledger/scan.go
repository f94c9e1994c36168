package ledger

import (
	"bytes"
	"errors"
	"fmt"
)

// scanObject walks the members of the JSON object b without decoding the
// values: fn gets each key (raw, without quotes) and the raw bytes of its
// value. It checks the object's own structure (braces, quotes, colons,
// commas) and the nesting of values, not the contents of strings, numbers
// and literals: values that matter are decoded, and so validated, by the
// caller (the request by the fingerprint). It is what lets Analyze hand a
// multi-megabyte request to the fingerprint without copying or decoding it
// twice.
func scanObject(b []byte, fn func(key, val []byte) error) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errors.New("not a JSON object")
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipWS(b, i+1) != len(b) {
			return fmt.Errorf("invalid JSON: data after the object at offset %d", i+1)
		}
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return fmt.Errorf("invalid JSON: expected a key at offset %d", i)
		}
		end, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return fmt.Errorf("invalid JSON: expected ':' at offset %d", i)
		}
		i = skipWS(b, i+1)
		vend, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if err := fn(key, b[i:vend]); err != nil {
			return err
		}
		i = skipWS(b, vend)
		if i >= len(b) {
			return errors.New("invalid JSON: unterminated object")
		}
		if b[i] == '}' {
			if skipWS(b, i+1) != len(b) {
				return fmt.Errorf("invalid JSON: data after the object at offset %d", i+1)
			}
			return nil
		}
		if b[i] != ',' {
			return fmt.Errorf("invalid JSON: expected ',' or '}' at offset %d", i)
		}
		i = skipWS(b, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the string starting at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, fmt.Errorf("invalid JSON: unterminated string at offset %d", i)
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
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

// skipValue returns the offset just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("invalid JSON: missing value")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("invalid JSON: unterminated value at offset %d", i)
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return 0, fmt.Errorf("invalid JSON: missing value at offset %d", i)
			}
			return j, nil
		}
		j++
	}
	return j, nil
}
