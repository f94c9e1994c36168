package jsonwalk

import "bytes"

// Reading members as json.Unmarshal into a struct reads them: the readers
// below step over an object's members, hand the caller the ones it names
// (keys matched in any letter case, as encoding/json matches field names)
// and refuse — false, so that the caller reads the text with json.Unmarshal
// instead — anything whose reading is not certainly encoding/json's: keys
// with escapes or beyond ASCII, a named key twice (encoding/json keeps the
// last, merging objects), strings with escapes.

// WalkObject steps w over data, a JSON object (after white space) with
// plain, distinct keys (Walker.Object), calling member with the index in
// names of each key that folds to one of them — I at the value, which
// member steps over — and stepping over the other members. ok is false
// when data is not such an object, when member returns false, or when a
// name comes twice in any letter case: json.Unmarshal's reading decides
// then. notObject is true when data is not a JSON object at all, which
// json.Unmarshal into a struct refuses.
func WalkObject(w *Walker, data []byte, names []string, member func(i int) bool) (notObject, ok bool) {
	b := bytes.TrimSpace(data)
	if len(b) == 0 || b[0] != '{' {
		return true, false
	}
	w.Reset(b)
	return false, Members(w, names, member) && w.End()
}

// Members is WalkObject's step over the object at I.
func Members(w *Walker, names []string, member func(i int) bool) bool {
	var seen uint32
	return w.Object(func(key []byte) bool {
		for i, n := range names {
			if Fold(key, n) {
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

// NullOrMembers steps over the value of a member decoded into a struct: a
// null (which leaves it as it is) or an object read by Members; anything
// else is false.
func NullOrMembers(w *Walker, names []string, member func(i int) bool) bool {
	return w.Null() || Members(w, names, member)
}

// RawValue steps over the value at I and returns its text, as a
// json.RawMessage member receives it; nil when it is not a value.
func RawValue(w *Walker) []byte {
	start := w.I
	if !w.Value() {
		return nil
	}
	return w.B[start:w.I:w.I]
}

// PlainStr steps over a string of ASCII without escapes and returns its bytes, or
// over a null (nil, as a string field keeps ""); false for anything else.
func PlainStr(w *Walker) ([]byte, bool) {
	if w.Null() {
		return nil, true
	}
	start := w.I
	if !w.At('"') || !w.Str() {
		return nil, false
	}
	s := w.B[start+1 : w.I-1 : w.I-1]
	if !PlainKey(s) {
		return nil, false // an escape, or bytes beyond ASCII (json.Unmarshal mends invalid UTF-8)
	}
	return s, true
}

// PlainStrTo is PlainStr that leaves the string's bytes in *dst.
func PlainStrTo(w *Walker, dst *[]byte) bool {
	s, ok := PlainStr(w)
	*dst = s
	return ok
}
