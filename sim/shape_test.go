package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/wire"
)

// shape is the structure of JSON values: every field path and the JSON types
// seen at it. A path is a root name followed by ".field" for an object
// field and "[]" for array elements; an object with a string "type" field
// adds "{type}" to its own path, so a message item and a function-call item
// are told apart ("/v1/responses.output[]{message}.content[]{output_text}.text").
type shape map[string]map[string]bool

// opaqueFields hold request echoes or free-form data (tool schemas,
// metadata, tool inputs): only their presence and type are compared.
var opaqueFields = map[string]bool{
	"tools": true, "metadata": true, "schema": true, "input": true, "tool_choice": true,
	"parameters": true, "input_schema": true, "embedding": true,
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// add records the structure of v under path.
func (s shape) add(path string, v any) {
	if m, ok := v.(map[string]any); ok {
		if t, ok := m["type"].(string); ok {
			path += "{" + t + "}"
		} else if calls, _ := m["tool_calls"].([]any); len(calls) > 0 && strings.HasSuffix(path, ".message") {
			// A chat message has no type: a tool call is told apart
			// from a text answer by its tool_calls.
			path += "{tool_calls}"
		}
	}
	s.mark(path, jsonType(v))
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if opaqueFields[k] {
				s.mark(path+"."+k, "opaque")
				continue
			}
			s.add(path+"."+k, e)
		}
	case []any:
		for _, e := range v {
			s.add(path+"[]", e)
		}
	}
}

func (s shape) mark(path, typ string) {
	if s[path] == nil {
		s[path] = map[string]bool{}
	}
	s[path][typ] = true
}

// has reports whether s has the field path p, of any kind ("p" or "p{kind}").
func (s shape) has(p string) bool {
	if s[p] != nil {
		return true
	}
	for q := range s {
		if strings.HasPrefix(q, p+"{") {
			return true
		}
	}
	return false
}

// merge adds every path and type of o to s.
func (s shape) merge(o shape) {
	for p, ts := range o {
		for t := range ts {
			s.mark(p, t)
		}
	}
}

// parentOf returns the path of the object holding the field path p, and
// whether p is a field path at all (a kind "{type}" or an element "[]" is
// not: a kind present on one side only is a different answer, not a
// different shape).
func parentOf(p string) (string, bool) {
	if strings.HasSuffix(p, "}") || strings.HasSuffix(p, "]") {
		return "", false
	}
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return "", false
	}
	return p[:i], true
}

// shapeDiff is how a simulated answer's shape differs from a recorded one.
type shapeDiff struct {
	missing []string // fields the recording has and the answer lacks
	extra   []string // fields the answer has and no recording of the corpus has
	types   []string // fields whose non-null types differ
}

func (d shapeDiff) empty() bool { return len(d.missing)+len(d.extra)+len(d.types) == 0 }

func (d shapeDiff) String() string {
	var b strings.Builder
	for _, x := range []struct {
		what  string
		paths []string
	}{{"missing", d.missing}, {"extra", d.extra}, {"type", d.types}} {
		for _, p := range x.paths {
			b.WriteString("\n  " + x.what + " " + p)
		}
	}
	return b.String()
}

// compareShapes compares the simulated answer's shape got with the recorded
// want, field by field, in the objects both have (same path, same kind):
// a field of want that got lacks is missing; a field of got that want lacks
// is extra unless some recording of the corpus (known) has it, because the
// API has grown fields over time and older recordings lack the newer ones;
// a field whose non-null types do not meet is a type difference (null and
// a value may differ, as values may).
func compareShapes(want, got, known shape) shapeDiff {
	var d shapeDiff
	for p := range want {
		if parent, ok := parentOf(p); ok && got[parent] != nil && !got.has(p) {
			d.missing = append(d.missing, p)
		}
	}
	for p, ts := range got {
		parent, ok := parentOf(p)
		if !ok || want[parent] == nil {
			continue
		}
		if want[p] == nil {
			if !want.has(p) && known[p] == nil {
				d.extra = append(d.extra, p)
			}
			continue
		}
		w, g := nonNull(want[p]), nonNull(ts)
		if len(w) > 0 && len(g) > 0 && !intersects(w, g) {
			d.types = append(d.types, p+" "+strings.Join(slices.Sorted(maps.Keys(g)), "|")+" want "+strings.Join(slices.Sorted(maps.Keys(w)), "|"))
		}
	}
	sort.Strings(d.missing)
	sort.Strings(d.extra)
	sort.Strings(d.types)
	return d
}

func nonNull(ts map[string]bool) map[string]bool {
	out := map[string]bool{}
	for t := range ts {
		if t != "null" {
			out[t] = true
		}
	}
	return out
}

