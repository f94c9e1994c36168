package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// valuesOf returns the request's values of shape's echoed fields, as a
// caller of RewriteEchoValues finds them (here by encoding/json).
func valuesOf(t *testing.T, shape groundhog.Shape, request string) [][]byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(request), &top); err != nil {
		t.Fatal(err)
	}
	var vals [][]byte
	for _, name := range EchoFields(shape) {
		vals = append(vals, top[name])
	}
	return vals
}

// rewrite is RewriteEcho, checked to equal RewriteEchoValues given the
// request's values.
func rewrite(t *testing.T, shape groundhog.Shape, request, body string) string {
	t.Helper()
	got := string(RewriteEcho(shape, []byte(request), []byte(body)))
	if byValues := string(RewriteEchoValues(shape, valuesOf(t, shape, request), []byte(body))); byValues != got {
		t.Errorf("RewriteEchoValues %s\nRewriteEcho       %s", byValues, got)
	}
	return got
}

// rewriteEvent is NewEchoRewriter's Event, checked to equal
// NewEchoRewriterValues' given the request's values.
func rewriteEvent(t *testing.T, shape groundhog.Shape, request string, ev groundhog.Event) groundhog.Event {
	t.Helper()
	got := NewEchoRewriter(shape, []byte(request)).Event(ev)
	if byValues := NewEchoRewriterValues(shape, valuesOf(t, shape, request)).Event(ev); string(byValues.Data) != string(got.Data) || byValues.Name != got.Name {
		t.Errorf("NewEchoRewriterValues %s\nNewEchoRewriter       %s", byValues.Data, got.Data)
	}
	return got
}

func TestRewriteEcho(t *testing.T) {
	stored := `{"id":"resp_1","object":"response","status":"completed","metadata":{"owner":"alice"},"store":false,"user":"alice","output":[]}`
	got := rewrite(t, groundhog.ShapeResponses, `{"model":"m","input":"x","user":"carol","store":false}`, stored)
	want := `{"id":"resp_1","object":"response","status":"completed","metadata":{},"store":false,"user":"carol","output":[]}`
	if got != want {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}
	// Fields the provider did not echo are not added; chat echoes nothing.
	if got := rewrite(t, groundhog.ShapeResponses, `{"user":"carol"}`, `{"id":"r"}`); got != `{"id":"r"}` {
		t.Errorf("added a field: %s", got)
	}
	chat := `{"id":"c","choices":[]}`
	if got := rewrite(t, groundhog.ShapeChat, `{"user":"carol"}`, chat); got != chat {
		t.Errorf("chat changed: %s", got)
	}
	ev := groundhog.Event{Name: "response.completed", Data: []byte(`{"type":"response.completed","response":{"id":"r","user":"alice","metadata":{"owner":"alice"}}}`)}
	orig := string(ev.Data)
	out := rewriteEvent(t, groundhog.ShapeResponses, `{"user":"carol","metadata":{"k":"v"}}`, ev)
	if string(out.Data) != `{"type":"response.completed","response":{"id":"r","user":"carol","metadata":{"k":"v"}}}` || out.Name != ev.Name {
		t.Errorf("event: %s", out.Data)
	}
	if string(ev.Data) != orig {
		t.Error("the shared event was modified")
	}
	if NewEchoRewriter(groundhog.ShapeMessages, []byte(`{}`)) != nil || NewEchoRewriterValues(groundhog.ShapeMessages, nil) != nil || EchoFields(groundhog.ShapeMessages) != nil {
		t.Error("messages echo nothing")
	}
}

// A field whose omitted value is the provider's choice keeps the stored
// value; an answer that needs no rewrite is returned as the same bytes, and
// a rewrite changes only the differing value.
func TestRewriteEchoKeepsStoredBytes(t *testing.T) {
	stored := "{ \"id\": \"r\", \"prompt_cache_retention\": \"24h\", \"user\": null, \"metadata\": { } }"
	for _, tt := range []struct{ name, request, want string }{
		{"nothing to rewrite", `{"input":"x"}`, stored},
		{"retention set", `{"input":"x","prompt_cache_retention":"in_memory"}`, "{ \"id\": \"r\", \"prompt_cache_retention\": \"in_memory\", \"user\": null, \"metadata\": { } }"},
		{"user set", `{"input":"x","user":"carol"}`, "{ \"id\": \"r\", \"prompt_cache_retention\": \"24h\", \"user\": \"carol\", \"metadata\": { } }"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rewrite(t, groundhog.ShapeResponses, tt.request, stored); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			ev := groundhog.Event{Name: "response.completed", Data: []byte(`{"type":"response.completed","response":` + stored + `}`)}
			want := `{"type":"response.completed","response":` + tt.want + `}`
			if got := string(rewriteEvent(t, groundhog.ShapeResponses, tt.request, ev).Data); got != want {
				t.Errorf("event: got  %s\nwant %s", got, want)
			}
		})
	}
}

