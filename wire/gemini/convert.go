package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	groundhog "github.com/groundhog-ai/groundhog"
)

// EventsFromBody returns the stream equivalent to a generateContent body:
// one chunk holding the whole response (a stream may deliver a response in
// any number of chunks; the SDKs join them).
func EventsFromBody(body []byte) ([]groundhog.Event, error) {
	if !jsonObject(body) {
		return nil, fmt.Errorf("%w: body is not a JSON object", ErrMalformed)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return []groundhog.Event{{Data: compact.Bytes()}}, nil
}

// BodyFromEvents joins the chunks of a complete stream into the
// generateContent body they stand for: the members of the last chunk that
// has each (usageMetadata, modelVersion, responseId, promptFeedback, …),
// and per candidate (by index) its parts in order, adjacent text parts of
// the same kind (thought or not, no other member) joined into one, with
// the candidate's other members (finishReason, safetyRatings, …) from its
// last chunk.
func BodyFromEvents(events []groundhog.Event) ([]byte, error) {
	top := map[string]json.RawMessage{}
	type cand struct {
		fields map[string]json.RawMessage
		role   json.RawMessage
		parts  []map[string]json.RawMessage
	}
	cands := map[int]*cand{}
	for _, ev := range events {
		var c map[string]json.RawMessage
		if err := json.Unmarshal(ev.Data, &c); err != nil || c == nil {
			return nil, fmt.Errorf("%w: stream chunk is not a JSON object", ErrMalformed)
		}
		for k, v := range c {
			if k != "candidates" {
				top[k] = v
			}
		}
		var list []map[string]json.RawMessage
		if raw, ok := c["candidates"]; ok && json.Unmarshal(raw, &list) != nil {
			return nil, fmt.Errorf("%w: candidates", ErrMalformed)
		}
		for pos, cj := range list {
			idx := pos
			if raw, ok := cj["index"]; ok {
				if json.Unmarshal(raw, &idx) != nil {
					return nil, fmt.Errorf("%w: candidate index", ErrMalformed)
				}
			}
			acc := cands[idx]
			if acc == nil {
				acc = &cand{fields: map[string]json.RawMessage{}}
				cands[idx] = acc
			}
			for k, v := range cj {
				if k != "content" {
					acc.fields[k] = v
				}
			}
			raw, ok := cj["content"]
			if !ok {
				continue
			}
			var content struct {
				Role  json.RawMessage              `json:"role"`
				Parts []map[string]json.RawMessage `json:"parts"`
			}
			if json.Unmarshal(raw, &content) != nil {
				return nil, fmt.Errorf("%w: candidate content", ErrMalformed)
			}
			if len(content.Role) > 0 {
				acc.role = content.Role
			}
			for _, p := range content.Parts {
				acc.parts = appendPart(acc.parts, p)
			}
		}
	}
	if len(cands) > 0 {
		idxs := make([]int, 0, len(cands))
		for i := range cands {
			idxs = append(idxs, i)
		}
		sort.Ints(idxs)
		out := make([]map[string]json.RawMessage, 0, len(idxs))
		for _, i := range idxs {
			c := cands[i]
			m := c.fields
			content := map[string]any{"parts": c.parts}
			if c.parts == nil {
				content["parts"] = []any{}
			}
			if c.role != nil {
				content["role"] = c.role
			}
			m["content"] = mustMarshal(content)
			out = append(out, m)
		}
		top["candidates"] = mustMarshal(out)
	}
	return json.Marshal(top)
}

// appendPart appends p to parts, joining it to the last part when both are
// plain text of the same kind.
func appendPart(parts []map[string]json.RawMessage, p map[string]json.RawMessage) []map[string]json.RawMessage {
	if n := len(parts); n > 0 && plainText(parts[n-1]) && plainText(p) && isThought(parts[n-1]) == isThought(p) {
		var a, b string
		if json.Unmarshal(parts[n-1]["text"], &a) == nil && json.Unmarshal(p["text"], &b) == nil {
			parts[n-1]["text"] = mustMarshal(a + b)
			return parts
		}
	}
	cp := make(map[string]json.RawMessage, len(p))
	for k, v := range p {
		cp[k] = v
	}
	return append(parts, cp)
}

// plainText reports whether a part is only text (and the thought flag).
func plainText(p map[string]json.RawMessage) bool {
	if _, ok := p["text"]; !ok {
		return false
	}
	for k := range p {
		if k != "text" && k != "thought" {
			return false
		}
	}
	return true
}

func isThought(p map[string]json.RawMessage) bool {
	return string(bytes.TrimSpace(p["thought"])) == "true"
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("gemini: marshal: " + err.Error())
	}
	return b
}
