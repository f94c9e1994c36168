package promptcache

import (
	"context"
	"fmt"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// runStage is one call through the stage as the gateway makes it: Before,
// Started, After with 1000 input tokens (the expected cached ones read back
// as cached), Done.
func runStage(ctx context.Context, st *Stage, req *Request) {
	p := st.Before(ctx, req, true)
	p.Started(true)
	u := groundhog.Usage{InputTokens: 1000}
	if p.call != nil {
		u.CachedInputTokens = int64(p.call.Diagnosis.Expected)
	}
	st.After(ctx, p, u)
	p.Done()
}

// BenchmarkStageWarm is the miss path's prompt-cache stage alone (Before,
// Started, After, Done as the gateway calls them) on the gateway bench's
// bodies, the conversation already known: for profiles of the stage.
func BenchmarkStageWarm(b *testing.B) {
	for _, c := range []struct {
		name  string
		size  int
		shape groundhog.Shape
	}{
		{"chat1KB", 1 << 10, groundhog.ShapeChat}, {"chat200KB", 200 << 10, groundhog.ShapeChat},
		{"messages1KB", 1 << 10, groundhog.ShapeMessages}, {"messages200KB", 200 << 10, groundhog.ShapeMessages},
	} {
		b.Run(c.name, func(b *testing.B) {
			gen := benchbody.Chat
			if c.shape == groundhog.ShapeMessages {
				gen = benchbody.Anthropic
			}
			body := gen(c.size, benchbody.Options{Model: "sim-small"})
			ctx := context.Background()
			req := &Request{Tenant: "t", Operation: "bench", Shape: c.shape, Body: body}
			st := &Stage{Tracker: NewTracker(Config{})}
			stage := func() { runStage(ctx, st, req) }
			stage()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				stage()
			}
		})
	}
}

// BenchmarkStageWalk is the stage on the bench's bodies with and without
// the quote bitmap (stagewalk), alternating in one run.
func BenchmarkStageWalk(b *testing.B) {
	for _, size := range []int{1 << 10, 8 << 10, 200 << 10} {
		for _, off := range []bool{true, false} {
			name := fmt.Sprintf("chat%dKB/bitmap=%v", size>>10, !off)
			b.Run(name, func(b *testing.B) {
				noQuoteIndex = off
				defer func() { noQuoteIndex = false }()
				body := benchbody.Chat(size, benchbody.Options{Model: "sim-small"})
				ctx := context.Background()
				req := &Request{Tenant: "t", Operation: "bench", Shape: groundhog.ShapeChat, Body: body}
				st := &Stage{Tracker: NewTracker(Config{})}
				stage := func() { runStage(ctx, st, req) }
				stage()
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					stage()
				}
			})
		}
	}
}
