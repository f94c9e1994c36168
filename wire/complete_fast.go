package wire

import (
	"bytes"
	"encoding/json"

	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// chatChoice is what chatComplete reads of one choice of a chunk.
type chatChoice struct {
	index    int64
	hasIndex bool // "index" was a number (not absent or null)
	finished bool // "finish_reason" was a string
}

// chatChunk reads one chat stream chunk as chatComplete needs it: its
// choices, appended to dst, and ok false when the chunk makes the stream
// incomplete (not a JSON object, a non-null "error" member, a choice of the
// wrong type). It is json.Unmarshal into
//
//	struct {
//		Error   json.RawMessage
//		Choices []struct{ Index *int64; FinishReason *string }
//	}
//
// (ASCII case-folded field names) with the same outcome for every input
// (pinned by TestChatChunkMatchesUnmarshal, FuzzChatChunk and the real
// recorded streams), but without reflection: one pass of a Walker over the
// chunk, its choices read as it steps over them. Keys with escapes or
// non-ASCII bytes, repeated fields and choices of other forms take the
// json.Unmarshal way.
//
// w is the Walker it steps over data with (reused across the chunks of a
// stream: it keeps its memory); nil makes one.
func chatChunk(w *jsonwalk.Walker, data []byte, dst []chatChoice) ([]chatChoice, bool) {
	if eventWalk {
		if out, ok, fast := chatChunkFast(w, data, dst); fast {
			return out, ok
		}
	}
	return chatChunkByUnmarshal(data, dst)
}

// chatChunkByUnmarshal is chatChunk by json.Unmarshal.
func chatChunkByUnmarshal(data []byte, dst []chatChoice) ([]chatChoice, bool) {
	var c struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Index        *int64  `json:"index"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if unmarshalObject(data, &c) != nil || (c.Error != nil && !isNull(c.Error)) {
		return dst, false
	}
	for _, ch := range c.Choices {
		cc := chatChoice{hasIndex: ch.Index != nil, finished: ch.FinishReason != nil}
		if ch.Index != nil {
			cc.index = *ch.Index
		}
		dst = append(dst, cc)
	}
	return dst, true
}

// chatChunkFast is chatChunk's walk (jsonwalk.WalkObject): the chunk's error, and its
// choices read as the walk steps over them when they take the usual form —
// an array of objects whose index is a small integer or null and whose
// finish_reason a string or null. fast is false for anything else, which
// json.Unmarshal reads. w nil makes a Walker.
func chatChunkFast(w *jsonwalk.Walker, data []byte, dst []chatChoice) (out []chatChoice, ok, fast bool) {
	if w == nil {
		w = new(jsonwalk.Walker)
	}
	var errVal []byte
	n := len(dst)
	notObject, ok := jsonwalk.WalkObject(w, data, []string{"error", "choices"}, func(i int) bool {
		if i == 0 {
			errVal = jsonwalk.RawValue(w)
			return errVal != nil
		}
		if w.Null() {
			return true
		}
		return w.Array(func() bool {
			var cc chatChoice
			ok := jsonwalk.Members(w, []string{"index", "finish_reason"}, func(i int) bool {
				if w.Null() {
					return true
				}
				if i == 1 {
					cc.finished = true
					return w.At('"') && w.Str()
				}
				start := w.I
				if !w.Integer() {
					return false
				}
				cc.index, cc.hasIndex = smallInt(w.B[start:w.I]), true
				return true
			})
			dst = append(dst, cc)
			return ok
		})
	})
	switch {
	case notObject:
		return dst[:n], false, true // unmarshalObject: not a JSON object
	case !ok:
		return dst[:n], false, false
	case errVal != nil && string(errVal) != "null":
		return dst[:n], false, true
	}
	return dst, true, true
}

// validMembers calls fn with the raw key (no quotes) and value of each member of
// the valid JSON object b, in order; it returns false when a key has an escape
// or a non-ASCII byte, or when fn does (then it stops). A value's capacity ends
// with it, so fn cannot append over the bytes that follow.
func validMembers(b []byte, fn func(key, val []byte) bool) bool {
	i := SkipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		ke := StringEnd(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 || !ascii(key) {
			return false
		}
		i = SkipSpace(b, ke)
		i = SkipSpace(b, i+1) // ':'
		ve := ValueEnd(b, i)
		if !fn(key, b[i:ve:ve]) {
			return false
		}
		i = SkipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return true
}
