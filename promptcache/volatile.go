package promptcache

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
)

// Volatile is a kind of per-call value that, inside a cached prefix, breaks
// reuse on every call: the pattern named by the volatile_in_prefix cause.
type Volatile uint8

// The volatile patterns, in the order they are tried on a word.
const (
	VolTimestamp Volatile = iota // ISO 8601 date-time (2026-12-01T08:27:58Z) or a Unix time in s/ms
	VolDate                      // 2026-12-01, 01/12/2026
	VolTime                      // 08:27, 08:27:58.123
	VolUUID                      // 8-4-4-4-12 hex
	VolRequestID                 // req_…, request-id…, trace_id… with digits
	VolNonce                     // a long run of letters and digits (≥ 16, both present)
	numVolatile
)

var volatileNames = [numVolatile]string{"iso_timestamp", "date", "time", "uuid", "request_id", "nonce"}

// String returns the pattern's name as diagnoses report it: iso_timestamp,
// date, time, uuid, request_id or nonce.
func (v Volatile) String() string {
	if v < numVolatile {
		return volatileNames[v]
	}
	return "unknown"
}

// volBits is the width of one pattern's field in a segment's packed
// volatile signature: per pattern a 5-bit digest of the values found (0 when
// the pattern does not occur), so two segments whose masked text is equal
// tell which pattern's values differ without keeping any of them.
const volBits = 5

func volField(sig uint32, v Volatile) uint32 { return sig >> (volBits * uint(v)) & (1<<volBits - 1) }

