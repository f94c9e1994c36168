package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// OpenAI chat completions: a non-stream body is a "chat.completion" object,
// a stream a series of "chat.completion.chunk" objects as unnamed events,
// ended by a "[DONE]" event.

// doneData is the payload of the event that ends an OpenAI chat stream.
var doneData = []byte("[DONE]")

// chatTextKeys are the message fields streamed as string deltas that
// concatenate: content and refusal (OpenAI), and the reasoning text that
// OpenAI-compatible providers (DeepSeek, vLLM, OpenRouter) stream the same way.
var chatTextKeys = []string{"content", "refusal", "reasoning_content", "reasoning"}

// The members groundhog interprets at each level of a chat chunk or body.
// An unknown member whose name equals one of these but for case is dropped
// in conversions: encoding/json (and so StreamComplete, UsageFromEvents and
// the SDKs) matches names case-insensitively, and such a member would
// shadow the real one once moved to another position.
var (
	chunkKeys    = []string{"id", "object", "created", "model", "choices", "usage", "service_tier", "system_fingerprint", "error", "obfuscation"}
	choiceKeys   = []string{"index", "delta", "message", "logprobs", "finish_reason"}
	deltaKeys    = []string{"role", "content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call", "annotations"}
	toolKeys     = []string{"index", "id", "type", "function"}
	functionKeys = []string{"name", "arguments"}
)

