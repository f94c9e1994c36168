package observe

import (
	"encoding/json"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog"
)

// AppendLine appends the access line of e, logged at now, to b: the bytes
// slog's text handler (json false) or JSON handler (json true) prints for
// LogAttrs(ctx, slog.LevelInfo, "call", Attrs(e)...), newline included —
// encoded by hand, without building one slog.Attr.
func AppendLine(b []byte, now time.Time, e *groundhog.LedgerEntry, json bool) []byte {
	if json {
		return appendJSONLine(b, now, e)
	}
	return appendTextLine(b, now, e)
}

func requestHashPrefix(e *groundhog.LedgerEntry) string {
	h := e.RequestHash
	if len(h) > hashPrefix {
		h = h[:hashPrefix]
	}
	return h
}

func latencyMS(e *groundhog.LedgerEntry) float64 {
	return float64(e.Latency.Microseconds()) / 1000
}

func appendTextLine(b []byte, now time.Time, e *groundhog.LedgerEntry) []byte {
	b = append(b, "time="...)
	b = appendRFC3339Millis(b, now)
	b = append(b, " level=INFO msg=call tenant="...)
	b = appendTextString(b, e.Tenant)
	b = append(b, " operation="...)
	b = appendTextString(b, e.Operation)
	b = append(b, " hash="...)
	b = appendTextString(b, requestHashPrefix(e))
	b = append(b, " shape="...)
	b = appendTextString(b, string(e.Shape))
	b = append(b, " model="...)
	b = appendTextString(b, e.Model)
	b = append(b, " provider="...)
	b = appendTextString(b, e.Provider)
	b = append(b, " outcome="...)
	b = appendTextString(b, string(e.Outcome))
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, " input_tokens="...)
	b = strconv.AppendInt(b, e.Usage.InputTokens, 10)
	b = append(b, " cached_input_tokens="...)
	b = strconv.AppendInt(b, e.Usage.CachedInputTokens, 10)
	b = append(b, " cache_write_tokens="...)
	b = strconv.AppendInt(b, e.Usage.CacheWriteTokens, 10)
	b = append(b, " output_tokens="...)
	b = strconv.AppendInt(b, e.Usage.OutputTokens, 10)
	b = append(b, " cost_usd="...)
	b = e.Cost.AppendString(b) // digits, '-', '.' or "unknown": never quoted
	b = append(b, " saved_usd="...)
	b = e.Saved.AppendString(b) // digits, '-', '.' or "unknown": never quoted
	b = append(b, " latency_ms="...)
	b = appendLatencyMS(b, e, false)
	b = append(b, " attempt="...)
	b = strconv.AppendInt(b, int64(e.Attempt), 10)
	b = append(b, " in_flight="...)
	b = strconv.AppendBool(b, e.InFlight)
	b = append(b, " stream="...)
	b = strconv.AppendBool(b, e.Stream)
	return append(b, '\n')
}

func appendJSONLine(b []byte, now time.Time, e *groundhog.LedgerEntry) []byte {
	b = append(b, `{"time":"`...)
	b = appendRFC3339Nano(b, now)
	b = append(b, `","level":"INFO","msg":"call","tenant":"`...)
	b = appendJSONString(b, e.Tenant)
	b = append(b, `","operation":"`...)
	b = appendJSONString(b, e.Operation)
	b = append(b, `","hash":"`...)
	b = appendJSONString(b, requestHashPrefix(e))
	b = append(b, `","shape":"`...)
	b = appendJSONString(b, string(e.Shape))
	b = append(b, `","model":"`...)
	b = appendJSONString(b, e.Model)
	b = append(b, `","provider":"`...)
	b = appendJSONString(b, e.Provider)
	b = append(b, `","outcome":"`...)
	b = appendJSONString(b, string(e.Outcome))
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"input_tokens":`...)
	b = strconv.AppendInt(b, e.Usage.InputTokens, 10)
	b = append(b, `,"cached_input_tokens":`...)
	b = strconv.AppendInt(b, e.Usage.CachedInputTokens, 10)
	b = append(b, `,"cache_write_tokens":`...)
	b = strconv.AppendInt(b, e.Usage.CacheWriteTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, e.Usage.OutputTokens, 10)
	b = append(b, `,"cost_usd":"`...)
	b = e.Cost.AppendString(b) // never escaped
	b = append(b, `","saved_usd":"`...)
	b = e.Saved.AppendString(b) // never escaped
	b = append(b, `","latency_ms":`...)
	b = appendLatencyMS(b, e, true)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(e.Attempt), 10)
	b = append(b, `,"in_flight":`...)
	b = strconv.AppendBool(b, e.InFlight)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, e.Stream)
	return append(b, "}\n"...)
}

