package wire

import (
	"fmt"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// Anthropic answers a programmatic tool call whole in message_start (its
// content and stop_reason "tool_use" there) followed by message_stop, with
// no content blocks and no message_delta: a complete stream.
func TestStreamCompleteMessageAnsweredInStart(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"rollDie","input":{"player":"p2"}}],"stop_reason":%s,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`
	for _, tt := range []struct {
		stop string
		want bool
	}{{`"tool_use"`, true}, {`null`, false}} {
		events := []groundhog.Event{
			{Name: "message_start", Data: []byte(fmt.Sprintf(start, tt.stop))},
			{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
		}
		if got := StreamComplete(groundhog.ShapeMessages, events); got != tt.want {
			t.Errorf("stop_reason %s in message_start: complete %v, want %v", tt.stop, got, tt.want)
		}
	}
}
