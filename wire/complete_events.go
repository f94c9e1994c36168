package wire

import (
	"encoding/json"

	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// The members of Messages and Responses stream events that StreamComplete
// reads, each read two ways with one outcome for every input (pinned by
// TestStreamEventsMatchUnmarshal and FuzzStreamEvents): json.Unmarshal into
// the struct each function names, and a Walker's one pass over the event
// that takes the usual forms — keys plain and distinct, each member read of
// the type the struct gives it — and leaves anything else to json.Unmarshal.

// eventWalk is false only in tests that read every event (chat chunks,
// Messages and Responses events, the usage events) with json.Unmarshal, to
// compare.
var eventWalk = true

// messagesMark is what messagesComplete reads of one event: json.Unmarshal
// into
//
//	struct {
//		Type    string
//		Index   *int64
//		Delta   struct{ StopReason json.RawMessage `json:"stop_reason"` }
//		Message struct{ StopReason json.RawMessage `json:"stop_reason"` }
//	}
//
// with ok false when that fails.
type messagesMark struct {
	typ                    []byte
	index                  int64
	hasIndex               bool
	deltaStop, messageStop []byte // nil when absent
}

func readMessagesMark(w *jsonwalk.Walker, data []byte) (e messagesMark, ok bool) {
	if eventWalk {
		if e, ok, fast := readMessagesMarkFast(w, data); fast {
			return e, ok
		}
	}
	return messagesMarkByUnmarshal(data)
}

func messagesMarkByUnmarshal(data []byte) (e messagesMark, ok bool) {
	var u struct {
		Type  string `json:"type"`
		Index *int64 `json:"index"`
		Delta struct {
			StopReason json.RawMessage `json:"stop_reason"`
		} `json:"delta"`
		Message struct {
			StopReason json.RawMessage `json:"stop_reason"`
		} `json:"message"`
	}
	if unmarshalObject(data, &u) != nil {
		return messagesMark{}, false
	}
	e = messagesMark{typ: []byte(u.Type), deltaStop: u.Delta.StopReason, messageStop: u.Message.StopReason}
	if u.Index != nil {
		e.index, e.hasIndex = *u.Index, true
	}
	return e, true
}

func readMessagesMarkFast(w *jsonwalk.Walker, data []byte) (e messagesMark, ok, fast bool) {
	notObject, ok := jsonwalk.WalkObject(w, data, []string{"type", "index", "delta", "message"}, func(i int) bool {
		switch i {
		case 0:
			return jsonwalk.PlainStrTo(w, &e.typ)
		case 1:
			if w.Null() {
				return true
			}
			start := w.I
			if !w.Integer() {
				return false
			}
			e.index, e.hasIndex = smallInt(w.B[start:w.I]), true
			return true
		case 2:
			return jsonwalk.NullOrMembers(w, []string{"stop_reason"}, func(int) bool { e.deltaStop = jsonwalk.RawValue(w); return e.deltaStop != nil })
		default:
			return jsonwalk.NullOrMembers(w, []string{"stop_reason"}, func(int) bool { e.messageStop = jsonwalk.RawValue(w); return e.messageStop != nil })
		}
	})
	if notObject {
		return messagesMark{}, false, true // unmarshalObject: not a JSON object
	}
	if !ok {
		return messagesMark{}, false, false
	}
	if e.typ == nil {
		e.typ = []byte{} // a string member absent or null decodes as ""
	}
	return e, true, true
}

// smallInt is the value of an integer of at most 15 digits (Walker.Integer).
func smallInt(b []byte) int64 {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n
}

// responsesMark is what responsesComplete reads of one event:
// json.Unmarshal into
//
//	struct {
//		Type     string
//		Response struct{ Status *string }
//	}
//
// with ok false when that fails.
type responsesMark struct {
	typ       []byte
	status    []byte
	hasStatus bool
}

func readResponsesMark(w *jsonwalk.Walker, data []byte) (e responsesMark, ok bool) {
	if eventWalk {
		if e, ok, fast := readResponsesMarkFast(w, data); fast {
			return e, ok
		}
	}
	return responsesMarkByUnmarshal(data)
}

func responsesMarkByUnmarshal(data []byte) (e responsesMark, ok bool) {
	var u struct {
		Type     string `json:"type"`
		Response struct {
			Status *string `json:"status"`
		} `json:"response"`
	}
	if unmarshalObject(data, &u) != nil {
		return responsesMark{}, false
	}
	e = responsesMark{typ: []byte(u.Type)}
	if u.Response.Status != nil {
		e.status, e.hasStatus = []byte(*u.Response.Status), true
	}
	return e, true
}

func readResponsesMarkFast(w *jsonwalk.Walker, data []byte) (e responsesMark, ok, fast bool) {
	notObject, ok := jsonwalk.WalkObject(w, data, []string{"type", "response"}, func(i int) bool {
		if i == 0 {
			return jsonwalk.PlainStrTo(w, &e.typ)
		}
		return jsonwalk.NullOrMembers(w, []string{"status"}, func(int) bool {
			if w.Null() {
				return true // a *string stays nil
			}
			var ok bool
			e.status, ok = jsonwalk.PlainStr(w)
			e.hasStatus = ok
			return ok
		})
	})
	if notObject {
		return responsesMark{}, false, true // unmarshalObject: not a JSON object
	}
	if !ok {
		return responsesMark{}, false, false
	}
	if e.typ == nil {
		e.typ = []byte{}
	}
	return e, true, true
}
