package sim

import (
	"bytes"
	"encoding/json"
	"strings"
)

// compactJSON returns raw without insignificant whitespace and without any
// cache marker (cache_control, prompt_cache_breakpoint: not content).
func compactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	stripCacheControl(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// contentPart is the part of a content element the sim reads: its text, if
// any, and its type.
type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// writeContent appends the tokens of a message content: a string, or an
// array of parts of which text parts count their text and any other part its
// JSON. It returns the content's text (for the tool-call trigger).
func writeContent(ts *tokenStream, raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		ts.text(s)
		return s
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		ts.text(compactJSON(raw))
		return ""
	}
	var text strings.Builder
	for _, p := range parts {
		text.WriteString(writePart(ts, p))
		text.WriteByte(' ')
	}
	return text.String()
}

// writePart appends the tokens of one content part and returns its text.
func writePart(ts *tokenStream, raw json.RawMessage) string {
	var p contentPart
	if json.Unmarshal(raw, &p) == nil && p.Text != nil {
		ts.text(*p.Text)
		return *p.Text
	}
	ts.text(compactJSON(raw))
	return ""
}
