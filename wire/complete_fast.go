package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

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
	if !chunkWalk {
		return chatChunkByUnmarshal(data, dst)
	}
	if out, ok, fast := chatChunkFast(w, data, dst); fast {
		return out, ok
	}
	return chatChunkByUnmarshal(data, dst)
}

// chunkWalk is false only in tests that read every chunk with
// json.Unmarshal, to compare.
var chunkWalk = true

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

// chatChunkFast is chatChunk's walk; fast is false when the input needs
// json.Unmarshal's own reading.
func chatChunkFast(w *jsonwalk.Walker, data []byte, dst []chatChoice) (out []chatChoice, ok, fast bool) {
	b := bytes.TrimSpace(data)
	if len(b) == 0 || b[0] != '{' {
		return dst, false, true // unmarshalObject: not a JSON object
	}
	// One pass of a Walker over the chunk, which is then valid JSON with
	// plain, distinct keys; anything it refuses (invalid JSON, an escaped
	// or repeated key) is checked the longer way below.
	if w == nil {
		w = new(jsonwalk.Walker)
	}
	// The choices are read as the walk steps over them when they take
	// the usual form: an array of objects whose index is a small integer
	// or null and whose finish_reason a string or null.
	var errVal []byte
	n := len(dst)
	if _, ok := walkObject(w, b, []string{"error", "choices"}, func(i int) bool {
		if i == 0 {
			errVal = rawValue(w)
			return errVal != nil
		}
		if w.Null() {
			return true
		}
		return w.Array(func() bool {
			var cc chatChoice
			ok := members(w, []string{"index", "finish_reason"}, func(i int) bool {
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
	}); ok {
		if errVal != nil && string(errVal) != "null" {
			return dst[:n], false, true
		}
		return dst, true, true
	}
	dst = dst[:n]
	if !json.Valid(b) {
		return dst, false, true // json.Unmarshal fails on any invalid JSON
	}
	var choices []byte
	sawError, sawChoices, errored := false, false, false
	okMembers := validMembers(b, func(key, val []byte) bool {
		switch {
		case asciiFoldEqual(key, "error"):
			if sawError {
				return false
			}
			sawError = true
			errored = string(val) != "null"
		case asciiFoldEqual(key, "choices"):
			if sawChoices {
				return false
			}
			sawChoices, choices = true, val
		}
		return true
	})
	if !okMembers {
		return dst, false, false
	}
	if errored {
		return dst, false, true
	}
	return chatChoices(choices, dst)
}

// chatChoices reads the value of a chunk's "choices" member (nil when it
// has none), valid JSON, as chatChunkFast does.
func chatChoices(choices []byte, dst []chatChoice) (out []chatChoice, ok, fast bool) {
	if choices == nil || string(choices) == "null" {
		return dst, true, true
	}
	if choices[0] != '[' {
		return dst, false, true // a type error
	}
	ok, fast = true, true
	validElements(choices, func(e []byte) bool {
		switch e[0] {
		case 'n': // null: a zero choice, no index
			dst = append(dst, chatChoice{})
			return true
		case '{':
		default:
			ok = false // a type error
			return true
		}
		var cc chatChoice
		sawIndex, sawFinish := false, false
		if !validMembers(e, func(key, val []byte) bool {
			switch {
			case asciiFoldEqual(key, "index"):
				if sawIndex {
					return false
				}
				sawIndex = true
				switch c := val[0]; {
				case c == 'n':
				case c == '-' || c >= '0' && c <= '9':
					n, err := strconv.ParseInt(string(val), 10, 64)
					if err != nil {
						ok = false // json.Unmarshal: a number that is not an int64
					}
					cc.index, cc.hasIndex = n, true
				default:
					ok = false
				}
			case asciiFoldEqual(key, "finish_reason"):
				if sawFinish {
					return false
				}
				sawFinish = true
				switch val[0] {
				case 'n':
				case '"':
					cc.finished = true
				default:
					ok = false
				}
			}
			return true
		}) {
			fast = false
			return false
		}
		dst = append(dst, cc)
		return true
	})
	if !fast {
		return dst[:0], false, false
	}
	return dst, ok, true
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

// validElements calls fn with each element of the valid JSON array b until fn
// returns false.
func validElements(b []byte, fn func(e []byte) bool) {
	i := SkipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		ve := ValueEnd(b, i)
		if !fn(b[i:ve]) {
			return
		}
		i = SkipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
}
