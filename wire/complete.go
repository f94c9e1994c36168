package wire

import (
	"bytes"
	"encoding/json"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// StreamComplete reports whether events form a complete, successful stream
// of shape, one that may be cached and replayed. It is strict, because a
// truncated stream must never be cached:
//
//   - chat: the last event is "[DONE]" (and no other is), every other event
//     is a JSON chunk without an "error" member, and every choice that
//     appeared received a finish_reason (at least one did);
//   - responses: every event is a JSON object, the last one is
//     response.completed (whose response status, if given, is "completed"),
//     and no event is an error, response.failed or response.incomplete;
//   - messages: every event is a JSON object; the first one that is not a
//     ping is message_start, the last is message_stop, the last stop_reason
//     sent (by a message_delta, or by message_start for a message answered
//     whole there) is not null, every started content block was stopped,
//     and there is no error event.
//
// Embeddings and unknown shapes have no stream: false.
func StreamComplete(shape groundhog.Shape, events []groundhog.Event) bool {
	switch shape {
	case groundhog.ShapeChat:
		return chatComplete(events)
	case groundhog.ShapeResponses:
		return responsesComplete(events)
	case groundhog.ShapeMessages:
		return messagesComplete(events)
	case groundhog.ShapeConverse:
		return bedrock.StreamComplete(events)
	case groundhog.ShapeGemini:
		return gemini.StreamComplete(events)
	}
	return false
}

func chatComplete(events []groundhog.Event) bool {
	n := len(events)
	if n < 2 || !bytes.Equal(bytes.TrimSpace(events[n-1].Data), doneData) {
		return false
	}
	finished := map[int64]bool{}
	sawFinish := false
	var choices []chatChoice
	var w jsonwalk.Walker
	for _, ev := range events[:n-1] {
		if ev.Name == "error" {
			return false
		}
		var ok bool
		if choices, ok = chatChunk(&w, ev.Data, choices[:0]); !ok {
			return false // includes a "[DONE]" before the end
		}
		for _, ch := range choices {
			if !ch.hasIndex {
				return false
			}
			if ch.finished {
				finished[ch.index] = true
				sawFinish = true
			} else if !finished[ch.index] {
				finished[ch.index] = false
			}
		}
	}
	for _, done := range finished {
		if !done {
			return false
		}
	}
	return sawFinish
}

func responsesComplete(events []groundhog.Event) bool {
	if len(events) == 0 {
		return false
	}
	var w jsonwalk.Walker
	for i, ev := range events {
		e, ok := readResponsesMark(&w, ev.Data) // complete_events.go
		if !ok {
			return false
		}
		typ := string(e.typ)
		if typ == "" {
			typ = ev.Name
		}
		last := i == len(events)-1
		switch typ {
		case "error", "response.failed":
			return false
		case "response.completed":
			if !last || (e.hasStatus && string(e.status) != "completed") {
				return false
			}
		case "response.incomplete":
			// Ended by max_output_tokens or a content filter: a whole,
			// deterministic answer to these inputs, like chat's
			// finish_reason "length".
			if !last || (e.hasStatus && string(e.status) != "incomplete") {
				return false
			}
		default:
			if last {
				return false
			}
		}
	}
	return true
}

func messagesComplete(events []groundhog.Event) bool {
	var (
		started, stopReason bool
		open                = map[int64]bool{}
		w                   jsonwalk.Walker
	)
	for i, ev := range events {
		if ev.Name == "error" {
			return false
		}
		e, ok := readMessagesMark(&w, ev.Data) // complete_events.go
		if !ok {
			return false
		}
		typ := string(e.typ)
		if typ == "" {
			typ = ev.Name
		}
		if typ == "ping" {
			continue
		}
		if !started && typ != "message_start" {
			return false
		}
		switch typ {
		case "error":
			return false
		case "message_start":
			if started {
				return false
			}
			started = true
			// A message answered whole in message_start (a programmatic
			// tool call: its content and stop_reason there, then
			// message_stop with no message_delta) is complete.
			stopReason = e.messageStop != nil && !isNull(e.messageStop)
		case "content_block_start":
			if !e.hasIndex || open[e.index] {
				return false
			}
			open[e.index] = true
		case "content_block_stop":
			if !e.hasIndex || !open[e.index] {
				return false
			}
			delete(open, e.index)
		case "message_delta":
			// The last stop_reason sent is the message's (null included).
			if e.deltaStop != nil {
				stopReason = !isNull(e.deltaStop)
			}
		case "message_stop":
			return i == len(events)-1 && stopReason && len(open) == 0
		}
	}
	return false
}

// IsTerminal reports whether ev is the event that ends a stream of shape —
// "[DONE]" for chat, response.completed or response.incomplete (and the
// provider's own failure, response.failed) for responses, message_stop (and
// Anthropic's error event, after which nothing follows) for messages —
// judged by the same parsing as
// StreamComplete, so a stream StreamComplete accepts always shows its
// terminal event here. The gateway records a call's ledger row before it
// writes this event.
func IsTerminal(shape groundhog.Shape, ev groundhog.Event) bool {
	switch shape {
	case groundhog.ShapeChat:
		return bytes.Equal(bytes.TrimSpace(ev.Data), doneData)
	case groundhog.ShapeResponses:
		if !mayEndResponses(ev.Data) && len(bytes.TrimSpace(ev.Data)) != 0 {
			return false // eventType would find none of the three in the bytes
		}
		return eventType(ev, "response.completed") || eventType(ev, "response.incomplete") || eventType(ev, "response.failed")
	case groundhog.ShapeMessages:
		return eventType(ev, "message_stop") || eventType(ev, "error")
	case groundhog.ShapeConverse:
		return bedrock.IsTerminal(ev)
	case groundhog.ShapeGemini:
		return gemini.IsTerminal(ev)
	}
	return false
}

// mayEndResponses reports whether data holds ".completed", ".incomplete" or
// ".failed": what each of the terminal Responses types holds, so without
// any of them eventType finds none of the three in data. One search for
// '.', rarer in an event than the 'r' each type starts with (every
// Responses event says "response" several times), instead of three.
func mayEndResponses(data []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '.')
		if j < 0 {
			return false
		}
		i += j + 1
		rest := data[i:]
		if bytes.HasPrefix(rest, []byte("completed")) || bytes.HasPrefix(rest, []byte("incomplete")) || bytes.HasPrefix(rest, []byte("failed")) {
			return true
		}
	}
}

