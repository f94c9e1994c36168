package wire

import (
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

func TestRewriteEcho(t *testing.T) {
	stored := `{"id":"resp_1","object":"response","status":"completed","metadata":{"owner":"alice"},"store":false,"user":"alice","output":[]}`
	got := string(RewriteEcho(groundhog.ShapeResponses, []byte(`{"model":"m","input":"x","user":"carol","store":false}`), []byte(stored)))
	want := `{"id":"resp_1","object":"response","status":"completed","metadata":{},"store":false,"user":"carol","output":[]}`
	if got != want {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}
	// Fields the provider did not echo are not added; chat echoes nothing.
	if got := string(RewriteEcho(groundhog.ShapeResponses, []byte(`{"user":"carol"}`), []byte(`{"id":"r"}`))); got != `{"id":"r"}` {
		t.Errorf("added a field: %s", got)
	}
	chat := `{"id":"c","choices":[]}`
	if got := string(RewriteEcho(groundhog.ShapeChat, []byte(`{"user":"carol"}`), []byte(chat))); got != chat {
		t.Errorf("chat changed: %s", got)
	}
	rw := NewEchoRewriter(groundhog.ShapeResponses, []byte(`{"user":"carol","metadata":{"k":"v"}}`))
	ev := groundhog.Event{Name: "response.completed", Data: []byte(`{"type":"response.completed","response":{"id":"r","user":"alice","metadata":{"owner":"alice"}}}`)}
	orig := string(ev.Data)
	out := rw.Event(ev)
	if string(out.Data) != `{"type":"response.completed","response":{"id":"r","user":"carol","metadata":{"k":"v"}}}` || out.Name != ev.Name {
		t.Errorf("event: %s", out.Data)
	}
	if string(ev.Data) != orig {
		t.Error("the shared event was modified")
	}
	if NewEchoRewriter(groundhog.ShapeMessages, []byte(`{}`)) != nil {
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
			if got := string(RewriteEcho(groundhog.ShapeResponses, []byte(tt.request), []byte(stored))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			ev := groundhog.Event{Name: "response.completed", Data: []byte(`{"type":"response.completed","response":` + stored + `}`)}
			want := `{"type":"response.completed","response":` + tt.want + `}`
			if got := string(NewEchoRewriter(groundhog.ShapeResponses, []byte(tt.request)).Event(ev).Data); got != want {
				t.Errorf("event: got  %s\nwant %s", got, want)
			}
		})
	}
}

// An omitted store is echoed as the provider decided (false for an
// organization with zero data retention): a hit keeps the stored value.
func TestRewriteEchoKeepsStoredStore(t *testing.T) {
	stored := `{"id":"r","store":false,"user":null}`
	if got := string(RewriteEcho(groundhog.ShapeResponses, []byte(`{"input":"x"}`), []byte(stored))); got != stored {
		t.Errorf("got %s, want the stored %s", got, stored)
	}
}
