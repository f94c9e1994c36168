package gateway

import (
	"testing"

	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// BenchmarkIncludeUsage: a 200 KB chat stream request without
// stream_options, as `groundhog bench --stream` sends it: withIncludeUsage
// (decode into a map, encode again) against setIncludeUsage.
func BenchmarkIncludeUsage(b *testing.B) {
	body := benchbody.Chat(200<<10, benchbody.Options{Stream: true})
	b.Run("withIncludeUsage", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			withIncludeUsage(body)
		}
	})
	b.Run("setIncludeUsage", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			setIncludeUsage(body)
		}
	})
}
