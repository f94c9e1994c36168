package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// Anthropic messages: message_start carries the message with empty content,
// each content block streams as content_block_start / content_block_delta…
// / content_block_stop, message_delta carries the stop reason and the final
// (cumulative) usage, and message_stop ends the stream. Pings may appear
// anywhere.

// messagesEvent is the part of an Anthropic stream event groundhog reads.
type messagesEvent struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message"`
	Index        *int64          `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

// eventType returns the payload's "type", or the SSE event name when the
// payload has none.
func (e *messagesEvent) eventType(ev groundhog.Event) string {
	if e.Type != "" {
		return e.Type
	}
	return ev.Name
}

// blockAcc accumulates one content block.
type blockAcc struct {
	start     object
	text      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
	json      strings.Builder
	citations []json.RawMessage
	hasText   bool
	hasThink  bool
	hasSig    bool
	hasJSON   bool
	hasCite   bool
}

// messagesBodyFromEvents assembles the message object of a stream, as the
// SDK's Message.Accumulate does: message_start gives the message, blocks
// are rebuilt from their deltas, message_delta's non-null fields and usage
// overwrite the start's (its stop_reason and stop_sequence always win: null
// is their final value when the turn has none).
func messagesBodyFromEvents(events []groundhog.Event) ([]byte, error) {
	var (
		msg     object
		blocks  []*blockAcc
		started bool
		stopped bool
	)
	for i, ev := range events {
		if ev.Name == "error" {
			return nil, fmt.Errorf("messages event %d: %w", i, ErrStreamFailed)
		}
		d := bytes.TrimSpace(ev.Data)
		if len(d) == 0 {
			continue
		}
		var e messagesEvent
		if err := json.Unmarshal(d, &e); err != nil {
			return nil, fmt.Errorf("messages event %d: %w: %w", i, ErrMalformed, err)
		}
		typ := e.eventType(ev)
		if typ != "message_start" && typ != "ping" && typ != "error" && !started {
			return nil, fmt.Errorf("messages event %d: %w: %s before message_start", i, ErrMalformed, typ)
		}
		switch typ {
		case "error":
			return nil, fmt.Errorf("messages event %d: %w", i, ErrStreamFailed)
		case "message_start":
			if started {
				return nil, fmt.Errorf("messages event %d: %w: second message_start", i, ErrMalformed)
			}
			m, err := parseObject(e.Message)
			if err != nil {
				return nil, fmt.Errorf("messages event %d: message: %w", i, err)
			}
			msg, started = m, true
		case "content_block_start":
			if e.Index == nil || *e.Index != int64(len(blocks)) {
				return nil, fmt.Errorf("messages event %d: %w: content block index out of order", i, ErrMalformed)
			}
			b, err := parseObject(e.ContentBlock)
			if err != nil {
				return nil, fmt.Errorf("messages event %d: content_block: %w", i, err)
			}
			blocks = append(blocks, &blockAcc{start: b})
		case "content_block_delta":
			if e.Index == nil || *e.Index < 0 || *e.Index >= int64(len(blocks)) {
				return nil, fmt.Errorf("messages event %d: %w: delta for unknown content block", i, ErrMalformed)
			}
			if err := blocks[*e.Index].add(e.Delta); err != nil {
				return nil, fmt.Errorf("messages event %d: %w", i, err)
			}
		case "message_delta":
			if err := mergeMessageDelta(&msg, e.Delta, e.Usage); err != nil {
				return nil, fmt.Errorf("messages event %d: %w", i, err)
			}
		case "message_stop":
			stopped = true
		}
	}
	if !started || !stopped {
		return nil, fmt.Errorf("messages: %w: no message_start or message_stop", ErrIncompleteStream)
	}
	content := make([]json.RawMessage, len(blocks))
	for i, b := range blocks {
		raw, err := b.body()
		if err != nil {
			return nil, fmt.Errorf("messages: content block %d: %w", i, err)
		}
		content[i] = raw
	}
	msg.set("content", jsonArray(content))
	return msg.bytes(), nil
}

// mergeMessageDelta applies a message_delta to msg.
func mergeMessageDelta(msg *object, delta, usage json.RawMessage) error {
	if len(delta) > 0 && !isNull(delta) {
		d, err := parseObject(delta)
		if err != nil {
			return fmt.Errorf("delta: %w", err)
		}
		for _, m := range d {
			// Match the stop fields as encoding/json does (ignoring case), so
			// this agrees with StreamComplete about the stop reason.
			key := m.key
			for _, k := range []string{"stop_reason", "stop_sequence"} {
				if strings.EqualFold(key, k) {
					key = k
				}
			}
			if key == "stop_reason" || key == "stop_sequence" || !isNull(m.val) {
				msg.set(key, m.val)
			}
		}
	}
	if len(usage) > 0 && !isNull(usage) {
		u, err := parseObject(usage)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		cur, _ := msg.obj("usage")
		for _, m := range u {
			if !isNull(m.val) {
				cur.set(m.key, m.val)
			}
		}
		msg.set("usage", cur.raw())
	}
	return nil
}

func (b *blockAcc) add(raw json.RawMessage) error {
	var d struct {
		Type        string          `json:"type"`
		Text        *string         `json:"text"`
		PartialJSON *string         `json:"partial_json"`
		Thinking    *string         `json:"thinking"`
		Signature   *string         `json:"signature"`
		Citation    json.RawMessage `json:"citation"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("delta: %w: %w", ErrMalformed, err)
	}
	switch d.Type {
	case "text_delta":
		if d.Text != nil {
			b.hasText = true
			b.text.WriteString(*d.Text)
		}
	case "input_json_delta":
		if d.PartialJSON != nil {
			b.hasJSON = true
			b.json.WriteString(*d.PartialJSON)
		}
	case "thinking_delta":
		if d.Thinking != nil {
			b.hasThink = true
			b.thinking.WriteString(*d.Thinking)
		}
	case "signature_delta":
		if d.Signature != nil {
			b.hasSig = true
			b.signature.WriteString(*d.Signature)
		}
	case "citations_delta":
		if d.Citation != nil && !isNull(d.Citation) {
			var c bytes.Buffer
			if err := json.Compact(&c, d.Citation); err != nil {
				return fmt.Errorf("citation: %w: %w", ErrMalformed, err)
			}
			b.hasCite = true
			b.citations = append(b.citations, c.Bytes())
		}
	}
	return nil
}

