package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// randomEchoAnswer builds a Responses-like answer: the echoed members and
// others in any order, some repeated, spaced or not, keys escaped, echoed
// names nested inside other members.
func randomEchoAnswer(r *rand.Rand) []byte {
	names := []string{"id", "user", "safety_identifier", "metadata", "store", "prompt_cache_key", "prompt_cache_retention", "output", "instructions", `us\u0065r`, "response"}
	sp := func() string { return [...]string{"", " ", "\n  ", "\t"}[r.IntN(4)] }
	// join is up to three elements between open and close, spaced at random.
	join := func(open, close string, elem func() string) string {
		var b strings.Builder
		b.WriteString(open + sp())
		for i, k := 0, r.IntN(4); i < k; i++ {
			if i > 0 {
				b.WriteString("," + sp())
			}
			b.WriteString(elem())
		}
		return b.String() + sp() + close
	}
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(9); {
		case n == 0:
			return "null"
		case n == 1:
			return [...]string{"true", "false"}[r.IntN(2)]
		case n == 2:
			return fmt.Sprint(r.IntN(1000) - 500)
		case n == 3:
			return `"a\"b\\c\u00e9` + strings.Repeat("x", r.IntN(40)) + `"`
		case n <= 5 && depth < 3:
			return join("{", "}", func() string {
				return `"` + names[r.IntN(len(names))] + `"` + sp() + ":" + sp() + value(depth+1)
			})
		case n <= 7 && depth < 3:
			return join("[", "]", func() string { return value(depth + 1) })
		default:
			return `"` + strings.Repeat("v", r.IntN(8)) + `"`
		}
	}
	var b strings.Builder
	b.WriteString(sp() + "{" + sp())
	for i, k := 0, r.IntN(12); i < k; i++ {
		if i > 0 {
			b.WriteString("," + sp())
		}
		b.WriteString(`"` + names[r.IntN(len(names))] + `"` + sp() + ":" + sp() + value(0))
	}
	b.WriteString(sp() + "}" + sp())
	return []byte(b.String())
}

// randomEchoValues is a request's values of the echoed fields, as the
// fingerprint's pass finds them: absent (nil) or one raw JSON value.
func randomEchoValues(r *rand.Rand) [][]byte {
	choices := []string{"", "null", `"alice"`, `"bob"`, `{"team":"a"}`, `{ "team" : "a" }`, "false", "true", `"in_memory"`, `"a\"b\\c\u00e9"`}
	vals := make([][]byte, len(EchoFields(groundhog.ShapeResponses)))
	for i := range vals {
		if c := choices[r.IntN(len(choices))]; c != "" {
			vals[i] = []byte(c)
		}
	}
	return vals
}

// An answer rewritten through its index is byte for byte what walking it
// gives (RewriteEchoValues for a body, NewEchoRewriterValues for events),
// for many callers' values from one index; an answer that needs no change
// is the stored answer itself, and the stored bytes are never modified.
func TestEchoIndexRewritesAsTheWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 26))
	shape := groundhog.ShapeResponses
	changed, same := 0, 0
	for n := 0; n < 20000; n++ {
		body := randomEchoAnswer(r)
		if !json.Valid(body) {
			t.Fatalf("the generator wrote invalid JSON: %s", body)
		}
		kept := bytes.Clone(body)
		stored := &groundhog.Response{Status: 200, Body: body}
		x := IndexEcho(shape, stored)
		events := []groundhog.Event{
			{Name: "response.created", Data: []byte(`{"type":"response.created","response":` + string(body) + `,"sequence_number":0}`)},
			{Name: "response.output_text.delta", Data: []byte(`{"type":"response.output_text.delta","delta":"response"}`)},
			{Name: "response.completed", Data: []byte(`{"type":"response.completed","sequence_number":2,"response":` + string(body) + `}`)},
			{Name: "", Data: []byte(`{"response":` + string(body) + `}`)},
		}
		storedStream := &groundhog.Response{Status: 200, Streamed: true, Events: events}
		xs := IndexEcho(shape, storedStream)
		for k := 0; k < 3; k++ {
			vals := randomEchoValues(r)
			want := RewriteEchoValues(shape, vals, body)
			got := x.Rewrite(shape, vals, stored)
			if !bytes.Equal(got.Body, want) {
				t.Fatalf("%s with %q:\nindexed %s\nwalked  %s", body, vals, got.Body, want)
			}
			if bytes.Equal(want, body) != (got == stored) {
				t.Fatalf("%s with %q: unchanged %v, the stored answer returned %v", body, vals, bytes.Equal(want, body), got == stored)
			}
			if bytes.Equal(want, body) {
				same++
			} else {
				changed++
			}
			wantEv := NewEchoRewriterValues(shape, vals).Events(events)
			gotEv := xs.Rewrite(shape, vals, storedStream)
			for i := range events {
				if !bytes.Equal(gotEv.Events[i].Data, wantEv[i].Data) || gotEv.Events[i].Name != events[i].Name {
					t.Fatalf("event %d of %s with %q:\nindexed %s\nwalked  %s", i, body, vals, gotEv.Events[i].Data, wantEv[i].Data)
				}
			}
		}
		if !bytes.Equal(body, kept) {
			t.Fatalf("the stored answer was modified: %s → %s", kept, body)
		}
	}
	if changed < 5000 || same < 5000 {
		t.Fatalf("the generator rarely exercises one side: %d changed, %d unchanged", changed, same)
	}
}

