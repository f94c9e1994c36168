package bedrock_test

import (
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// BenchmarkRelayEvent: one ConverseStream text delta framed for the client
// (eventstream) against the same payload as an SSE event — the ratio of
// the two is the cost of Bedrock's framing on the relay's hot path.
func BenchmarkRelayEvent(b *testing.B) {
	ev := groundhog.Event{Name: bedrock.EventContentBlockDelta, Data: []byte(`{"contentBlockIndex":0,"delta":{"text":" hello"}}`)}
	buf := make([]byte, 0, 512)
	b.Run("eventstream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = bedrock.AppendEvent(buf[:0], ev)
		}
	})
	b.Run("sse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = wire.AppendEvent(buf[:0], ev)
		}
	})
}
