package wire

import (
	"encoding/json"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

func evs(data ...string) []groundhog.Event {
	out := make([]groundhog.Event, len(data))
	for i, d := range data {
		out[i] = groundhog.Event{Data: []byte(d)}
	}
	return out
}

func TestStorableRefusals(t *testing.T) {
	body := []struct {
		name  string
		shape groundhog.Shape
		body  string
		want  bool
	}{
		{"chat answer", groundhog.ShapeChat, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"finish_reason":"stop"}]}`, true},
		{"chat content filter", groundhog.ShapeChat, `{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`, false},
		{"chat refusal", groundhog.ShapeChat, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`, false},
		{"chat second choice refused", groundhog.ShapeChat, `{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"},{"index":1,"message":{"content":""},"finish_reason":"content_filter"}]}`, false},
		{"responses answer", groundhog.ShapeResponses, `{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`, true},
		{"responses max tokens", groundhog.ShapeResponses, `{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`, true},
		{"responses content filter", groundhog.ShapeResponses, `{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}`, false},
		{"responses refusal part", groundhog.ShapeResponses, `{"status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}`, false},
		{"messages answer", groundhog.ShapeMessages, `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}`, true},
		{"messages refusal", groundhog.ShapeMessages, `{"type":"message","content":[],"stop_reason":"refusal"}`, false},
		{"embeddings", groundhog.ShapeEmbeddings, `{"data":[]}`, true},
		{"not JSON", groundhog.ShapeChat, `{"choices":`, false},
	}
	for _, tc := range body {
		if got := Storable(tc.shape, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: Storable = %v, want %v", tc.name, got, tc.want)
		}
	}
	stream := []struct {
		name   string
		shape  groundhog.Shape
		events []groundhog.Event
		want   bool
	}{
		{"chat stream", groundhog.ShapeChat, evs(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`), true},
		{"chat stream filtered", groundhog.ShapeChat, evs(`{"choices":[{"index":0,"delta":{"content":""}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`, `[DONE]`), false},
		{"chat stream refusal", groundhog.ShapeChat, evs(`{"choices":[{"index":0,"delta":{"refusal":"I can't"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`), false},
		{"responses stream", groundhog.ShapeResponses, evs(`{"type":"response.created","response":{"status":"in_progress"}}`, `{"type":"response.completed","response":{"status":"completed","output":[]}}`), true},
		{"responses incomplete filter", groundhog.ShapeResponses, evs(`{"type":"response.created","response":{"status":"in_progress"}}`, `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`), false},
		{"responses refusal delta", groundhog.ShapeResponses, evs(`{"type":"response.refusal.delta","delta":"no"}`, `{"type":"response.completed","response":{"status":"completed"}}`), false},
		{"messages stream", groundhog.ShapeMessages, evs(`{"type":"message_start","message":{}}`, `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, `{"type":"message_stop"}`), true},
		{"messages stream refusal", groundhog.ShapeMessages, evs(`{"type":"message_start","message":{}}`, `{"type":"message_delta","delta":{"stop_reason":"refusal"}}`, `{"type":"message_stop"}`), false},
	}
	for _, tc := range stream {
		if got := StorableEvents(tc.shape, tc.events); got != tc.want {
			t.Errorf("%s: StorableEvents = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A "refusal" key with the value null (every OpenAI chat message carries
// one) is no refusal: such an answer is storable without being parsed, and
// every other use of the word still is parsed.
func TestNullRefusalIsNoSignal(t *testing.T) {
	for _, tc := range []struct {
		body string
		may  bool
	}{
		{`{"choices":[{"message":{"content":"hi","refusal":null},"finish_reason":"stop"}]}`, false},
		{`{"choices":[{"message":{"content":"hi","refusal" : null},"finish_reason":"stop"}]}`, false},
		{"{\"choices\":[{\"message\":{\"refusal\":\n\tnull},\"finish_reason\":\"stop\"}]}", false},
		{`{"choices":[{"message":{"refusal":null},"finish_reason":"stop"},{"message":{"refusal":"no"}}]}`, true},
		{`{"choices":[{"message":{"refusal":"null"},"finish_reason":"stop"}]}`, true},
		{`{"choices":[{"message":{"content":"a refusal","refusal":null}}]}`, true},
		{`{"choices":[{"message":{"content":"\"refusal\":null"}}]}`, true},
		{`{"choices":[{"message":{"no_refusal":null}}]}`, true},
		{`{"stop_reason":"refusal"}`, true},
		{`{"choices":[{"message":{"refusal":null},"finish_reason":"content_filter"}]}`, true},
	} {
		if got := mayRefuse([]byte(tc.body)); got != tc.may {
			t.Errorf("mayRefuse(%s) = %v, want %v", tc.body, got, tc.may)
		}
		for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages} {
			if got, want := Storable(shape, []byte(tc.body)), storableParsed(shape, []byte(tc.body)); got != want {
				t.Errorf("%s %s: Storable = %v, parsed in full %v", shape, tc.body, got, want)
			}
		}
	}
}

// FuzzStorable holds the unparsed answer to the parsed one: Storable says
// what reading every signal where it is says, on any valid JSON object.
func FuzzStorable(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"message":{"content":"hi","refusal":null},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":null,"refusal":"I can't"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":"x"},"finish_reason":"content_filter"}]}`,
		`{"status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}`,
		`{"type":"message","content":[],"stop_reason":"refusal"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages} {
			if got, want := Storable(shape, []byte(body)), storableParsed(shape, []byte(body)); got != want {
				t.Fatalf("%s %q: Storable = %v, parsed in full %v", shape, body, got, want)
			}
		}
	})
}

// BenchmarkStorable is the check a stored chat answer takes (every OpenAI
// chat message carries "refusal":null); baseline "parsed": the same answer
// read signal by signal, as every such answer was before, in the same run.
func BenchmarkStorable(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"The bug is on line 42: the loop reads one element past the end of the slice.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":20,"total_tokens":1020},"system_fingerprint":"fp_1"}`)
	b.Run("storable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !Storable(groundhog.ShapeChat, body) {
				b.Fatal("not storable")
			}
		}
	})
	b.Run("parsed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !storableParsed(groundhog.ShapeChat, body) {
				b.Fatal("not storable")
			}
		}
	})
}