// body renders the block: the start's fields with the deltas applied.
func (b *blockAcc) body() (json.RawMessage, error) {
	out := b.start.clone()
	if b.hasText {
		prefix, _ := out.str("text")
		out.set("text", jsonString(prefix+b.text.String()))
	}
	if b.hasThink {
		prefix, _ := out.str("thinking")
		out.set("thinking", jsonString(prefix+b.thinking.String()))
	}
	if b.hasSig {
		prefix, _ := out.str("signature")
		out.set("signature", jsonString(prefix+b.signature.String()))
	}
	if b.hasCite {
		prev, _ := out.arr("citations")
		out.set("citations", jsonArray(append(prev, b.citations...)))
	}
	if b.hasJSON && strings.TrimSpace(b.json.String()) != "" {
		var c bytes.Buffer
		if err := json.Compact(&c, []byte(b.json.String())); err != nil {
			return nil, fmt.Errorf("%w: tool input is not JSON: %w", ErrMalformed, err)
		}
		out.set("input", c.Bytes())
	}
	return out.raw(), nil
}

// messagesEventsFromBody synthesizes the stream of an Anthropic message.
func messagesEventsFromBody(body []byte) ([]groundhog.Event, error) {
	msg, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("messages body: %w", err)
	}
	blocks, ok := msg.arr("content")
	if !ok && msg.has("content") && !isNull(msg.get("content")) {
		return nil, fmt.Errorf("messages body: %w: content is not an array", ErrMalformed)
	}
	usage, _ := msg.obj("usage")
	var events []groundhog.Event
	emit := func(typ string, fields ...member) {
		o := make(object, 0, len(fields)+1)
		o = append(o, member{"type", jsonString(typ)})
		o = append(o, fields...)
		events = append(events, groundhog.Event{Name: typ, Data: o.bytes()})
	}

	// message_start: the message before any output. Anthropic reports the
	// input side of usage here and output_tokens 1 (0 for an empty answer).
	start := msg.clone()
	start.set("content", rawEmptyArr)
	for _, k := range []string{"stop_reason", "stop_sequence", "stop_details"} {
		start.setIfPresent(k, rawNull)
	}
	out, _ := rawInt(usage.get("output_tokens"))
	if usage != nil {
		u := usage.clone()
		u.setIfPresent("output_tokens", jsonInt(min(out, 1)))
		u.del("iterations") // Anthropic sends them with the last message_delta
		start.set("usage", u.raw())
	}
	emit("message_start", member{"message", start.raw()})
	emit("ping")

	for i, raw := range blocks {
		b, err := parseCompactObject(raw)
		if err != nil {
			return nil, fmt.Errorf("messages body: content block %d: %w", i, err)
		}
		idx := member{"index", jsonInt(int64(i))}
		blockStart, deltas := splitBlock(b)
		emit("content_block_start", idx, member{"content_block", blockStart.raw()})
		for _, d := range deltas {
			emit("content_block_delta", idx, member{"delta", d.raw()})
		}
		emit("content_block_stop", idx)
	}

	// message_delta: stop reason and the final usage. Its usage counts are
	// cumulative totals, so repeating the input side is harmless and lets a
	// reader that only looks here see the whole bill.
	// A real message always has stop_reason and stop_sequence; a body without
	// them keeps them out of the delta, so it converts back unchanged.
	var delta object
	for _, k := range []string{"stop_reason", "stop_sequence", "stop_details"} {
		if v := msg.get(k); v != nil {
			delta.set(k, v)
		}
	}
	fields := []member{{"delta", delta.raw()}}
	if usage != nil {
		var u object
		for _, k := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "server_tool_use", "output_tokens_details", "iterations"} {
			if v := usage.get(k); v != nil {
				u.set(k, v)
			}
		}
		fields = append(fields, member{"usage", u.raw()})
	}
	emit("message_delta", fields...)
	emit("message_stop")
	return events, nil
}