// shadows reports whether key differs from one of known only by case.
func shadows(key string, known []string) bool {
	for _, k := range known {
		if key != k && strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// textAcc accumulates one streamed text field. A field seen only as null
// stays null; any string delta makes it a string; a non-string, non-null
// value (a provider extension) is kept as the last one seen.
type textAcc struct {
	seen  bool
	isStr bool
	b     strings.Builder
	other json.RawMessage
}

func (t *textAcc) add(v json.RawMessage) {
	t.seen = true
	if s, ok := rawString(v); ok {
		t.isStr = true
		t.b.WriteString(s)
	} else if !isNull(v) {
		t.other = v
	}
}

func (t *textAcc) value() json.RawMessage {
	switch {
	case t.isStr:
		return jsonString(t.b.String())
	case t.other != nil:
		return t.other
	}
	return rawNull
}

// setLastNonNull records v under key in o: the first value seen keeps the
// key's position, later non-null values replace it.
func setLastNonNull(o *object, key string, v json.RawMessage) {
	if cur := o.get(key); cur != nil && isNull(v) {
		return
	}
	o.set(key, v)
}

type chatToolAcc struct {
	index          int64
	id, typ        json.RawMessage
	name, args     strings.Builder
	hasFunction    bool
	extras         object
	functionExtras object
}

type chatChoiceAcc struct {
	index        int64
	role         json.RawMessage
	text         map[string]*textAcc
	tools        map[int64]*chatToolAcc
	fnCall       *chatToolAcc // legacy function_call
	annotations  []json.RawMessage
	annotSeen    bool
	msgExtras    object
	lpSeen       bool
	lp           map[string][]json.RawMessage // logprobs.content / logprobs.refusal
	lpKeys       map[string]bool
	finish       json.RawMessage
	choiceExtras object
}

// chatBodyFromEvents assembles a chat.completion object from chunks.
func chatBodyFromEvents(events []groundhog.Event) ([]byte, error) {
	var (
		id, created, model     json.RawMessage
		top                    object // system_fingerprint, service_tier, usage and unknown fields
		choices                = map[int64]*chatChoiceAcc{}
		order                  []int64
		sawChunk, sawCompleted bool
	)
	for i, ev := range events {
		d := bytes.TrimSpace(ev.Data)
		if bytes.Equal(d, doneData) {
			continue
		}
		if len(d) == 0 {
			continue
		}
		if ev.Name == "error" {
			return nil, fmt.Errorf("event %d: %w", i, ErrStreamFailed)
		}
		o, err := parseObject(d)
		if err != nil {
			return nil, fmt.Errorf("chat chunk %d: %w", i, err)
		}
		if e := o.get("error"); e != nil && !isNull(e) {
			return nil, fmt.Errorf("event %d: %w", i, ErrStreamFailed)
		}
		sawChunk = true
		for _, m := range o {
			switch m.key {
			case "id":
				if id == nil && !isNull(m.val) {
					id = m.val
				}
			case "created":
				if created == nil && !isNull(m.val) {
					created = m.val
				}
			case "model":
				if s, ok := rawString(m.val); ok && s != "" && model == nil {
					model = m.val
				}
			case "object", "obfuscation", "choices":
			default: // usage, system_fingerprint, service_tier, extensions
				if !shadows(m.key, chunkKeys) {
					setLastNonNull(&top, m.key, m.val)
				}
			}
		}
		elems, ok := o.arr("choices")
		if !ok && o.has("choices") && !isNull(o.get("choices")) {
			return nil, fmt.Errorf("chat chunk %d: %w: choices is not an array", i, ErrMalformed)
		}
		for _, e := range elems {
			c, err := parseCompactObject(e)
			if err != nil {
				return nil, fmt.Errorf("chat chunk %d: choice: %w", i, err)
			}
			idx, ok := rawInt(c.get("index"))
			if !ok {
				return nil, fmt.Errorf("chat chunk %d: %w: bad choice index", i, ErrMalformed)
			}
			acc := choices[idx]
			if acc == nil {
				acc = &chatChoiceAcc{index: idx, text: map[string]*textAcc{}, tools: map[int64]*chatToolAcc{}}
				choices[idx] = acc
				order = append(order, idx)
			}
			if err := acc.add(c); err != nil {
				return nil, fmt.Errorf("chat chunk %d: %w", i, err)
			}
			if acc.finish != nil {
				sawCompleted = true
			}
		}
	}
	if !sawChunk || !sawCompleted {
		return nil, fmt.Errorf("chat: %w: no finish_reason", ErrIncompleteStream)
	}
	slices.Sort(order)
	cs := make([]json.RawMessage, 0, len(order))
	for _, idx := range order {
		acc := choices[idx]
		if acc.finish == nil {
			return nil, fmt.Errorf("chat: %w: choice %d has no finish_reason", ErrIncompleteStream, idx)
		}
		cs = append(cs, acc.body())
	}
	var out object
	out.set("id", orDefault(id, rawEmptyStr))
	out.set("object", json.RawMessage(`"chat.completion"`))
	out.set("created", orDefault(created, json.RawMessage("0")))
	out.set("model", orDefault(model, rawEmptyStr))
	out.set("choices", jsonArray(cs))
	for _, k := range []string{"usage", "service_tier", "system_fingerprint"} {
		if v := top.get(k); v != nil {
			out.set(k, v)
		}
	}
	for _, m := range top {
		if !out.has(m.key) {
			out.set(m.key, m.val)
		}
	}
	return out.bytes(), nil
}

func orDefault(v, def json.RawMessage) json.RawMessage {
	if v == nil {
		return def
	}
	return v
}

// add applies one chunk choice.
func (acc *chatChoiceAcc) add(c object) error {
	for _, m := range c {
		switch m.key {
		case "index":
		case "delta":
			if isNull(m.val) {
				continue
			}
			d, err := parseCompactObject(m.val)
			if err != nil {
				return fmt.Errorf("delta: %w", err)
			}
			if err := acc.addDelta(d); err != nil {
				return err
			}
		case "finish_reason":
			if !isNull(m.val) {
				acc.finish = m.val
			}
		case "logprobs":
			if isNull(m.val) {
				continue
			}
			lp, err := parseCompactObject(m.val)
			if err != nil {
				return fmt.Errorf("logprobs: %w", err)
			}
			acc.lpSeen = true
			if acc.lp == nil {
				acc.lp, acc.lpKeys = map[string][]json.RawMessage{}, map[string]bool{}
			}
			for _, k := range []string{"content", "refusal"} {
				if a, ok := lp.arr(k); ok {
					acc.lpKeys[k] = true
					acc.lp[k] = append(acc.lp[k], a...)
				}
			}
		default:
			if !shadows(m.key, choiceKeys) {
				setLastNonNull(&acc.choiceExtras, m.key, m.val)
			}
		}
	}
	return nil
}

func (acc *chatChoiceAcc) addDelta(d object) error {
	for _, m := range d {
		switch m.key {
		case "role":
			if !isNull(m.val) {
				acc.role = m.val
			}
		case "content", "refusal", "reasoning_content", "reasoning":
			t := acc.text[m.key]
			if t == nil {
				t = &textAcc{}
				acc.text[m.key] = t
			}
			t.add(m.val)
		case "tool_calls":
			if isNull(m.val) {
				continue
			}
			calls, ok := rawArray(m.val)
			if !ok {
				return fmt.Errorf("%w: tool_calls is not an array", ErrMalformed)
			}
			for _, raw := range calls {
				tc, err := parseCompactObject(raw)
				if err != nil {
					return fmt.Errorf("tool call: %w", err)
				}
				idx, ok := rawInt(tc.get("index"))
				if !ok {
					// Some providers send -1 for a single call; the SDK
					// accumulator treats it as 0, and so do we.
					if string(tc.get("index")) != "-1" {
						return fmt.Errorf("%w: bad tool call index", ErrMalformed)
					}
					idx = 0
				}
				t := acc.tools[idx]
				if t == nil {
					t = &chatToolAcc{index: idx}
					acc.tools[idx] = t
				}
				if err := t.add(tc); err != nil {
					return err
				}
			}
		case "function_call":
			if isNull(m.val) {
				continue
			}
			if acc.fnCall == nil {
				acc.fnCall = &chatToolAcc{}
			}
			if err := acc.fnCall.addFunction(m.val); err != nil {
				return err
			}
		case "annotations":
			acc.annotSeen = true
			if a, ok := rawArray(m.val); ok {
				acc.annotations = append(acc.annotations, a...)
			}
		default:
			if !shadows(m.key, deltaKeys) {
				setLastNonNull(&acc.msgExtras, m.key, m.val)
			}
		}
	}
	return nil
}

func (t *chatToolAcc) add(tc object) error {
	for _, m := range tc {
		switch m.key {
		case "index":
		case "id":
			if s, ok := rawString(m.val); ok && s != "" {
				t.id = m.val
			}
		case "type":
			if s, ok := rawString(m.val); ok && s != "" {
				t.typ = m.val
			}
		case "function":
			if isNull(m.val) {
				continue
			}
			if err := t.addFunction(m.val); err != nil {
				return err
			}
		default:
			if !shadows(m.key, toolKeys) {
				setLastNonNull(&t.extras, m.key, m.val)
			}
		}
	}
	return nil
}

// addFunction appends a {name, arguments} fragment. Both fields concatenate,
// as in the SDK's ChatCompletionAccumulator.
func (t *chatToolAcc) addFunction(raw json.RawMessage) error {
	f, err := parseCompactObject(raw)
	if err != nil {
		return fmt.Errorf("function: %w", err)
	}
	t.hasFunction = true
	for _, m := range f {
		switch m.key {
		case "name":
			if s, ok := rawString(m.val); ok {
				t.name.WriteString(s)
			}
		case "arguments":
			if s, ok := rawString(m.val); ok {
				t.args.WriteString(s)
			}
		default:
			if !shadows(m.key, functionKeys) {
				setLastNonNull(&t.functionExtras, m.key, m.val)
			}
		}
	}
	return nil
}

func (t *chatToolAcc) function() json.RawMessage {
	var f object
	f.set("name", jsonString(t.name.String()))
	f.set("arguments", jsonString(t.args.String()))
	for _, m := range t.functionExtras {
		f.set(m.key, m.val)
	}
	return f.raw()
}

// body renders the accumulated choice as a chat.completion choice.
func (acc *chatChoiceAcc) body() json.RawMessage {
	var msg object
	msg.set("role", orDefault(acc.role, json.RawMessage(`"assistant"`)))
	for _, k := range chatTextKeys {
		t := acc.text[k]
		switch {
		case t != nil:
			msg.set(k, t.value())
		case k == "content" || k == "refusal":
			msg.set(k, rawNull) // always present in a chat.completion message
		}
	}
	if len(acc.tools) > 0 {
		idx := make([]int64, 0, len(acc.tools))
		for i := range acc.tools {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		calls := make([]json.RawMessage, 0, len(idx))
		for _, i := range idx {
			t := acc.tools[i]
			var tc object
			tc.set("id", orDefault(t.id, rawEmptyStr))
			tc.set("type", orDefault(t.typ, json.RawMessage(`"function"`)))
			if t.hasFunction || t.typ == nil || string(t.typ) == `"function"` {
				tc.set("function", t.function())
			}
			for _, m := range t.extras {
				tc.set(m.key, m.val)
			}
			calls = append(calls, tc.raw())
		}
		msg.set("tool_calls", jsonArray(calls))
	}
	if acc.fnCall != nil {
		msg.set("function_call", acc.fnCall.function())
	}
	if acc.annotSeen {
		msg.set("annotations", jsonArray(acc.annotations))
	}
	for _, m := range acc.msgExtras {
		if !msg.has(m.key) {
			msg.set(m.key, m.val)
		}
	}
	var c object
	c.set("index", jsonInt(acc.index))
	c.set("message", msg.raw())
	lp := rawNull
	if acc.lpSeen {
		var l object
		for _, k := range []string{"content", "refusal"} {
			if acc.lpKeys[k] {
				l.set(k, jsonArray(acc.lp[k]))
			} else {
				l.set(k, rawNull)
			}
		}
		lp = l.raw()
	}
	c.set("logprobs", lp)
	c.set("finish_reason", acc.finish)
	for _, m := range acc.choiceExtras {
		if !c.has(m.key) {
			c.set(m.key, m.val)
		}
	}
	return c.raw()
}

// chatEventsFromBody synthesizes the chunk stream of a chat.completion body.
func chatEventsFromBody(body []byte, includeUsage bool) ([]groundhog.Event, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("chat body: %w", err)
	}
	elems, ok := o.arr("choices")
	if !ok {
		return nil, fmt.Errorf("chat body: %w: choices is not an array", ErrMalformed)
	}
	// The chunk envelope, in the order OpenAI sends it. Unknown top-level
	// fields ride on the first chunk only; BodyFromEvents merges them back.
	var head object
	head.set("id", orDefault(o.get("id"), rawEmptyStr))
	head.set("object", json.RawMessage(`"chat.completion.chunk"`))
	head.set("created", orDefault(o.get("created"), json.RawMessage("0")))
	head.set("model", orDefault(o.get("model"), rawEmptyStr))
	for _, k := range []string{"service_tier", "system_fingerprint"} {
		if v := o.get(k); v != nil {
			head.set(k, v)
		}
	}
	var extras object
	for _, m := range o {
		switch m.key {
		case "id", "object", "created", "model", "service_tier", "system_fingerprint", "choices", "usage":
		default:
			if !shadows(m.key, chunkKeys) {
				extras = append(extras, m)
			}
		}
	}
	// A body without usage (its stream was requested without include_usage)
	// cannot produce a usage chunk; its chunks then carry no usage member, so
	// the stream converts back into the same body.
	usage := o.get("usage")
	includeUsage = includeUsage && usage != nil
	var events []groundhog.Event
	emit := func(choice json.RawMessage, usage json.RawMessage) {
		ch := head.clone()
		if choice == nil {
			ch.set("choices", rawEmptyArr)
		} else {
			ch.set("choices", jsonArray([]json.RawMessage{choice}))
		}
		if includeUsage {
			ch.set("usage", orDefault(usage, rawNull))
		}
		if len(events) == 0 {
			ch = append(ch, extras...)
		}
		events = append(events, groundhog.Event{Data: ch.bytes()})
	}
	for _, e := range elems {
		c, err := parseCompactObject(e)
		if err != nil {
			return nil, fmt.Errorf("chat body: choice: %w", err)
		}
		if err := chatChoiceChunks(c, emit); err != nil {
			return nil, err
		}
	}
	if len(events) == 0 {
		emit(nil, nil) // no choices at all: keep id, model and extras
	}
	if includeUsage && !isNull(usage) {
		emit(nil, usage)
	}
	events = append(events, groundhog.Event{Data: bytes.Clone(doneData)})
	return events, nil
}

// chatChoiceChunks emits the chunk choices of one body choice: the role
// chunk, text deltas, tool call deltas and the finish chunk.
func chatChoiceChunks(c object, emit func(choice, usage json.RawMessage)) error {
	index := orDefault(c.get("index"), json.RawMessage("0"))
	msg, _ := c.obj("message")
	chunk := func(delta object, logprobs, finish json.RawMessage, extras object) {
		var ch object
		ch.set("index", index)
		ch.set("delta", delta.raw())
		ch.set("logprobs", orDefault(logprobs, rawNull))
		ch.set("finish_reason", orDefault(finish, rawNull))
		ch = append(ch, extras...)
		emit(ch.raw(), nil)
	}
	// First chunk: the role, the text fields' initial values ("" when text
	// follows, null when the field is null), and every field that does not
	// stream (annotations, audio, provider extensions). Logprobs ride here
	// too: the SDK accumulator concatenates them wherever they arrive.
	var first object
	first.set("role", orDefault(msg.get("role"), json.RawMessage(`"assistant"`)))
	var texts []struct {
		key    string
		pieces []string
	}
	// Reasoning streams before the answer, as the providers send it.
	for _, k := range []string{"reasoning_content", "reasoning", "content", "refusal"} {
		v := msg.get(k)
		if v == nil {
			continue
		}
		if s, ok := rawString(v); ok {
			first.set(k, rawEmptyStr)
			texts = append(texts, struct {
				key    string
				pieces []string
			}{k, splitText(s)})
		} else {
			first.set(k, v)
		}
	}
	for _, m := range msg {
		switch m.key {
		case "role", "content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call":
		default:
			if !shadows(m.key, deltaKeys) {
				first.set(m.key, m.val)
			}
		}
	}
	chunk(first, c.get("logprobs"), nil, nil)
	for _, t := range texts {
		for _, p := range t.pieces {
			chunk(object{{t.key, jsonString(p)}}, nil, nil, nil)
		}
	}
	if calls, ok := msg.arr("tool_calls"); ok {
		for i, raw := range calls {
			tc, err := parseCompactObject(raw)
			if err != nil {
				return fmt.Errorf("chat body: tool call: %w", err)
			}
			if err := toolCallChunks(int64(i), tc, chunk); err != nil {
				return err
			}
		}
	}
	if fc, ok := msg.obj("function_call"); ok {
		name, _ := fc.str("name")
		args, _ := fc.str("arguments")
		var f object
		f.set("name", jsonString(name))
		f.set("arguments", rawEmptyStr)
		chunk(object{{"function_call", f.raw()}}, nil, nil, nil)
		for _, p := range splitText(args) {
			chunk(object{{"function_call", object{{"arguments", jsonString(p)}}.raw()}}, nil, nil, nil)
		}
	}
	// Final chunk: empty delta, finish_reason, and unknown choice fields
	// (e.g. vLLM's stop_reason).
	var extras object
	for _, m := range c {
		switch m.key {
		case "index", "message", "logprobs", "finish_reason":
		default:
			if !shadows(m.key, choiceKeys) {
				extras = append(extras, m)
			}
		}
	}
	chunk(object{}, nil, orDefault(c.get("finish_reason"), json.RawMessage(`"stop"`)), extras)
	return nil
}

// toolCallChunks emits one tool call: a chunk with its id, type and name and
// empty arguments, then the arguments in pieces.
func toolCallChunks(i int64, tc object, chunk func(delta object, logprobs, finish json.RawMessage, extras object)) error {
	fn, hasFn := tc.obj("function")
	var head object
	head.set("index", jsonInt(i))
	for _, m := range tc {
		switch m.key {
		case "index":
		case "function":
			if hasFn {
				var f object
				for _, fm := range fn {
					if fm.key == "arguments" {
						f.set("arguments", rawEmptyStr)
					} else {
						f.set(fm.key, fm.val)
					}
				}
				head.set("function", f.raw())
			} else {
				head.set("function", m.val)
			}
		default:
			if !shadows(m.key, toolKeys) {
				head.set(m.key, m.val)
			}
		}
	}
	wrap := func(call object) object {
		return object{{"tool_calls", jsonArray([]json.RawMessage{call.raw()})}}
	}
	chunk(wrap(head), nil, nil, nil)
	if hasFn {
		args, _ := fn.str("arguments")
		for _, p := range splitText(args) {
			var call object
			call.set("index", jsonInt(i))
			call.set("function", object{{"arguments", jsonString(p)}}.raw())
			chunk(wrap(call), nil, nil, nil)
		}
	}
	return nil
}
