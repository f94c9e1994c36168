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

// BenchmarkFingerprintBody: a Converse body of a few turns as the
// fingerprint reads it (member types checked, cachePoints dropped).
func BenchmarkFingerprintBody(b *testing.B) {
	body := []byte(`{"system":[{"text":"You are a support agent for a bicycle shop. Answer briefly."},{"cachePoint":{"type":"default"}}],` +
		`"messages":[{"role":"user","content":[{"text":"My chain keeps slipping when I climb. What should I check first?"}]},` +
		`{"role":"assistant","content":[{"text":"Check chain wear with a gauge, then the cassette teeth, then the derailleur hanger alignment."}]},` +
		`{"role":"user","content":[{"text":"The chain is new. Could it be the cassette?"},{"cachePoint":{"type":"default"}}]}],` +
		`"inferenceConfig":{"maxTokens":512,"temperature":0.2,"topP":0.9,"stopSequences":["\n\nUser:"]}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bedrock.FingerprintBody("us.anthropic.claude-sonnet-4-5-v1:0", body); err != nil {
			b.Fatal(err)
		}
	}
}
