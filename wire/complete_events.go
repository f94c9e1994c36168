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

// markWalk is false only in tests that read every event with
// json.Unmarshal, to compare.
var markWalk = true

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
	if markWalk {
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
	b := bytes.TrimSpace(data)
	if len(b) == 0 || b[0] != '{' {
		return e, false, true // unmarshalObject: not a JSON object
	}
	w.Reset(b)
	var seen uint8
	once := func(bit uint8) bool {
		if seen&bit != 0 {
			return false // a repeat (in any letter case): json.Unmarshal's way
		}
		seen |= bit
		return true
	}
	if !w.Object(func(key []byte) bool {
		switch {
		case jsonwalk.Fold(key, "type"):
			if !once(1) {
				return false
			}
			s, ok := plainStr(w)
			e.typ = s
			return ok
		case jsonwalk.Fold(key, "index"):
			if !once(2) {
				return false
			}
			if w.Null() {
				return true
			}
			start := w.I
			if !w.Integer() {
				return false
			}
			e.index, e.hasIndex = smallInt(b[start:w.I]), true
			return true
		case jsonwalk.Fold(key, "delta"):
			if !once(4) {
				return false
			}
			var ok bool
			e.deltaStop, ok = stopReason(w)
			return ok
		case jsonwalk.Fold(key, "message"):
			if !once(8) {
				return false
			}
			var ok bool
			e.messageStop, ok = stopReason(w)
			return ok
		}
		return w.Value()
	}) || !w.End() {
		return messagesMark{}, false, false
	}
	if e.typ == nil {
		e.typ = []byte{} // a string member absent or null decodes as ""
	}
	return e, true, true
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

// stopReason steps over the value of a member decoded into
// struct{ StopReason json.RawMessage `json:"stop_reason"` }: an object,
// whose stop_reason's text it returns (nil when absent), or a null; false
// for anything else.
func stopReason(w *jsonwalk.Walker) ([]byte, bool) {
	if w.Null() {
		return nil, true
	}
	var raw []byte
	seen := false
	ok := w.Object(func(key []byte) bool {
		if !jsonwalk.Fold(key, "stop_reason") {
			return w.Value()
		}
		if seen {
			return false
		}
		seen = true
		start := w.I
		if !w.Value() {
			return false
		}
		raw = w.B[start:w.I:w.I]
		return true
	})
	return raw, ok
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
	if markWalk {
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
	b := bytes.TrimSpace(data)
	if len(b) == 0 || b[0] != '{' {
		return e, false, true // unmarshalObject: not a JSON object
	}
	w.Reset(b)
	sawType, sawResponse := false, false
	if !w.Object(func(key []byte) bool {
		switch {
		case jsonwalk.Fold(key, "type"):
			if sawType {
				return false
			}
			sawType = true
			s, ok := plainStr(w)
			e.typ = s
			return ok
		case jsonwalk.Fold(key, "response"):
			if sawResponse {
				return false
			}
			sawResponse = true
			if w.Null() {
				return true
			}
			sawStatus := false
			return w.Object(func(key []byte) bool {
				if !jsonwalk.Fold(key, "status") {
					return w.Value()
				}
				if sawStatus {
					return false
				}
				sawStatus = true
				if w.Null() {
					return true // a *string stays nil
				}
				s, ok := plainStr(w)
				e.status, e.hasStatus = s, ok
				return ok
			})
		}
		return w.Value()
	}) || !w.End() {
		return responsesMark{}, false, false
	}
	if e.typ == nil {
		e.typ = []byte{}
	}
	return e, true, true
}
