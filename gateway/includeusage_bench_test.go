package gateway

import (
	"bytes"
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
			setIncludeUsage(body, false)
		}
	})
	// What the miss path runs when the fingerprint saw no stream_options.
	b.Run("setIncludeUsage,noKey", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			setIncludeUsage(body, true)
		}
	})
}

// BenchmarkContainsUnderscored: the admission's test for "include_usage"
// in a 200 KB chat stream request, against bytes.Contains.
func BenchmarkContainsUnderscored(b *testing.B) {
	body := benchbody.Chat(200<<10, benchbody.Options{Stream: true})
	b.Run("bytes.Contains", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			_ = bytes.Contains(body, []byte("include_usage"))
		}
	})
	b.Run("containsUnderscored", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			_ = containsUnderscored(body, "include_usage")
		}
	})
}

// BenchmarkMayHoldName: the test that gates the ownership check of a chat
// call's references (owned.go), over a 200 KB chat request that names no
// file or container, as a gateway with keys and a shared provider account
// runs it on every call, hit or miss.
func BenchmarkMayHoldName(b *testing.B) {
	body := benchbody.Chat(200<<10, benchbody.Options{Stream: true})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if mayHoldName(body, "file_id", `"container"`) {
			b.Fatal("the benchmark body names a file or container")
		}
	}
}
