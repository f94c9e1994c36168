package gateway

import (
	"bytes"
	"strings"

	"github.com/groundhog-ai/groundhog/wire"
)

// setIncludeUsage is withIncludeUsage without decoding and re-encoding the
// whole body: it copies the client's bytes and writes
// "stream_options":{"include_usage":true} into them — a member added
// before the closing brace, a null stream_options replaced, an
// include_usage member added to or replaced in a stream_options object.
// The result means what withIncludeUsage's means (pinned by
// TestSetIncludeUsageMatches); only what withIncludeUsage's encoding
// changed besides (keys sorted, whitespace dropped, <>& escaped) is left as
// the client sent it. The body is never written to (it may be a pooled
// buffer other requests read). Bodies it does not handle this way —
// duplicate top-level keys, escapes in a key, a stream_options that is
// neither null nor an object, anything unexpected — go through
// withIncludeUsage.
//
// noKey says the caller knows that no key of the body, at any depth and
// decoded, is stream_options (the fingerprint's pass over these very bytes
// saw none): the body is then not searched for one (≈ 42 µs at 200 KB).
func setIncludeUsage(body []byte, noKey bool) []byte {
	b := body
	end := len(bytes.TrimRight(b, " \t\r\n"))
	i := wire.SkipSpace(b, 0)
	if i >= end || b[i] != '{' || b[end-1] != '}' {
		return withIncludeUsage(body)
	}
	var so jsonMember
	if !noKey && (containsUnderscored(b, "stream_options") || mayEscapeKey(b)) {
		// The key may be there: find the top-level member (a walk over
		// the top-level values; rare: most clients send no stream_options).
		var ok bool
		if so, ok = topMember(b, i, end, "stream_options"); !ok {
			return withIncludeUsage(body)
		}
	} // else no key anywhere decodes to stream_options: no walk needed
	const member = `"stream_options":{"include_usage":true}`
	switch {
	case so.val.end == 0: // absent: add the member last
		last := len(bytes.TrimRight(b[:end-1], " \t\r\n"))
		sep := ","
		if b[last-1] == '{' {
			sep = ""
		}
		return splice(b, last, last, sep+member)
	case string(b[so.val.start:so.val.end]) == "null":
		return splice(b, so.val.start, so.val.end, `{"include_usage":true}`)
	case b[so.val.start] == '{':
		iu, ok := topMember(b, so.val.start, so.val.end, "include_usage")
		if !ok {
			return withIncludeUsage(body)
		}
		if iu.val.end != 0 {
			return splice(b, iu.val.start, iu.val.end, "true")
		}
		open := so.val.start + 1
		sep := ","
		if k := wire.SkipSpace(b, open); b[k] == '}' {
			sep = ""
		}
		return splice(b, open, open, `"include_usage":true`+sep)
	}
	return withIncludeUsage(body)
}

// mayEscapeKey reports whether b holds a \u00XX escape of a lower-case
// letter or '_' (\u005f, \u0061–\u007a, hex digits in either case): the
// only way a key can decode to "stream_options" without holding those
// bytes (the other escapes decode to no letter). It hops over "u00" (rare
// in text; a search for the backslash would stop at every escaped quote).
func mayEscapeKey(b []byte) bool {
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("u00"))
		if k < 0 {
			return false
		}
		k += i
		i = k + 3
		if k == 0 || b[k-1] != '\\' || k+5 > len(b) {
			continue
		}
		hi, lo := b[k+3], b[k+4]|0x20 // the hex digits, either case
		if hi == '5' && lo == 'f' || hi == '6' && (lo >= '1' && lo <= '9' || lo >= 'a' && lo <= 'f') || hi == '7' && (lo >= '0' && lo <= '9' || lo == 'a') {
			return true
		}
	}
}

// splice returns a new slice: b with b[from:to] replaced by s.
func splice(b []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(s))
	out = append(out, b[:from]...)
	out = append(out, s...)
	return append(out, b[to:]...)
}

type jsonSpan struct{ start, end int }

type jsonMember struct{ key, val jsonSpan }

// topMember finds the member named name among the members of the object
// b[open:end] (b[open] == '{', b[end-1] == '}'; the body was validated at
// admission). ok is false when the object has duplicate keys or a key
// with an escape (where a decoded look-up could see what a byte look-up
// does not); a zero val means name is absent.
func topMember(b []byte, open, end int, name string) (m jsonMember, ok bool) {
	seen := make(map[string]bool, 16)
	i := wire.SkipSpace(b, open+1)
	for i < end-1 && b[i] == '"' {
		ke := wire.StringEnd(b, i)
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 || seen[string(key)] {
			return m, false
		}
		seen[string(key)] = true
		i = wire.SkipSpace(b, ke)
		if i >= end || b[i] != ':' {
			return m, false
		}
		i = wire.SkipSpace(b, i+1)
		ve := wire.ValueEnd(b, i)
		if ve <= i {
			return m, false
		}
		if string(key) == name {
			m = jsonMember{key: jsonSpan{i, ke}, val: jsonSpan{i, ve}}
		}
		i = wire.SkipSpace(b, ve)
		if i < end && b[i] == ',' {
			i = wire.SkipSpace(b, i+1)
		}
	}
	return m, true
}

// containsUnderscored is bytes.Contains(b, []byte(needle)) for a needle
// holding '_'. It searches for the needle's part from its first '_' on and
// checks the bytes before each match: '_' is rare in request bodies, so
// bytes.Index stays on its IndexByte path, where a search for the whole
// needle, whose first byte is a common letter, falls back to comparing at
// every offset (≈ 12 against ≈ 60 µs over a 200 KB chat body).
func containsUnderscored(b []byte, needle string) bool {
	k := strings.IndexByte(needle, '_')
	if k < 0 {
		return bytes.Contains(b, []byte(needle))
	}
	pre, rest := needle[:k], []byte(needle[k:])
	for i := k; i <= len(b); {
		j := bytes.Index(b[i:], rest)
		if j < 0 {
			return false
		}
		i += j
		if string(b[i-k:i]) == pre {
			return true
		}
		i++
	}
	return false
}
