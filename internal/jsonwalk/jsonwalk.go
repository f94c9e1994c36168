// Package jsonwalk steps over JSON text in one pass without decoding it:
// for the request bodies a wire package hands to the fingerprint, whose
// usual form it can check and splice faster than encoding/json can decode
// and encode it again (a 200 KB body: ≈ 0.2 ms against several ms).
//
// A Walker accepts a subset of what encoding/json accepts: RFC 8259 JSON,
// bytes of strings not checked as UTF-8 (as encoding/json does not), and
// nesting up to MaxDepth. Every method reports false on anything it does
// not accept, never reads past the text and never panics: the caller then
// takes its encoding/json path, which answers as it always did.
package jsonwalk

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
)

// MaxDepth bounds the nesting a Walker follows.
const MaxDepth = 512

// MaxKeys bounds the members of an object Object accepts (it checks them
// for repeats pairwise).
const MaxKeys = 64

// Walker steps over the JSON text B from offset I.
type Walker struct {
	B     []byte
	I     int
	depth int
	keys  [][]byte // the keys of the objects Object has open
	// OnKey, when set, is called with the text of every object key the
	// walker steps over, at any depth, as it is between its quotes
	// (escapes not decoded).
	OnKey func(key []byte)
	// Spaced is set once the walker has stepped over white space between
	// tokens: the text it walked is compact while Spaced is false.
	Spaced bool
}

// Valid reports json.Valid(b). A Walker steps over b first, and takes only
// JSON (FuzzWalker); encoding/json reads b only when the Walker refuses it:
// text that is not JSON, or JSON beyond the Walker's subset (nested deeper
// than MaxDepth). A valid text costs one pass of the Walker, several times
// quicker than encoding/json's scanner.
func Valid(b []byte) bool {
	w := Walker{B: b}
	w.WS()
	if w.Value() && w.End() {
		return true
	}
	return json.Valid(b)
}

// Reset makes w a Walker of b from its start, keeping the memory Object
// uses to check keys (a Walker reused over many texts allocates none).
func (w *Walker) Reset(b []byte) {
	w.B, w.I, w.depth, w.keys, w.Spaced = b, 0, 0, w.keys[:0], false
}

// At reports whether the byte at I is c.
func (w *Walker) At(c byte) bool { return w.I < len(w.B) && w.B[w.I] == c }

// WS steps over whitespace.
func (w *Walker) WS() {
	if w.I < len(w.B) && w.B[w.I] > ' ' {
		return // the usual case: compact text
	}
	for w.I < len(w.B) {
		switch w.B[w.I] {
		case ' ', '\t', '\n', '\r':
			w.I++
			w.Spaced = true
		default:
			return
		}
	}
}

// End reports whether only whitespace is left.
func (w *Walker) End() bool {
	w.WS()
	return w.I == len(w.B)
}

// Null steps over a null at I.
func (w *Walker) Null() bool { return w.lit("null") }

func (w *Walker) lit(s string) bool {
	if len(w.B)-w.I >= len(s) && string(w.B[w.I:w.I+len(s)]) == s {
		w.I += len(s)
		return true
	}
	return false
}

// Value steps over one value at I.
func (w *Walker) Value() bool {
	if w.I >= len(w.B) {
		return false
	}
	switch c := w.B[w.I]; {
	case c == '"':
		return w.Str()
	case c == '{':
		return w.container('}')
	case c == '[':
		return w.container(']')
	case c == 't':
		return w.lit("true")
	case c == 'f':
		return w.lit("false")
	case c == 'n':
		return w.Null()
	case c == '-' || '0' <= c && c <= '9':
		return w.Number()
	}
	return false
}

// container steps over an object (end '}') or an array (end ']').
func (w *Walker) container(end byte) bool {
	if w.depth++; w.depth > MaxDepth {
		return false
	}
	w.I++
	w.WS()
	if w.At(end) {
		w.I++
		w.depth--
		return true
	}
	for {
		w.WS()
		if end == '}' {
			ks := w.I
			if !w.At('"') || !w.Str() {
				return false
			}
			if w.OnKey != nil {
				w.OnKey(w.B[ks+1 : w.I-1])
			}
			w.WS()
			if !w.At(':') {
				return false
			}
			w.I++
			w.WS()
		}
		if !w.Value() {
			return false
		}
		w.WS()
		if w.At(',') {
			w.I++
			continue
		}
		if !w.At(end) {
			return false
		}
		w.I++
		w.depth--
		return true
	}
}

