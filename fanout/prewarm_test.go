package fanout

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// enterWith is rig.enter with Options.
func (r *rig) enterWith(ctx context.Context, key string, o Options) <-chan *Ticket {
	ch := make(chan *Ticket, 1)
	go func() { ch <- r.g.EnterWith(ctx, key, o) }()
	return ch
}

// A writer that does not stream answers only when done: the first request
// held behind it pre-warms the prefix, once, and its success releases
// every held request while the writer is still answering.
func TestSlowWriterPrewarmReleasesFollowers(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	w := r.g.EnterWith(ctx, "p", Options{Slow: true})
	r.clk.Advance(300 * time.Millisecond) // the writer has been upstream 300 ms when the first is held
	var sent atomic.Int32
	answer := make(chan bool)
	prewarm := func(context.Context) bool { sent.Add(1); return <-answer }
	var waiting []<-chan *Ticket
	for range 5 {
		waiting = append(waiting, r.enterWith(ctx, "p", Options{Prewarm: prewarm}))
		<-r.held
	}
	r.mu.Lock()
	waits := append([]time.Duration(nil), r.waits...)
	r.mu.Unlock()
	if len(waits) != 1 || waits[0] != 4700*time.Millisecond {
		t.Fatalf("pre-warm timers %v, want one of 4.7s (the default 5 s after the writer went)", waits)
	}
	if n := sent.Load(); n != 0 {
		t.Fatal("the pre-warm was sent before its time")
	}
	close(r.due)
	for _, ch := range waiting {
		select {
		case <-ch:
			t.Fatal("released before the pre-warm answered")
		default:
		}
	}
	answer <- true
	for i, ch := range waiting {
		select {
		case tk := <-ch:
			if !tk.Held {
				t.Fatalf("follower %d does not say it was held", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("follower %d still held after the pre-warm answered", i)
		}
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d pre-warms sent for one writer, want 1", n)
	}
	// The prefix counts as written: a later request is neither held nor
	// made a writer, and the writer's own end changes nothing.
	w.Started(true)
	w.Done()
	if tk := r.g.Enter(ctx, "p"); tk.Held || tk.f != nil {
		t.Fatalf("request after the pre-warm: held %v, writer %v", tk.Held, tk.f != nil)
	}
}

// A failed pre-warm changes nothing: the followers wait for the writer.
func TestFailedPrewarmWaitsForWriter(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	w := r.g.EnterWith(ctx, "p", Options{Slow: true})
	tried := make(chan struct{}, 1)
	ch := r.enterWith(ctx, "p", Options{Prewarm: func(context.Context) bool { tried <- struct{}{}; return false }})
	<-r.held
	close(r.due)
	<-tried
	select {
	case <-ch:
		t.Fatal("released by a failed pre-warm")
	case <-time.After(50 * time.Millisecond):
	}
	w.Started(true)
	if tk := <-ch; !tk.Held {
		t.Fatal("the follower does not say it was held")
	}
}

// A streaming writer starts answering at once: nobody pre-warms for it.
func TestStreamingWriterNoPrewarm(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	w := r.g.EnterWith(ctx, "p", Options{Slow: false})
	var sent atomic.Int32
	ch := r.enterWith(ctx, "p", Options{Prewarm: func(context.Context) bool { sent.Add(1); return true }})
	<-r.held
	close(r.due)
	w.Started(true)
	<-ch
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d pre-warms for a streaming writer, want 0", n)
	}
}