// An omitted store is echoed as the provider decided (false for an
// organization with zero data retention): a hit keeps the stored value.
func TestRewriteEchoKeepsStoredStore(t *testing.T) {
	stored := `{"id":"r","store":false,"user":null}`
	if got := rewrite(t, groundhog.ShapeResponses, `{"input":"x"}`, stored); got != stored {
		t.Errorf("got %s, want the stored %s", got, stored)
	}
}

// FuzzRewriteEchoValues: for any body and values, RewriteEchoValues (which
// trusts the body to be valid, as stored answers are) never panics; for a
// body that is a valid JSON object, the result is valid JSON whose echoed
// members hold the wanted values and whose other members are as they were.
func FuzzRewriteEchoValues(f *testing.F) {
	f.Add([]byte(`{"id":"r","user":"alice","metadata":{"a":"b"},"store":false,"prompt_cache_key":null}`), []byte(`"carol"`), []byte(`{"k":"v"}`))
	f.Add([]byte(`{ "user" : null , "output" : [ {"user":"x"} ] }`), []byte(`"bob"`), []byte(``))
	f.Add([]byte(`{"user":"a\"b\\","metadata":{}}`), []byte(``), []byte(`{}`))
	f.Add([]byte(`{"`), []byte(`"x"`), []byte(`{}`))
	f.Add([]byte(`{"user`), []byte(`"x"`), []byte(``))
	f.Add([]byte(`{"user":`), []byte(`"x"`), []byte(``))
	f.Add([]byte(`[1,{"user":"a"}]`), []byte(`"x"`), []byte(``))
	fields := EchoFields(groundhog.ShapeResponses)
	index := func(name string) int {
		for i, f := range fields {
			if f == name {
				return i
			}
		}
		panic(name)
	}
	f.Fuzz(func(t *testing.T, body, user, metadata []byte) {
		vals := make([][]byte, len(fields))
		if json.Valid(user) {
			vals[index("user")] = user
		}
		if json.Valid(metadata) {
			vals[index("metadata")] = metadata
		}
		out := RewriteEchoValues(groundhog.ShapeResponses, vals, body)
		// Through the answer's index: the same bytes, whatever the body.
		stored := &groundhog.Response{Status: 200, Body: body}
		if got := IndexEcho(groundhog.ShapeResponses, stored).Rewrite(groundhog.ShapeResponses, vals, stored).Body; !bytes.Equal(got, out) {
			t.Fatalf("%q: through the index %q, walked %q", body, got, out)
		}
		// The same body as the response object of a stream's event, with
		// members after it: rewritten the same, the rest kept.
		ev := groundhog.Event{Name: "response.completed", Data: []byte(`{"type":"response.completed","response":` + string(body) + `,"sequence_number":9}`)}
		evOut := NewEchoRewriterValues(groundhog.ShapeResponses, vals).Event(ev)
		var before map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil || before == nil {
			return
		}
		if want := `{"type":"response.completed","response":` + string(out) + `,"sequence_number":9}`; string(evOut.Data) != want {
			t.Fatalf("event of %q:\n got %q\nwant %q", body, evOut.Data, want)
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q became invalid: %q (%v)", body, out, err)
		}
		want := echoValuesOf(groundhog.ShapeResponses, vals)
		for k, v := range before {
			w := want.get(k)
			if w == nil {
				w = v
			}
			if !sameJSON(after[k], w) {
				t.Fatalf("%q: member %q is %s, want %s (result %q)", body, k, after[k], w, out)
			}
		}
		if len(after) != len(before) {
			t.Fatalf("%q: members %d → %d", body, len(before), len(after))
		}
	})
}
