package promptcache

import (
	"fmt"

	"github.com/groundhog-ai/groundhog/sim"
)

// Amazon Bedrock Converse (POST /model/{modelId}/converse[-stream]).
//
// Bedrock caches the prompt in the order toolConfig.tools, system, messages,
// and its cache marker is a block of its own, {"cachePoint":{"type":
// "default"}}, placed right after the block whose prefix it caches (where
// Anthropic's cache_control is a member of that block). The prefix model
// therefore makes no segment of a cachePoint block: it marks the segment
// before it, so the hashes never see a marker and a body with and without
// cachePoints has the same segments, as the request fingerprint (which drops
// the cachePoint blocks) has the same hash. Any object with a "cachePoint"
// member is such a block, as for the fingerprint.
//
// The model is not in the body but in the path: the caller passes it
// (ParseModel, Request.Model).

// converseMarker is the block breakpoint injection inserts after a chosen
// block of a Converse body, ttl aside.
const converseMarker = `{"cachePoint":{"type":"default"}}`

// converse parses a Bedrock Converse body: toolConfig.tools, system,
// messages.
func (bd *builder) converse() error {
	b, p := bd.p.body, bd.p
	if tc := p.fields.get("toolConfig"); !isNull(b, tc) && b[tc.start] == '{' {
		if tools := bd.field(tc, "tools"); !isNull(b, tools) {
			if err := bd.elems(tools, func(i int, e span) error {
				if bd.cachePoint(e) {
					return nil
				}
				s := seg(KindTool, "toolConfig.tools", i, e)
				s.markable = b[e.start] == '{'
				bd.add(s, nil, sim.MessageOverhead)
				return nil
			}); err != nil {
				return fmt.Errorf("toolConfig.tools: %w", err)
			}
		}
	}
	if sys := p.fields.get("system"); !isNull(b, sys) {
		first := true
		if err := bd.elems(sys, func(i int, e span) error {
			if bd.cachePoint(e) {
				return nil
			}
			s := seg(KindInstructions, "system", i, e)
			o := bd.scanObj(e, false)
			s.text, s.mark, s.scanned = o.text, span{}, true
			// A cachePoint after an empty text block caches nothing new.
			s.markable = b[e.start] == '{' && (!o.text.ok() || o.text.end-o.text.start > 2)
			oh := 0
			if first {
				oh, first = sim.MessageOverhead, false
			}
			bd.add(s, nil, oh)
			return nil
		}); err != nil {
			return fmt.Errorf("system: %w", err)
		}
	}
	msgs := p.fields.get("messages")
	if isNull(b, msgs) {
		return nil
	}
	var blocks []span
	return bd.elems(msgs, func(i int, m span) error {
		if b[m.start] != '{' {
			return syntaxErr(m.start, "a message must be an object")
		}
		mo := bd.scanObj(m, true)
		content := mo.content
		userTurn := strView(b, mo.role) == "user" // compared only: no copy
		if !content.ok() || b[content.start] != '[' {
			s := seg(KindMessage, "messages", i, m)
			s.Message, s.turnEnd = i, userTurn
			bd.add(s, nil, sim.MessageOverhead)
			return nil
		}
		blocks = blocks[:0]
		bd.elems(content, func(_ int, e span) error { blocks = append(blocks, e); return nil })
		last := -1 // the last block that is not a cachePoint
		for j, e := range blocks {
			if !bd.isCachePoint(e) {
				last = j
			}
		}
		head, first := mo.others, true
		for j, e := range blocks {
			if bd.cachePoint(e) {
				continue
			}
			s := seg(KindMessage, "messages", i, e)
			s.sub, s.j, s.Message = "content", j, i
			kind := ""
			if b[e.start] == '{' {
				o := bd.scanObj(e, false)
				s.text, s.scanned = o.text, true
				bd.members(e, func(mb member) error {
					if kind == "" {
						kind = string(mb.key)
					}
					return nil
				})
			}
			switch kind {
			case "image", "document", "video":
				s.Kind = KindImage
			}
			// Bedrock takes no cachePoint after reasoning, and one after an
			// empty text block caches nothing new.
			s.markable = b[e.start] == '{' && kind != "reasoningContent" &&
				!(kind == "text" && (!s.text.ok() || s.text.end-s.text.start <= 2))
			s.turnEnd = userTurn && j == last
			oh := 0
			var h []span
			if first {
				oh, h, first = sim.MessageOverhead, head, false
			}
			bd.add(s, h, oh)
		}
		if first {
			s := seg(KindMessage, "messages", i, m)
			s.Message = i
			bd.add(s, nil, sim.MessageOverhead)
		}
		return nil
	})
}

// isCachePoint reports whether the block at e is a cachePoint block: an
// object with a "cachePoint" member.
func (bd *builder) isCachePoint(e span) bool {
	return bd.p.body[e.start] == '{' && bd.scanObj(e, false).marker.ok()
}

// cachePoint reports whether the block at e is a cachePoint block and, when
// it is, counts it against the provider's limit and marks the segment
// before it (the prefix it caches), with the TTL it asks for.
func (bd *builder) cachePoint(e span) bool {
	b, p := bd.p.body, bd.p
	if !bd.isCachePoint(e) {
		return false
	}
	cp := bd.scanObj(e, false).marker
	p.Markers++
	var ttl span
	if b[cp.start] == '{' {
		ttl = bd.field(cp, "ttl")
	}
	d := parseTTL(str(b, ttl))
	p.TTL = max(p.TTL, d)
	if n := len(p.Segments); n > 0 {
		last := &p.Segments[n-1]
		last.Marker = true
		last.MarkerTTL = max(last.MarkerTTL, d)
	}
	return true
}
