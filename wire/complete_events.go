package wire

import (
	"bytes"
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
	notObject, ok := walkObject(w, data, []string{"type", "index", "delta", "message"}, func(i int) bool {
		switch i {
		case 0:
			return plainStrTo(w, &e.typ)
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
			return nullOrMembers(w, []string{"stop_reason"}, func(int) bool { e.deltaStop = rawValue(w); return e.deltaStop != nil })
		default:
			return nullOrMembers(w, []string{"stop_reason"}, func(int) bool { e.messageStop = rawValue(w); return e.messageStop != nil })
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

// walkObject steps w over data, a JSON object (after white space) with
// plain, distinct keys (Walker.Object), calling member with the index in
// names of each key that folds to one of them — I at the value, which
// member steps over — and stepping over the other members. ok is false
// when data is not such an object, when member returns false, or when a
// name comes twice in any letter case: json.Unmarshal's reading decides
// then. notObject is true when data is not a JSON object at all, which
// json.Unmarshal into a struct refuses.
func walkObject(w *jsonwalk.Walker, data []byte, names []string, member func(i int) bool) (notObject, ok bool) {
	b := bytes.TrimSpace(data)
	if len(b) == 0 || b[0] != '{' {
		return true, false
	}
	w.Reset(b)
	return false, members(w, names, member) && w.End()
}

// members is walkObject's step over the object at I.
func members(w *jsonwalk.Walker, names []string, member func(i int) bool) bool {
	var seen uint32
	return w.Object(func(key []byte) bool {
		for i, n := range names {
			if jsonwalk.Fold(key, n) {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return member(i)
			}
		}
		return w.Value()
	})
}

// nullOrMembers steps over the value of a member decoded into a struct: a
// null (which leaves it as it is) or an object read by members; anything
// else is false.
func nullOrMembers(w *jsonwalk.Walker, names []string, member func(i int) bool) bool {
	return w.Null() || members(w, names, member)
}

// rawValue steps over the value at I and returns its text, as a
// json.RawMessage member receives it; nil when it is not a value.
func rawValue(w *jsonwalk.Walker) []byte {
	start := w.I
	if !w.Value() {
		return nil
	}
	return w.B[start:w.I:w.I]
}

// plainStr steps over a string of ASCII without escapes and returns its bytes, or
// over a null (nil, as a string field keeps ""); false for anything else.
func plainStr(w *jsonwalk.Walker) ([]byte, bool) {
	if w.Null() {
		return nil, true
	}
	start := w.I
	if !w.At('"') || !w.Str() {
		return nil, false
	}
	s := w.B[start+1 : w.I-1 : w.I-1]
	if !jsonwalk.PlainKey(s) {
		return nil, false // an escape, or bytes beyond ASCII (json.Unmarshal mends invalid UTF-8)
	}
	return s, true
}

// plainStrTo is plainStr that leaves the string's bytes in *dst.
func plainStrTo(w *jsonwalk.Walker, dst *[]byte) bool {
	s, ok := plainStr(w)
	*dst = s
	return ok
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
	notObject, ok := walkObject(w, data, []string{"type", "response"}, func(i int) bool {
		if i == 0 {
			return plainStrTo(w, &e.typ)
		}
		return nullOrMembers(w, []string{"status"}, func(int) bool {
			if w.Null() {
				return true // a *string stays nil
			}
			var ok bool
			e.status, ok = plainStr(w)
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
