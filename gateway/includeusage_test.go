package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// TestSetIncludeUsageMatches: for chat stream bodies with every form of
// stream_options (absent, null, empty, with include_usage false, with
// other members, not an object), odd whitespace, duplicate or escaped
// keys, the body setIncludeUsage sends upstream decodes to exactly what
// withIncludeUsage's decodes to; the client's bytes are never written to,
// and where setIncludeUsage edits in place the client's bytes are kept but
// for an insertion or a replaced null/false.
func TestSetIncludeUsageMatches(t *testing.T) {
	big := benchbody.Chat(64<<10, benchbody.Options{Stream: true})
	bodies := [][]byte{big}
	for _, so := range []string{``, `"stream_options":null`, `"stream_options":{}`, `"stream_options":{ }`, `"stream_options":{"include_usage":false}`,
		`"stream_options":{"x":1,"include_usage":false}`, `"stream_options": {"include_usage" : false , "y":[1,{"include_usage":false}]}`,
		`"stream_options":{"x":"a<b>&c"}`, `"stream_options":1`, `"stream_options":"s"`, `"stream_options":[]`,
		`"stream_options":{"include_usage":false,"include_usage":false}`, `"stream_options":{"include\u005fusage":false}`,
		`"stream_options":{},"stream_options":null`, `"stream\u005foptions":{}`, `"\u0073tream_options":{"x":1}`, `"stream\u005Foptions":{"x":1}`,
		`"x":"stream_options"`, `"x":"caf\u00e9 \u00E9"`} {
		for _, tmpl := range []string{
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi <b> & \"q\" \u00e9"}]%s}`,
			`{ %s "model" : "m" , "stream" : true }`,
			"{\n  \"stream\": true%s\n}\n",
			`{%s}`,
		} {
			s := so
			switch {
			case s == "":
			case strings.HasPrefix(tmpl, `{ %s`):
				s += ","
			case tmpl == `{%s}`:
			default:
				s = "," + s
			}
			bodies = append(bodies, []byte(strings.Replace(tmpl, "%s", s, 1)))
		}
	}
	bodies = append(bodies, []byte(`{"a":1,"a":2,"stream":true}`), []byte(`[1]`), []byte(`{}`), []byte(` {"stream":true} `))
	edited, noKey := 0, 0
	for _, b := range bodies {
		if !json.Valid(b) {
			t.Fatalf("test body not JSON: %s", b)
		}
		orig := append([]byte(nil), b...)
		got, want := setIncludeUsage(b, false), withIncludeUsage(b)
		if !bytes.Equal(b, orig) {
			t.Fatalf("%s: the client's body was written to", orig)
		}
		// With the fingerprint's word that no key is stream_options, where
		// it says so: the same bytes as the search finds.
		if fp, err := fingerprint.Compute(fingerprint.Params{Shape: groundhog.ShapeChat, Names: watchedNames}, b); err == nil && fp.Names&streamOptionsBit == 0 {
			if known := setIncludeUsage(b, true); !bytes.Equal(known, got) {
				t.Fatalf("%s: with the fingerprint's facts\n%s\nwithout\n%s", b, known, got)
			}
			noKey++
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: result not JSON: %v\n%s", b, err, got)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s:\nsetIncludeUsage  %s\nwithIncludeUsage %s", b, got, want)
		}
		if !bytes.Equal(got, want) {
			edited++
			p := commonPrefix(got, b)
			s := commonPrefix(reverse(got), reverse(b))
			// What differs in the client's bytes is nothing (an insertion)
			// or (part of) the null/false that was replaced.
			if p+s < len(b) && !strings.Contains("null false", string(b[p:len(b)-s])) {
				t.Fatalf("%s: bytes outside the edit changed:\n%s", b, got)
			}
		}
	}
	if edited < 20 || noKey < 10 {
		t.Fatalf("only %d bodies edited in place, %d known to hold no stream_options", edited, noKey)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func reverse(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		r[len(b)-1-i] = c
	}
	return r
}

// containsUnderscored answers what bytes.Contains answers: for every string
// of up to 7 bytes over the needle's own letters and a quote (so matches,
// near misses, overlaps and matches at either end all occur), and for a
// few longer bodies.
func TestContainsUnderscored(t *testing.T) {
	for _, needle := range []string{"e_u", "_us", "ab_", "include_usage"} {
		alphabet := []byte(`"` + needle)
		var walk func(b []byte)
		walk = func(b []byte) {
			if got, want := containsUnderscored(b, needle), bytes.Contains(b, []byte(needle)); got != want {
				t.Fatalf("containsUnderscored(%q, %q) = %v, want %v", b, needle, got, want)
			}
			if len(b) == 7 {
				return
			}
			for _, c := range alphabet {
				walk(append(b, c))
			}
		}
		walk(nil)
	}
	body := benchbody.Chat(64<<10, benchbody.Options{Stream: true})
	for _, b := range [][]byte{
		body,
		append(bytes.Clone(body[:len(body)-1]), `,"stream_options":{"include_usage":true}}`...),
		[]byte(`include_usage`),
		[]byte(`_usage include_usag include_usage`),
		[]byte(`includeinclude_usage_usage`),
	} {
		for _, needle := range []string{"include_usage", "stream_options", "tool_calls", "no_such_key"} {
			if got, want := containsUnderscored(b, needle), bytes.Contains(b, []byte(needle)); got != want {
				t.Errorf("containsUnderscored(%.40q…, %q) = %v, want %v", b, needle, got, want)
			}
		}
	}
}