func intersects(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// sseEvent is one decoded server-sent event: its name (the event field, else
// the data's "type", else "chunk") and its data ("[DONE]" has none).
type sseEvent struct {
	name string
	data map[string]any
}

// readEvents decodes an event stream.
func readEvents(body []byte) ([]sseEvent, error) {
	r := wire.NewSSEReader(bytes.NewReader(body))
	var out []sseEvent
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
			out = append(out, sseEvent{name: "[DONE]"})
			continue
		}
		v, err := decodeJSON(ev.Data)
		if err != nil {
			return out, err
		}
		m, _ := v.(map[string]any)
		name := ev.Name
		if name == "" {
			name, _ = m["type"].(string)
		}
		if name == "" {
			name = "chunk"
		}
		out = append(out, sseEvent{name: name, data: m})
	}
}

// bodyShape returns the shape of a response body under root: a JSON value,
// or an event stream whose events are rooted at "root event <name>".
func bodyShape(root string, body []byte, stream bool) (shape, []sseEvent, error) {
	s := shape{}
	if !stream {
		v, err := decodeJSON(body)
		if err != nil {
			return nil, nil, err
		}
		s.add(root, v)
		return s, nil, nil
	}
	evs, err := readEvents(body)
	if err != nil {
		return nil, nil, err
	}
	for _, ev := range evs {
		if ev.data != nil {
			s.add(root+" event "+ev.name, ev.data)
		}
	}
	return s, evs, nil
}

// serveOnce sends body to the handler at path and returns the status and
// response body.
func serveOnce(t *testing.T, h http.Handler, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-shape")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// TestResponsesUsageIsTheAPIs: the Responses usage object has the API's
// fields and nothing else, also when the call writes to the prompt cache —
// streamed or not. A strict client schema (the OpenAI Agents SDK validates
// streamed usage) rejects any other field.
func TestResponsesUsageIsTheAPIs(t *testing.T) {
	want := []string{
		"u", "u.input_tokens", "u.input_tokens_details", "u.input_tokens_details.cache_write_tokens",
		"u.input_tokens_details.cached_tokens", "u.output_tokens", "u.output_tokens_details",
		"u.output_tokens_details.reasoning_tokens", "u.total_tokens",
	}
	s := New(Config{})
	for _, stream := range []bool{false, true} {
		// A breakpoint over 1,024 tokens: the call writes the cache.
		body := respReq(map[string]any{"stream": stream}, rmsg{"developer", "rule", 1200, true}, rmsg{"user", "hi", 1, false})
		status, raw := serveOnce(t, s, "/v1/responses", body)
		if status != 200 {
			t.Fatalf("stream=%v: status %d: %s", stream, status, raw)
		}
		var usage any
		if stream {
			evs, err := readEvents(raw)
			if err != nil {
				t.Fatal(err)
			}
			last := evs[len(evs)-1]
			if last.name != "response.completed" {
				t.Fatalf("last event %s", last.name)
			}
			usage = last.data["response"].(map[string]any)["usage"]
		} else {
			v, _ := decodeJSON(raw)
			usage = v.(map[string]any)["usage"]
		}
		sh := shape{}
		sh.add("u", usage)
		if got := slices.Sorted(maps.Keys(sh)); !slices.Equal(got, want) {
			t.Errorf("stream=%v: usage fields\n got %v\nwant %v", stream, got, want)
		}
	}
}

// TestCompareShapes: the comparator's rules, one case each.
func TestCompareShapes(t *testing.T) {
	of := func(js string) shape {
		v, err := decodeJSON([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		s := shape{}
		s.add("r", v)
		return s
	}
	known := of(`{"a":1,"old":1,"out":[{"type":"message","x":1}]}`)
	for _, tc := range []struct {
		name, want, got string
		diff            string
	}{
		{"same fields, other values", `{"a":1,"b":"x"}`, `{"a":2,"b":"y"}`, ""},
		{"a field the answer lacks", `{"a":1,"b":"x"}`, `{"a":1}`, "\n  missing r.b"},
		{"a field no recording has", `{"a":1}`, `{"a":1,"new":{"n":1}}`, "\n  extra r.new"},
		{"a field only other recordings have", `{"a":1}`, `{"a":1,"old":2}`, ""},
		{"a type that differs", `{"a":1}`, `{"a":"1"}`, "\n  type r.a string want number"},
		{"null and a value", `{"a":null}`, `{"a":1}`, ""},
		{"another kind of item", `{"out":[{"type":"reasoning","y":1}]}`, `{"out":[{"type":"message","x":1}]}`, ""},
		{"a field inside a kind both have", `{"out":[{"type":"message","x":1,"z":1}]}`, `{"out":[{"type":"message","x":1}]}`, "\n  missing r.out[]{message}.z"},
		{"a tool call against text", `{"message":{"tool_calls":[{"id":"1"}],"content":null}}`, `{"message":{"content":"hi"}}`, ""},
		{"opaque echoes", `{"tools":[{"a":1}]}`, `{"tools":[{"b":1}]}`, ""},
	} {
		if got := compareShapes(of(tc.want), of(tc.got), known).String(); got != tc.diff {
			t.Errorf("%s: diff %q, want %q", tc.name, got, tc.diff)
		}
	}
}