// appendRFC3339Millis is the text handler's time: RFC 3339 with exactly
// three fractional digits.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	s := secondOf(t)
	if s == nil {
		return appendRFC3339MillisFormat(b, t)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, s.head...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

// appendRFC3339MillisFormat is appendRFC3339Millis by time.AppendFormat.
func appendRFC3339MillisFormat(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Round(0).Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}

// appendRFC3339Nano is the JSON handler's time: time.RFC3339Nano (the
// fraction's trailing zeros dropped, and its dot when they all are).
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	s := secondOf(t)
	if s == nil {
		return t.Round(0).AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, s.head...)
	if ns := t.Nanosecond(); ns != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i > 0; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(d)
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, s.zone...)
}

// second is the text of one second of one location, in RFC 3339: the
// date and time of day, and the zone. Calls end many times a second, and
// formatting the same second anew for each line was about a quarter of the
// line's cost; only the fraction changes within a second.
type second struct {
	unix int64
	loc  *time.Location
	head string // "2006-01-02T15:04:05"
	zone string // "Z" or "+07:00"
}

// lastSecond is the second of the latest line (shared: lines of one second
// come from every call).
var lastSecond atomic.Pointer[second]

// secondOf returns the text of t's second in t's location, or nil for a
// year outside 0–9999 (formatted in full instead).
func secondOf(t time.Time) *second {
	unix, loc := t.Unix(), t.Location()
	if s := lastSecond.Load(); s != nil && s.unix == unix && s.loc == loc {
		return s
	}
	const headLen = len("2006-01-02T15:04:05")
	if y := t.Year(); y < 0 || y > 9999 {
		return nil
	}
	text := t.Round(0).Truncate(time.Second).AppendFormat(make([]byte, 0, 32), time.RFC3339)
	s := &second{unix: unix, loc: loc, head: string(text[:headLen]), zone: string(text[headLen:])}
	lastSecond.Store(s)
	return s
}

// appendLatencyMS writes the row's latency in milliseconds as the text
// handler (strconv 'g') or the JSON handler (appendJSONFloat) prints
// float64(microseconds)/1000: for 0 ≤ µs < 10⁹ both print the exact
// decimal (at most three fractional digits, trailing zeros dropped), which
// is written here from the integer without a float conversion.
func appendLatencyMS(b []byte, e *groundhog.LedgerEntry, json bool) []byte {
	us := e.Latency.Microseconds()
	if us < 0 || us >= 1e9 {
		if json {
			return appendJSONFloat(b, latencyMS(e))
		}
		return strconv.AppendFloat(b, latencyMS(e), 'g', -1, 64)
	}
	b = strconv.AppendInt(b, us/1000, 10)
	if f := us % 1000; f != 0 {
		d := [4]byte{'.', byte('0' + f/100), byte('0' + f/10%10), byte('0' + f%10)}
		n := len(d)
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return b
}

// appendJSONFloat writes f as encoding/json does (what the JSON handler
// calls); the plain decimal form in the range a latency takes.
func appendJSONFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	j, err := json.Marshal(f)
	if err != nil {
		return append(b, `"!ERROR:`+err.Error()+`"`...)
	}
	return append(b, j...)
}

// appendTextString writes s as the text handler does: bare when it can be
// read back unambiguously, Go-quoted otherwise.
func appendTextString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !textBareASCII[s[i]] { // a byte to look at closer: UTF-8, or a quote
			if needsQuoting(s) {
				return strconv.AppendQuote(b, s)
			}
			return append(b, s...)
		}
	}
	if len(s) == 0 {
		return append(b, `""`...)
	}
	return append(b, s...)
}

// textBareASCII is textBare over every byte value, false from
// utf8.RuneSelf on: one look-up a byte for the common all-ASCII value.
var textBareASCII = func() (t [256]bool) {
	copy(t[:], textBare[:])
	return t
}()

// textBare marks the ASCII bytes a bare text value may hold: not a space,
// '=' or what JSON would escape, except '\\'.
var textBare = func() (t [utf8.RuneSelf]bool) {
	for c := range byte(utf8.RuneSelf) {
		t[c] = c == '\\' || (c != ' ' && c != '=' && jsonSafe(c))
	}
	return t
}()

func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !textBare[c] {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// jsonSafe reports whether an ASCII byte goes into a JSON string as is.
func jsonSafe(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

const hexDigits = "0123456789abcdef"

// appendJSONString writes s escaped as the JSON handler does (no HTML
// escaping; invalid UTF-8 as \ufffd; U+2028 and U+2029 escaped).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonSafeASCII[s[i]] {
			return appendJSONEscaped(b, s)
		}
	}
	return append(b, s...)
}

// jsonSafeASCII is jsonSafe over every byte value, false from
// utf8.RuneSelf on: one look-up a byte for the common all-ASCII value.
var jsonSafeASCII = func() (t [256]bool) {
	for c := range byte(utf8.RuneSelf) {
		t[c] = jsonSafe(c)
	}
	return t
}()

// appendJSONEscaped is appendJSONString for a value that may need escaping.
func appendJSONEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, '\\')
			switch c {
			case '\\', '"':
				b = append(b, c)
			case '\n':
				b = append(b, 'n')
			case '\r':
				b = append(b, 'r')
			case '\t':
				b = append(b, 't')
			default:
				b = append(b, 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
