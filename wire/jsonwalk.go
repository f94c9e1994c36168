package wire

import "bytes"

// Walking a JSON text already validated: the few primitives shared by the
// stages that read or rewrite one member of a body without decoding it all.

// SkipSpace returns the offset of the first non-space byte of b at or
// after i (JSON white space: space, tab, CR, LF).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// StringEnd returns the offset past the string that starts at b[i] == '"'
// in b, a JSON text already known to be valid (json.Valid): no check is
// made, so on invalid JSON the result is meaningless (but within len(b)).
func StringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// ValueEnd returns the offset past the JSON value that starts at b[i] in
// b, a JSON text already known to be valid (see StringEnd).
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = StringEnd(b, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	return j
}
