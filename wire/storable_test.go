package wire

import (
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
