package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	groundhog "github.com/groundhog-ai/groundhog"
)

// UsageFromValidBody is UsageFromBody for a body already known to be valid
// JSON (json.Valid): the same results for every such body (pinned by
// TestUsageFromValidBodyMatches), without decoding the whole body through
// encoding/json — it walks the top-level members once, takes "model" and
// "usage" (matched as encoding/json matches the struct fields: ASCII case
// folded, the last duplicate winning) and decodes only those. A top-level
// key with an escape or a non-ASCII byte (where encoding/json's matching
// folds more) sends the body the UsageFromBody way.
func UsageFromValidBody(shape groundhog.Shape, body []byte) (model string, u groundhog.Usage, err error) {
	if !shape.Valid() {
		return UsageFromBody(shape, body)
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return UsageFromBody(shape, body)
	}
	var rawModel, rawUsage []byte
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		ke := validStringEnd(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 || !ascii(key) {
			return UsageFromBody(shape, body)
		}
		i = skipSpace(b, ke)
		i = skipSpace(b, i+1) // ':'
		ve := validValueEnd(b, i)
		switch {
		case asciiFoldEqual(key, "model"):
			rawModel = b[i:ve]
		case asciiFoldEqual(key, "usage"):
			rawUsage = b[i:ve]
		}
		i = skipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	model, _ = rawString(json.RawMessage(rawModel))
	u, err = parseUsage(shape, json.RawMessage(rawUsage))
	if err != nil {
		return model, groundhog.Usage{}, fmt.Errorf("wire: %s body: %w", shape, err)
	}
	return model, u, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// asciiFoldEqual reports whether key equals name (lower-case ASCII) with
// ASCII letters case folded.
func asciiFoldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range key {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// validStringEnd returns the offset past the string at b[i] == '"' of a
// valid JSON text.
func validStringEnd(b []byte, i int) int {
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

// validValueEnd returns the offset past the value at b[i] of a valid JSON
// text.
func validValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return validStringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = validStringEnd(b, j)
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
