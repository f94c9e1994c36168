package observe

import (
	"encoding/json"
	"math"
	"strconv"
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
	b = appendRFC3339Millis(b, now.Round(0))
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
	b = strconv.AppendFloat(b, latencyMS(e), 'g', -1, 64)
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
	b = now.Round(0).AppendFormat(b, time.RFC3339Nano)
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
	b = appendJSONFloat(b, latencyMS(e))
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
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
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
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

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