// An index given an answer it was not built from (another length, another
// kind, another shape) does not use its places: the answer is rewritten as
// the walk rewrites it.
func TestEchoIndexOtherAnswer(t *testing.T) {
	shape := groundhog.ShapeResponses
	a := &groundhog.Response{Status: 200, Body: []byte(`{"id":"a","user":"x"}`)}
	b := &groundhog.Response{Status: 200, Body: []byte(`{"id":"bb","metadata":{},"user":"y"}`)}
	vals := make([][]byte, len(EchoFields(shape)))
	vals[0] = []byte(`"carol"`)
	x := IndexEcho(shape, a)
	if x.For(shape, b) || x.For(groundhog.ShapeChat, a) || x.For(shape, &groundhog.Response{Status: 200, Streamed: true}) {
		t.Fatal("the index claims an answer it was not built from")
	}
	got := x.Rewrite(shape, vals, b)
	if want := RewriteEchoValues(shape, vals, b.Body); !bytes.Equal(got.Body, want) {
		t.Fatalf("got %s, want %s", got.Body, want)
	}
	if got := x.Rewrite(shape, vals, a); string(got.Body) != `{"id":"a","user":"carol"}` {
		t.Fatalf("got %s", got.Body)
	}
	// A shape that echoes nothing, and an error, are never rewritten.
	if IndexEcho(groundhog.ShapeChat, a) != nil {
		t.Fatal("chat echoes nothing")
	}
	e := &groundhog.Response{Status: 400, Body: []byte(`{"user":"x"}`)}
	if x.Rewrite(shape, vals, e) != e {
		t.Fatal("an error answer was rewritten")
	}
}

// BenchmarkEchoRewrite: a stored Responses answer echoing 24 KB of
// instructions and tools, rewritten for another caller by walking it and
// through its index.
func BenchmarkEchoRewrite(b *testing.B) {
	shape := groundhog.ShapeResponses
	tools := strings.Repeat(`{"type":"function","name":"shell","description":"Runs a shell command and returns its output.","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}},"workdir":{"type":"string"}},"required":["command"]},"strict":false},`, 60)
	body := []byte(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","instructions":"` + strings.Repeat(`You are a coding agent.\n`, 400) + `","metadata":{},"model":"gpt-5-codex","output":[{"type":"message","content":[{"type":"output_text","text":"done"}]}],"prompt_cache_key":"conversation-a","safety_identifier":"alice","store":false,"tools":[` + strings.TrimSuffix(tools, ",") + `],"usage":{"input_tokens":9000,"output_tokens":2},"user":null}`)
	stored := &groundhog.Response{Status: 200, Body: body}
	vals := make([][]byte, len(EchoFields(shape)))
	vals[1], vals[4] = []byte(`"bob"`), []byte(`"conversation-b"`)
	b.Run("walk", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			_ = RewriteEchoValues(shape, vals, body)
		}
	})
	x := IndexEcho(shape, stored)
	b.Run("index", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			_ = x.Rewrite(shape, vals, stored)
		}
	})
}