// eventType reports whether ev's type (its JSON "type", else its SSE event
// name) is typ. The JSON is read only when the bytes could match.
func eventType(ev groundhog.Event, typ string) bool {
	if !bytes.Contains(ev.Data, []byte(typ)) {
		return ev.Name == typ && len(bytes.TrimSpace(ev.Data)) == 0
	}
	var w jsonwalk.Walker
	t, ok := readEventType(&w, ev.Data)
	if !ok {
		return false
	}
	if len(t) == 0 {
		return ev.Name == typ
	}
	return string(t) == typ
}

// readEventType reads an event's "type" as json.Unmarshal into
// struct{ Type string } reads it, ok false when that fails: by one walk
// over the event when it can (a Responses stream's terminal event holds
// the whole answer, and every event is tested for it), else by
// json.Unmarshal.
func readEventType(w *jsonwalk.Walker, data []byte) (typ []byte, ok bool) {
	if eventWalk {
		if t, ok, fast := readEventTypeFast(w, data); fast {
			return t, ok
		}
	}
	return eventTypeByUnmarshal(data)
}

func eventTypeByUnmarshal(data []byte) (typ []byte, ok bool) {
	var e struct {
		Type string `json:"type"`
	}
	if unmarshalObject(data, &e) != nil {
		return nil, false
	}
	return []byte(e.Type), true
}

func readEventTypeFast(w *jsonwalk.Walker, data []byte) (typ []byte, ok, fast bool) {
	notObject, ok := jsonwalk.WalkObject(w, data, []string{"type"}, func(int) bool {
		return jsonwalk.PlainStrTo(w, &typ)
	})
	if notObject {
		return nil, false, true // unmarshalObject: not a JSON object
	}
	if !ok {
		return nil, false, false
	}
	return typ, true, true
}

// StreamEndedWithError reports whether the provider itself ended a stream
// of shape with its own error, a whole answer in the provider's format
// that the client receives as it was sent (and that is never cached):
//
//   - responses: the last event is response.failed (an error event may
//     precede it), or an error event;
//   - messages: the last event is an error event (Anthropic's overloaded or
//     api_error sent mid-stream);
//   - chat: the last event is a JSON object with an "error" member.
//
// A stream cut off without such an ending is not one: it stays a broken
// stream.
func StreamEndedWithError(shape groundhog.Shape, events []groundhog.Event) bool {
	if len(events) == 0 {
		return false
	}
	last := events[len(events)-1]
	switch shape {
	case groundhog.ShapeResponses:
		return eventType(last, "response.failed") || eventType(last, "error")
	case groundhog.ShapeMessages:
		return eventType(last, "error")
	case groundhog.ShapeGemini:
		return gemini.IsError(last)
	case groundhog.ShapeChat:
		if !bytes.Contains(last.Data, []byte(`"error"`)) {
			return false
		}
		var c struct {
			Error json.RawMessage `json:"error"`
		}
		return unmarshalObject(last.Data, &c) == nil && isObject(c.Error)
	}
	return false
}
