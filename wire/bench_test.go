package wire

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// Benchmarks of the per-stream work (reading, completeness, usage) and of
// the conversions, per testdata stream. Read the figures as ratios against
// BenchmarkReadStream of the same stream in the same run: the cost of just
// parsing the SSE bytes, which every streamed call pays anyway.

func benchStreams(b *testing.B) map[string][]byte {
	files, _ := filepath.Glob("testdata/*.sse")
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".sse")] = data
	}
	return out
}

func BenchmarkReadStream(b *testing.B) {
	for name, data := range benchStreams(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r := NewSSEReader(bytes.NewReader(data))
				for {
					if _, err := r.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

func BenchmarkWriteStream(b *testing.B) {
	for name, data := range benchStreams(b) {
		evs := loadStream(b, "testdata/"+name+".sse")
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			buf := make([]byte, 0, 2*len(data))
			for b.Loop() {
				buf = buf[:0]
				for _, e := range evs {
					buf = AppendEvent(buf, e)
				}
			}
		})
	}
}

// BenchmarkStreamEnd is what the gateway does once a stream has ended:
// decide whether to cache it and read its usage for the ledger.
func BenchmarkStreamEnd(b *testing.B) {
	for name, data := range benchStreams(b) {
		shape := shapeOf(b, name+".sse")
		evs := loadStream(b, "testdata/"+name+".sse")
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if !StreamComplete(shape, evs) {
					b.Fatal("not complete")
				}
				if _, _, err := UsageFromEvents(shape, evs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBodyFromEvents(b *testing.B) {
	for name, data := range benchStreams(b) {
		shape := shapeOf(b, name+".sse")
		evs := loadStream(b, "testdata/"+name+".sse")
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := BodyFromEvents(shape, evs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEventsFromBody(b *testing.B) {
	for name, data := range benchStreams(b) {
		shape := shapeOf(b, name+".sse")
		body, err := BodyFromEvents(shape, loadStream(b, "testdata/"+name+".sse"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var evs []groundhog.Event
			for b.Loop() {
				if evs, err = EventsFromBody(shape, body, true); err != nil {
					b.Fatal(err)
				}
			}
			_ = evs
		})
	}
}
