package promptcache

import (
	"fmt"

	"github.com/groundhog-ai/groundhog/sim"
)

// Google Gemini API (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent).
//
// Gemini caches implicitly: no marker, every long enough prefix of a
// prompt may be read by a later one. Its prompt is rendered in the order
// tools, system instruction, contents (the simulator tokenizes it so), so
// the prefix model makes, in that order:
//
//   - a zero-token "parameters" segment for a cachedContent the request
//     names: the explicit cache comes before everything the request
//     carries, so another cache (or none) shares no prefix with it;
//   - one tool segment per function declaration (tools[i].
//     functionDeclarations[j]), or per tool for a built-in one
//     (googleSearch, codeExecution, …);
//   - a zero-token tool segment for toolConfig, right after the tools:
//     how the model may call them is part of how they are rendered, and
//     changing it is named tools_changed;
//   - one instructions segment per part of systemInstruction;
//   - one message segment per part of each content (the role mixed into
//     the first), inlineData and fileData parts as images.
//
// Members are read under their JSON names or their proto field names
// (system_instruction, function_declarations, …), both of which the API
// accepts. The model is not in the body but in the path: the caller
// passes it (ParseModel, Request.Model).

// geminiNoMarker is the marker key of the gemini shape: a key no valid JSON
// body holds (a raw NUL byte cannot appear in a JSON string), so no member
// is ever taken for a marker and no byte is ever stripped from a hash.
const geminiNoMarker = "\x00"

// gemini parses a Gemini GenerateContentRequest body: cachedContent,
// tools, toolConfig, systemInstruction, contents.
func (bd *builder) gemini() error {
	b, p := bd.p.body, bd.p
	get := func(name, proto string) span {
		if v := p.fields.get(name); v.ok() {
			return v
		}
		return p.fields.get(proto)
	}
	if cc := get("cachedContent", "cached_content"); !isNull(b, cc) {
		bd.add(seg(KindParams, "cachedContent", -1, cc), nil, 0)
	}
	if tools := get("tools", "tools"); !isNull(b, tools) {
		if err := bd.elems(tools, func(i int, t span) error {
			var decls span
			if b[t.start] == '{' {
				if decls = bd.field(t, "functionDeclarations"); !decls.ok() {
					decls = bd.field(t, "function_declarations")
				}
			}
			if isNull(b, decls) || b[decls.start] != '[' {
				bd.add(seg(KindTool, "tools", i, t), nil, sim.MessageOverhead)
				return nil
			}
			return bd.elems(decls, func(j int, d span) error {
				s := seg(KindTool, "tools", i, d)
				s.sub, s.j = "functionDeclarations", j
				bd.add(s, nil, sim.MessageOverhead)
				return nil
			})
		}); err != nil {
			return fmt.Errorf("tools: %w", err)
		}
	}
	if tc := get("toolConfig", "tool_config"); !isNull(b, tc) {
		s := seg(KindTool, "toolConfig", -1, tc)
		s.noTokens = true
		bd.add(s, nil, 0)
	}
	if si := get("systemInstruction", "system_instruction"); !isNull(b, si) {
		bd.geminiContent(KindInstructions, "systemInstruction", -1, si)
	}
	contents := get("contents", "contents")
	if isNull(b, contents) {
		return nil
	}
	return bd.elems(contents, func(i int, c span) error {
		if b[c.start] != '{' {
			return syntaxErr(c.start, "a content must be an object")
		}
		bd.geminiContent(KindMessage, "contents", i, c)
		return nil
	})
}

// geminiContent appends a Content (a system instruction or one of the
// contents, index i; -1 for the system instruction): one segment per part,
// the content's other members (its role) mixed into the first, which also
// carries the framing tokens; one segment for the whole content when it
// has no parts.
func (bd *builder) geminiContent(kind Kind, top string, i int, c span) {
	b := bd.p.body
	msg := i
	if kind != KindMessage {
		msg = -1
	}
	var parts span
	var head []span
	userTurn := kind == KindMessage
	if b[c.start] == '{' {
		bd.members(c, func(m member) error {
			switch string(m.key) {
			case "parts":
				parts = m.val
			case "role":
				// A content without a role is the user's.
				r := strView(b, m.val) // compared only: no copy
				userTurn = kind == KindMessage && (r == "user" || r == "")
				head = append(head, m.whole)
			default:
				head = append(head, m.whole)
			}
			return nil
		})
	}
	var ps []span
	if !isNull(b, parts) && b[parts.start] == '[' {
		bd.elems(parts, func(_ int, e span) error { ps = append(ps, e); return nil })
	}
	if len(ps) == 0 {
		s := seg(kind, top, i, c)
		s.Message, s.turnEnd = msg, userTurn
		bd.add(s, nil, sim.MessageOverhead)
		return
	}
	for j, e := range ps {
		s := seg(kind, top, i, e)
		s.sub, s.j, s.Message = "parts", j, msg
		if b[e.start] == '{' {
			bd.members(e, func(m member) error {
				switch string(m.key) {
				case "text":
					s.text = m.val
				case "inlineData", "inline_data", "fileData", "file_data":
					if kind == KindMessage {
						s.Kind = KindImage
					}
				}
				return nil
			})
		}
		s.scanned = true // no marker: text is all a part needs
		s.turnEnd = userTurn && j == len(ps)-1
		oh := 0
		var h []span
		if j == 0 {
			oh, h = sim.MessageOverhead, head
		}
		bd.add(s, h, oh)
	}
}