// splitBlock returns the content_block_start form of a content block and
// the deltas that complete it.
func splitBlock(b object) (object, []object) {
	start := b.clone()
	var deltas []object
	typ, _ := b.str("type")
	// streamText empties a string field in the start block and returns its
	// text; a field that is absent or not a string stays as it is.
	streamText := func(key string) (string, bool) {
		v, ok := b.str(key)
		if ok {
			start.set(key, rawEmptyStr)
		}
		return v, ok
	}
	switch {
	case typ == "text":
		text, _ := streamText("text")
		if cites, ok := b.arr("citations"); ok && len(cites) > 0 {
			start.set("citations", rawEmptyArr)
			for _, c := range cites {
				deltas = append(deltas, object{{"type", jsonString("citations_delta")}, {"citation", c}})
			}
		}
		for _, p := range splitText(text) {
			deltas = append(deltas, object{{"type", jsonString("text_delta")}, {"text", jsonString(p)}})
		}
	case typ == "thinking":
		thinking, _ := streamText("thinking")
		sig, _ := streamText("signature")
		for _, p := range splitText(thinking) {
			deltas = append(deltas, object{{"type", jsonString("thinking_delta")}, {"thinking", jsonString(p)}})
		}
		if sig != "" {
			deltas = append(deltas, object{{"type", jsonString("signature_delta")}, {"signature", jsonString(sig)}})
		}
	case isObject(b.get("input")):
		// tool_use, server_tool_use, mcp_tool_use: the input streams as JSON
		// text. An empty input is one empty partial_json, as Anthropic sends.
		input := string(b.get("input"))
		start.set("input", rawEmptyObj)
		if input == "{}" {
			deltas = append(deltas, object{{"type", jsonString("input_json_delta")}, {"partial_json", rawEmptyStr}})
			break
		}
		for _, p := range splitText(input) {
			deltas = append(deltas, object{{"type", jsonString("input_json_delta")}, {"partial_json", jsonString(p)}})
		}
	}
	return start, deltas
}
