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
	model, u, _, err = UsagePartsFromValidBody(shape, body)
	return model, u, err
}

// UsagePartsFromValidBody is UsageFromValidBody that also returns the parts
// of a usage that ran in several iterations (Anthropic usage.iterations),
// each with its kind and, when it ran on another model than the call's, that
// model; nil for a usage that ran in one.
func UsagePartsFromValidBody(shape groundhog.Shape, body []byte) (model string, u groundhog.Usage, parts []groundhog.UsagePart, err error) {
	slow := func() (string, groundhog.Usage, []groundhog.UsagePart, error) {
		model, err := bodyModelUsage(shape, body)
		if err != nil {
			return model.model, groundhog.Usage{}, nil, err
		}
		u, parts, err := parseUsageParts(shape, model.usage, false)
		if err != nil {
			return model.model, groundhog.Usage{}, nil, fmt.Errorf("wire: %s body: %w", shape, err)
		}
		return model.model, u, parts, nil
	}
	if shape == groundhog.ShapeConverse || shape == groundhog.ShapeGemini {
		model, u, err := UsageFromBody(shape, body)
		return model, u, nil, err
	}
	if !shape.Valid() {
		return slow()
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return slow()
	}
	var rawModel, rawUsage []byte
	i := SkipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		ke := StringEnd(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 || !ascii(key) {
			return slow()
		}
		i = SkipSpace(b, ke)
		i = SkipSpace(b, i+1) // ':'
		ve := ValueEnd(b, i)
		switch {
		case asciiFoldEqual(key, "model"):
			rawModel = b[i:ve]
		case asciiFoldEqual(key, "usage"):
			rawUsage = b[i:ve]
		}
		i = SkipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	model, _ = rawString(json.RawMessage(rawModel))
	u, parts, err = parseUsageParts(shape, json.RawMessage(rawUsage), true) // a value of a valid body: valid
	if err != nil {
		return model, groundhog.Usage{}, nil, fmt.Errorf("wire: %s body: %w", shape, err)
	}
	return model, u, parts, nil
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
