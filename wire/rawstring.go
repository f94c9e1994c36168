package wire

import "unicode/utf8"

// plainString returns the text of v when v is a JSON string json.Unmarshal
// would decode to its bytes as they are: a quote, then no quote, backslash
// or control byte, valid UTF-8 (where encoding/json would put U+FFFD for a
// bad byte), then the closing quote as v's last byte. ok false: anything
// else, for json.Unmarshal to decide (rawString). The model name of every
// answer goes through here (json.Unmarshal of it was ≈ 0.7 % of the
// gateway's CPU per 1 KB miss: docs/design/0010-miss-path.md).
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}