// Object steps over the object at I, calling member for each member with
// I at its value (whitespace stepped over); member must step over the
// value. The keys must be plain (PlainKey) and distinct, and at most
// MaxKeys: encoding/json decodes an escaped key to the name it spells and
// keeps the last of repeated ones, which a caller copying the text as it
// is would not.
func (w *Walker) Object(member func(key []byte) bool) bool {
	if !w.At('{') {
		return false
	}
	if w.depth++; w.depth > MaxDepth {
		return false
	}
	mark := len(w.keys)
	defer func() { w.keys = w.keys[:mark] }()
	w.I++
	w.WS()
	if w.At('}') {
		w.I++
		w.depth--
		return true
	}
	for {
		w.WS()
		ks := w.I
		if !w.At('"') || !w.Str() {
			return false
		}
		key := w.B[ks+1 : w.I-1]
		if w.OnKey != nil {
			w.OnKey(key)
		}
		if !PlainKey(key) || len(w.keys)-mark == MaxKeys {
			return false
		}
		for _, k := range w.keys[mark:] {
			if string(k) == string(key) {
				return false
			}
		}
		w.keys = append(w.keys, key)
		w.WS()
		if !w.At(':') {
			return false
		}
		w.I++
		w.WS()
		if !member(key) {
			return false
		}
		w.WS()
		if w.At(',') {
			w.I++
			continue
		}
		if !w.At('}') {
			return false
		}
		w.I++
		w.depth--
		return true
	}
}

// Array steps over the array at I, calling elem for each element with I at
// it (whitespace stepped over); elem must step over the element. An empty
// array calls nothing.
func (w *Walker) Array(elem func() bool) bool {
	if !w.At('[') {
		return false
	}
	if w.depth++; w.depth > MaxDepth {
		return false
	}
	w.I++
	w.WS()
	if w.At(']') {
		w.I++
		w.depth--
		return true
	}
	for {
		w.WS()
		if !elem() {
			return false
		}
		w.WS()
		if w.At(',') {
			w.I++
			continue
		}
		if !w.At(']') {
			return false
		}
		w.I++
		w.depth--
		return true
	}
}

// Eight-byte masks for Special.
const (
	lsb   = 0x0101010101010101
	msb   = 0x8080808080808080
	quote = '"' * lsb
	bslsh = '\\' * lsb
	ctl   = 0x20 * lsb
)

// Special returns a mask whose lowest set bit lies in the first byte of x
// (little-endian) that is '"', '\\' or < 0x20, or 0 when there is none:
// where a scan of a string's bytes must stop. Higher bits may be spurious
// (borrows), so only the lowest one is used. The fingerprint's string scan
// stops at the same bytes.
func Special(x uint64) uint64 {
	q := x ^ quote
	b := x ^ bslsh
	return (((q - lsb) &^ q) | ((b - lsb) &^ b) | ((x - ctl) &^ x)) & msb
}

// Str steps over a string at I (its opening quote), eight bytes at a time
// between escapes.
func (w *Walker) Str() bool {
	b := w.B
	if !w.At('"') {
		return false
	}
	i := w.I + 1
	for {
		for i+8 <= len(b) {
			if m := Special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) || b[i] < 0x20 {
			return false
		}
		if b[i] == '"' {
			w.I = i + 1
			return true
		}
		// An escape.
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) {
				return false
			}
			for _, c := range b[i+2 : i+6] {
				if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
					return false
				}
			}
			i += 6
		default:
			return false
		}
	}
}

// Number steps over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *Walker) Number() bool {
	_, ok := w.number()
	return ok
}

// Integer steps over a number written as a small integer (at most 15
// digits, no fraction, no exponent): one a float64 holds exactly, so
// encoding/json decodes it and it is whole. Any other number is false,
// though encoding/json may take it.
func (w *Walker) Integer() bool {
	start := w.I
	plain, ok := w.number()
	digits := w.I - start
	if ok && w.B[start] == '-' {
		digits--
	}
	if !ok || !plain || digits > 15 {
		w.I = start
		return false
	}
	return true
}

// Float steps over a number encoding/json decodes into a float64 without
// error: at most 20 bytes and no exponent (so never beyond the range).
func (w *Walker) Float() bool {
	start := w.I
	if !w.Number() || w.I-start > 20 {
		w.I = start
		return false
	}
	for _, c := range w.B[start:w.I] {
		if c == 'e' || c == 'E' {
			w.I = start
			return false
		}
	}
	return true
}

// number steps over a number; plain says it has neither fraction nor
// exponent.
func (w *Walker) number() (plain, ok bool) {
	b, i := w.B, w.I
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false, false
	}
	plain = true
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false, false
		}
		plain = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false, false
		}
		plain = false
	}
	w.I = i
	return plain, true
}

// NullOr steps over a null, or else runs step.
func (w *Walker) NullOr(step func() bool) bool { return w.Null() || step() }

// PlainKey reports whether a key's text is the name itself: ASCII without
// escapes (encoding/json would decode an escape, and folds some non-ASCII
// letters onto ASCII ones when it matches names).
func PlainKey(key []byte) bool {
	for _, c := range key {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// PlainString reports whether s needs no escape between the quotes of a
// JSON string.
func PlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// Fold reports whether key equals one of names (lower-case ASCII) but for
// the case of its letters, as encoding/json matches a member to a struct
// field.
func Fold(key []byte, names ...string) bool {
	for _, name := range names {
		if len(key) != len(name) {
			continue
		}
		eq := true
		for i, c := range key {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != name[i] {
				eq = false
				break
			}
		}
		if eq {
			return true
		}
	}
	return false
}
