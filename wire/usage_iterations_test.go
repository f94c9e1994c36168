package wire

import (
	"bytes"
	"reflect"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// An Anthropic usage whose work ran in several iterations is the sum of its
// iterations, each returned as a part with its kind and, when it ran on
// another model, that model; and a cached answer converted between its body
// and its stream keeps them (Anthropic streams them in the last
// message_delta, not in message_start).
func TestUsageIterationsParts(t *testing.T) {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5","content":[{"type":"text","text":"4"}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":30,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":3,"iterations":[` +
		`{"type":"compaction","input_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":400,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":400},"output_tokens":7},` +
		`{"type":"advisor_message","model":"claude-opus-4-8","input_tokens":50,"cache_read_input_tokens":20,"cache_creation_input_tokens":0,"output_tokens":2},` +
		`{"type":"message","input_tokens":30,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":3}]}}`)
	wantParts := []groundhog.UsagePart{
		{Kind: "compaction", Usage: groundhog.Usage{InputTokens: 410, CacheWriteTokens: 400, CacheWrite1hTokens: 400, OutputTokens: 7}},
		{Kind: "advisor_message", Model: "claude-opus-4-8", Usage: groundhog.Usage{InputTokens: 70, CachedInputTokens: 20, OutputTokens: 2}},
		{Kind: "message", Usage: groundhog.Usage{InputTokens: 30, OutputTokens: 3}},
	}
	want := groundhog.Usage{InputTokens: 510, CachedInputTokens: 20, CacheWriteTokens: 400, CacheWrite1hTokens: 400, OutputTokens: 12}

	_, u, parts, err := UsagePartsFromValidBody(groundhog.ShapeMessages, body)
	if err != nil || u != want || !reflect.DeepEqual(parts, wantParts) {
		t.Fatalf("body: %+v %+v %v, want %+v %+v", u, parts, err, want, wantParts)
	}
	if _, u, err := UsageFromBody(groundhog.ShapeMessages, body); err != nil || u != want {
		t.Fatalf("UsageFromBody: %+v %v, want %+v", u, err, want)
	}
	events, err := EventsFromBody(groundhog.ShapeMessages, body, true)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(events[0].Data, []byte("iterations")) {
		t.Errorf("message_start carries the iterations: %s", events[0].Data)
	}
	_, u, parts, err = UsagePartsFromEvents(groundhog.ShapeMessages, events)
	if err != nil || u != want || !reflect.DeepEqual(parts, wantParts) {
		t.Fatalf("stream: %+v %+v %v, want %+v %+v", u, parts, err, want, wantParts)
	}
	back, err := BodyFromEvents(groundhog.ShapeMessages, events)
	if err != nil {
		t.Fatal(err)
	}
	_, u, parts, err = UsagePartsFromValidBody(groundhog.ShapeMessages, back)
	if err != nil || u != want || !reflect.DeepEqual(parts, wantParts) {
		t.Fatalf("body from stream: %+v %+v %v, want %+v %+v", u, parts, err, want, wantParts)
	}

	// A usage without iterations has no parts.
	_, _, parts, err = UsagePartsFromValidBody(groundhog.ShapeMessages, []byte(`{"model":"m","usage":{"input_tokens":1,"output_tokens":1}}`))
	if err != nil || parts != nil {
		t.Fatalf("no iterations: parts %+v, %v", parts, err)
	}
	// Malformed iterations are malformed usage.
	if _, _, err := UsageFromBody(groundhog.ShapeMessages, []byte(`{"model":"m","usage":{"input_tokens":1,"iterations":[{"input_tokens":-1}]}}`)); err == nil {
		t.Fatal("a negative iteration count was accepted")
	}
}