// volMatch is one volatile word in a segment's bytes.
type volMatch struct {
	start, end int
	kind       Volatile
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == ':' || c == '.' || c == '+' || c == '/' || c == '='
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isAlnum(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// findVolatile appends the volatile words of data to out. Every pattern
// contains a digit, so the scan jumps from digit to digit and looks at the
// word around each; text without digits costs one byte loop.
func findVolatile(data []byte, out []volMatch) []volMatch {
	i := 0
	for i < len(data) {
		p := i
		for p < len(data) && data[p]-'0' > 9 {
			p++
		}
		if p == len(data) {
			break
		}
		s := p
		for s > i && isWordByte(data[s-1]) {
			s--
		}
		e := p + 1
		for e < len(data) && isWordByte(data[e]) {
			e++
		}
		// Trailing punctuation ends a sentence, not a value.
		for e > s && (data[e-1] == '.' || data[e-1] == ':' || data[e-1] == '-' || data[e-1] == '/') {
			e--
		}
		for s < e && (data[s] == '.' || data[s] == ':' || data[s] == '-' || data[s] == '/') {
			s++
		}
		if kind, ok := classify(data[s:e]); ok {
			out = append(out, volMatch{s, e, kind})
		}
		i = max(e, p+1)
	}
	return out
}

// classify names the volatile pattern of one word, if any.
func classify(w []byte) (Volatile, bool) {
	switch {
	case len(w) < 4:
		return 0, false
	case hasRequestPrefix(w):
		return VolRequestID, true
	case isISODate(w) && len(w) > 10 && (w[10] == 'T' || w[10] == 't') && len(w) >= 16 && isClock(w[11:]):
		return VolTimestamp, true
	case isISODate(w) && len(w) == 10, isSlashDate(w):
		return VolDate, true
	case isClock(w):
		return VolTime, true
	case containsUUID(w):
		return VolUUID, true
	case (len(w) == 10 || len(w) == 13) && allDigits(w) && (w[0] == '1' || w[0] == '2'):
		return VolTimestamp, true
	case isNonce(w):
		return VolNonce, true
	}
	return 0, false
}

func allDigits(w []byte) bool {
	for _, c := range w {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func isISODate(w []byte) bool {
	return len(w) >= 10 && isDigit(w[0]) && isDigit(w[1]) && isDigit(w[2]) && isDigit(w[3]) && w[4] == '-' &&
		isDigit(w[5]) && isDigit(w[6]) && w[7] == '-' && isDigit(w[8]) && isDigit(w[9])
}

// isSlashDate matches d/m/yyyy, dd/mm/yy and the like.
func isSlashDate(w []byte) bool {
	parts := bytes.Split(w, []byte("/"))
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		if len(p) == 0 || len(p) > 4 || !allDigits(p) || (i < 2 && len(p) > 2) {
			return false
		}
	}
	return len(parts[2]) == 2 || len(parts[2]) == 4
}

// isClock matches hh:mm, hh:mm:ss, with optional fraction and zone.
func isClock(w []byte) bool {
	if len(w) < 4 {
		return false
	}
	i := 0
	if isDigit(w[i]) {
		i++
	} else {
		return false
	}
	if i < len(w) && isDigit(w[i]) {
		i++
	}
	if i+2 >= len(w) || w[i] != ':' || !isDigit(w[i+1]) || !isDigit(w[i+2]) {
		return false
	}
	i += 3
	if i+2 < len(w) && w[i] == ':' && isDigit(w[i+1]) && isDigit(w[i+2]) {
		i += 3
	}
	if i < len(w) && w[i] == '.' {
		i++
		for i < len(w) && isDigit(w[i]) {
			i++
		}
	}
	// A zone: Z, +hh:mm, -hhmm.
	rest := w[i:]
	return len(rest) == 0 || string(rest) == "Z" || string(rest) == "z" ||
		(rest[0] == '+' || rest[0] == '-') && len(rest) <= 6
}

func containsUUID(w []byte) bool {
	for s := 0; s+36 <= len(w); s++ {
		if w[s+8] == '-' && w[s+13] == '-' && w[s+18] == '-' && w[s+23] == '-' {
			ok := true
			for k := 0; k < 36 && ok; k++ {
				if k != 8 && k != 13 && k != 18 && k != 23 {
					ok = isHex(w[s+k])
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

var requestPrefixes = [][]byte{[]byte("req_"), []byte("req-"), []byte("request_id"), []byte("request-id"), []byte("requestid"), []byte("trace_id"), []byte("trace-id"), []byte("traceid"), []byte("x-request-id")}

func hasRequestPrefix(w []byte) bool {
	for _, p := range requestPrefixes {
		if len(w) > len(p) && bytes.EqualFold(w[:len(p)], p) {
			return true
		}
	}
	return false
}

// isNonce: at least 16 letters/digits (hyphens and underscores allowed),
// with at least two digits and two letters, none of whose hyphen- or
// underscore-separated parts is a plain lower-case word of four letters or
// more (that would be an identifier like user_profile_2024).
func isNonce(w []byte) bool {
	if len(w) < 16 {
		return false
	}
	digits, letters := 0, 0
	for _, c := range w {
		switch {
		case isDigit(c):
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		case c == '-' || c == '_':
		default:
			return false
		}
	}
	if digits < 2 || letters < 2 {
		return false
	}
	for _, part := range bytes.FieldsFunc(w, func(r rune) bool { return r == '-' || r == '_' }) {
		lower := len(part) >= 4
		for _, c := range part {
			lower = lower && c >= 'a' && c <= 'z'
		}
		if lower {
			return false
		}
	}
	return true
}

// volatileSig hashes data with every volatile word masked and packs the
// per-pattern digests of the words. With no volatile word, masked is plain.
func volatileSig(data []byte, plain uint64, scratch []volMatch) (masked uint64, sig uint32, _ []volMatch) {
	ms := findVolatile(data, scratch[:0])
	if len(ms) == 0 {
		return plain, 0, ms
	}
	d := xxhash.New()
	last := 0
	var fields [numVolatile]uint32
	for _, m := range ms {
		d.Write(data[last:m.start])
		d.Write([]byte{0, byte(m.kind) + 1, 0})
		last = m.end
		h := uint32(xxhash.Sum64(data[m.start:m.end]) % 31)
		fields[m.kind] = (fields[m.kind]*7+h)%31 + 1
	}
	d.Write(data[last:])
	for k, f := range fields {
		sig |= f << (volBits * uint(k))
	}
	return d.Sum64(), sig, ms
}
