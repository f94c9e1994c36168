package wire

import (
	"bytes"
	"encoding/json"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Storable reports whether a complete, successful response body of shape
// may be stored in the cache. A refusal by policy may not (docs/cache-and-coalescing.md):
// the provider declined this request once, a later identical request may be
// answered, and a stored refusal would be replayed to every caller for the
// entry's whole lifetime. The refusal is still passed to its client and
// ledgered; it is only never stored. What counts as a refusal, per shape:
//   - chat: a choice whose finish_reason is "content_filter", or whose
//     message carries a non-empty refusal;
//   - responses: status "incomplete" with incomplete_details.reason
//     "content_filter", or an output content part of type "refusal";
//   - messages: stop_reason "refusal";
//   - embeddings: never.
//
// A body that does not parse is not storable either.
func Storable(shape groundhog.Shape, body []byte) bool {
	if shape == groundhog.ShapeConverse {
		return bedrock.Storable(body)
	}
	if shape == groundhog.ShapeGemini {
		return gemini.Storable(body)
	}
	if shape != groundhog.ShapeEmbeddings && jsonwalk.Valid(body) && isObjectText(body) && !mayRefuse(body) {
		return true // the common case, without parsing: no refusal marker at all
	}
	return storableParsed(shape, body)
}

// storableParsed is Storable for a body that may hold a refusal: it parses
// the body and reads each signal where it is.
func storableParsed(shape groundhog.Shape, body []byte) bool {
	o, err := parseObject(body)
	if err != nil {
		return false
	}
	switch shape {
	case groundhog.ShapeChat:
		return !chatBodyRefused(o)
	case groundhog.ShapeResponses:
		return !responsesRefused(o)
	case groundhog.ShapeMessages:
		s, _ := o.str("stop_reason")
		return s != "refusal"
	case groundhog.ShapeEmbeddings:
		return true
	}
	return false
}

// StorableEvents is Storable for a complete stream of shape: no event of
// it signals a refusal (the same rules, on the stream's events: chat
// chunks' finish_reason and delta.refusal, the Responses refusal events
// and terminal response, the Messages message_delta stop_reason).
func StorableEvents(shape groundhog.Shape, events []groundhog.Event) bool {
	if shape == groundhog.ShapeConverse {
		return bedrock.StorableEvents(events)
	}
	if shape == groundhog.ShapeGemini {
		return gemini.StorableEvents(events)
	}
	for _, ev := range events {
		if isDone(ev.Data) || !mayRefuse(ev.Data) {
			continue
		}
		o, err := parseObject(ev.Data)
		if err != nil {
			continue // not an event this package reads; StreamComplete judged the stream
		}
		switch shape {
		case groundhog.ShapeChat:
			if chatChunkRefused(o) {
				return false
			}
		case groundhog.ShapeResponses:
			if responsesEventRefused(o) {
				return false
			}
		case groundhog.ShapeMessages:
			if t, _ := o.str("type"); t == "message_delta" {
				if d, ok := o.obj("delta"); ok {
					if s, _ := d.str("stop_reason"); s == "refusal" {
						return false
					}
				}
			}
		default:
			return false
		}
	}
	return true
}

// mayRefuse reports whether b holds one of the words every refusal signal
// contains ("content_filter", or "refusal" as a key, a value or in an event
// type); without either, b cannot be a refusal and need not be parsed.
// Providers do not \u-escape ASCII in these names.
//
// A "refusal" key whose value is null is no signal: every message of an
// OpenAI chat answer carries one ("refusal":null), so without this every
// chat answer stored was parsed in full.
func mayRefuse(b []byte) bool {
	if bytes.Contains(b, []byte("content_filter")) {
		return true
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], refusalName)
		if j < 0 {
			return false
		}
		i += j
		if !nullRefusalAt(b, i) {
			return true
		}
		i += len(refusalName)
	}
}

var refusalName = []byte("refusal")

// isObjectText reports whether valid JSON b is an object (not a string,
// number, array or literal, which storableParsed refuses).
func isObjectText(b []byte) bool {
	k := SkipSpace(b, 0)
	return k < len(b) && b[k] == '{'
}

// nullRefusalAt reports whether the "refusal" at b[i:] is the key "refusal"
// with the value null. Inside a JSON string a quote is escaped, so quotes
// on both sides of the word and a colon after them are a key's; anything
// else (a value "refusal", an event type, the word in a text) is not.
func nullRefusalAt(b []byte, i int) bool {
	k := i + len(refusalName)
	if i == 0 || b[i-1] != '"' || k >= len(b) || b[k] != '"' {
		return false
	}
	k = SkipSpace(b, k+1)
	if k >= len(b) || b[k] != ':' {
		return false
	}
	k = SkipSpace(b, k+1)
	return bytes.HasPrefix(b[k:], []byte("null"))
}

func isDone(b []byte) bool { return string(b) == "[DONE]" }

// chatBodyRefused: a choice ended by the content filter or carrying a
// refusal message.
func chatBodyRefused(o object) bool {
	return chatChoicesRefused(o, "message")
}

// chatChunkRefused is chatBodyRefused for one stream chunk (delta).
func chatChunkRefused(o object) bool {
	return chatChoicesRefused(o, "delta")
}

func chatChoicesRefused(o object, part string) bool {
	choices, _ := o.arr("choices")
	for _, raw := range choices {
		ch, err := parseCompactObject(raw)
		if err != nil {
			continue
		}
		if fr, _ := ch.str("finish_reason"); fr == "content_filter" {
			return true
		}
		if m, ok := ch.obj(part); ok {
			if r, ok := m.str("refusal"); ok && r != "" {
				return true
			}
		}
	}
	return false
}

// responsesRefused: a response object stopped by the content filter or with
// a refusal content part.
func responsesRefused(o object) bool {
	if st, _ := o.str("status"); st == "incomplete" {
		if d, ok := o.obj("incomplete_details"); ok {
			if r, _ := d.str("reason"); r == "content_filter" {
				return true
			}
		}
	}
	output, _ := o.arr("output")
	for _, raw := range output {
		item, err := parseCompactObject(raw)
		if err != nil {
			continue
		}
		content, _ := item.arr("content")
		for _, c := range content {
			var part struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(c, &part) == nil && part.Type == "refusal" {
				return true
			}
		}
	}
	return false
}

// responsesEventRefused: a refusal event, or a terminal event whose
// response is refused.
func responsesEventRefused(o object) bool {
	t, _ := o.str("type")
	switch t {
	case "response.refusal.delta", "response.refusal.done":
		return true
	}
	if r, ok := o.obj("response"); ok {
		return responsesRefused(r)
	}
	if item, ok := o.obj("item"); ok { // response.output_item.done
		return responsesRefused(object{{key: "output", val: jsonArray([]json.RawMessage{item.raw()})}})
	}
	if part, ok := o.obj("part"); ok { // response.content_part.added / done
		if pt, _ := part.str("type"); pt == "refusal" {
			return true
		}
	}
	return false
}
