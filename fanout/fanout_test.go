package fanout

import (
	"context"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rig is a Group whose MaxHold timer fires only when the test says, and
// which reports every request that starts waiting.
type rig struct {
	g     *Group
	clk   *clock
	timer chan time.Time
	held  chan struct{}
	// due fires the pre-warm timers (any duration other than the default
	// MaxHold of 10 s); waits records the durations asked for.
	due   chan time.Time
	mu    sync.Mutex
	waits []time.Duration
}

func newRig() *rig {
	r := &rig{clk: &clock{t: time.Unix(1_800_000_000, 0)}, timer: make(chan time.Time), held: make(chan struct{}, 100), due: make(chan time.Time)}
	r.g = New(Config{Clock: r.clk, After: func(d time.Duration) <-chan time.Time {
		if d == 10*time.Second {
			return r.timer
		}
		r.mu.Lock()
		r.waits = append(r.waits, d)
		r.mu.Unlock()
		return r.due
	}, OnHold: func() { r.held <- struct{}{} }})
	return r
}

// enter runs Enter in a goroutine; the ticket arrives on the channel when
// Enter returns.
func (r *rig) enter(ctx context.Context, key string) <-chan *Ticket {
	ch := make(chan *Ticket, 1)
	go func() { ch <- r.g.Enter(ctx, key) }()
	return ch
}

func TestFirstWritesOthersWaitUntilItStarts(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	w := r.g.Enter(ctx, "p")
	if w.Held {
		t.Fatal("the first request over a new prefix was held")
	}
	var waiting []<-chan *Ticket
	for range 7 {
		waiting = append(waiting, r.enter(ctx, "p"))
		<-r.held
	}
	other := r.g.Enter(ctx, "q") // another prefix is not held
	if other.Held {
		t.Fatal("a request over another prefix was held")
	}
	for _, ch := range waiting {
		select {
		case <-ch:
			t.Fatal("released before the first request started answering")
		default:
		}
	}
	w.Started(true)
	for _, ch := range waiting {
		if tk := <-ch; !tk.Held {
			t.Fatal("a released request does not say it was held")
		}
	}
	w.Done() // after Started: no-op
	// Written: a later request over the prefix is not held.
	if tk := r.g.Enter(ctx, "p"); tk.Held || tk.f != nil {
		t.Fatalf("request after the prefix was written: held %v, writer %v", tk.Held, tk.f != nil)
	}
	// Past the warm period the prefix counts as new again.
	r.clk.Advance(6 * time.Minute)
	if tk := r.g.Enter(ctx, "p"); tk.f == nil {
		t.Fatal("after the warm period the next request is not the writer")
	}
}

func TestHoldEndsWithoutFailing(t *testing.T) {
	ctx := context.Background()
	t.Run("max hold", func(t *testing.T) {
		r := newRig()
		w := r.g.Enter(ctx, "p")
		ch := r.enter(ctx, "p")
		<-r.held
		r.timer <- time.Time{} // MaxHold passed
		if tk := <-ch; !tk.Held {
			t.Fatal("not marked held")
		}
		w.Done()
	})
	t.Run("writer failed", func(t *testing.T) {
		r := newRig()
		w := r.g.Enter(ctx, "p")
		ch := r.enter(ctx, "p")
		<-r.held
		w.Started(false) // an error head: nothing written
		<-ch
		if tk := r.g.Enter(ctx, "p"); tk.f == nil {
			t.Fatal("after a failed writer the next request should write")
		}
	})
	t.Run("writer gone", func(t *testing.T) {
		r := newRig()
		w := r.g.Enter(ctx, "p")
		ch := r.enter(ctx, "p")
		<-r.held
		w.Done() // never answered (transport error)
		<-ch
	})
	t.Run("client gone", func(t *testing.T) {
		r := newRig()
		w := r.g.Enter(ctx, "p")
		cctx, cancel := context.WithCancel(ctx)
		ch := r.enter(cctx, "p")
		<-r.held
		cancel()
		<-ch
		w.Done()
	})
}

func TestWarmKeysBounded(t *testing.T) {
	g := New(Config{MaxKeys: 2})
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		g.Enter(ctx, k).Started(true)
	}
	if len(g.warm) != 2 || len(g.order) != 2 {
		t.Fatalf("warm keys %d, order %d; want 2", len(g.warm), len(g.order))
	}
	if _, ok := g.warm["a"]; ok {
		t.Fatal("the oldest warm key was kept")
	}
}

// fakeShared answers Claim with a fixed claim and Wait when told.
type fakeShared struct {
	claim    Claim
	waiting  chan struct{} // a value when Wait starts
	answer   chan bool     // what Wait returns, unless ctx ends first
	released chan bool     // Release's ok
}

func (f *fakeShared) Claim(context.Context, string, time.Duration) Claim { return f.claim }
func (f *fakeShared) Wait(ctx context.Context, _ string) bool {
	f.waiting <- struct{}{}
	select {
	case ok := <-f.answer:
		return ok
	case <-ctx.Done():
		return false
	}
}
func (f *fakeShared) Release(_ string, _ Claim, ok bool, _ time.Duration) { f.released <- ok }

func TestSharedHolds(t *testing.T) {
	ctx := context.Background()
	shared := func(r *rig, c Claim) *fakeShared {
		f := &fakeShared{claim: c, waiting: make(chan struct{}, 1), answer: make(chan bool, 1), released: make(chan bool, 1)}
		r.g.cfg.Shared = f
		return f
	}
	t.Run("claimed: this process writes, and releases the others", func(t *testing.T) {
		r := newRig()
		f := shared(r, Claim{State: Claimed, Token: "t"})
		w := r.g.Enter(ctx, "p")
		if w.Held {
			t.Fatal("the claiming writer was held")
		}
		w.Started(true)
		if ok := <-f.released; !ok {
			t.Fatal("Release told the prefix was not written")
		}
	})
	t.Run("busy elsewhere: the writer and its followers wait for it", func(t *testing.T) {
		r := newRig()
		f := shared(r, Claim{State: Busy})
		ch := r.enter(ctx, "p")
		<-r.held
		<-f.waiting
		follower := r.enter(ctx, "p")
		<-r.held // held behind this process's writer
		f.answer <- true
		for _, c := range []<-chan *Ticket{ch, follower} {
			if tk := <-c; !tk.Held || tk.f != nil {
				t.Fatalf("released: held %v, writer %v; want held, not a writer", tk.Held, tk.f != nil)
			}
		}
		if tk := r.g.Enter(ctx, "p"); tk.Held || tk.f != nil {
			t.Fatal("the prefix written elsewhere is not warm here")
		}
	})
	t.Run("busy elsewhere past the hold", func(t *testing.T) {
		r := newRig()
		f := shared(r, Claim{State: Busy})
		ch := r.enter(ctx, "p")
		<-r.held
		<-f.waiting
		r.timer <- time.Time{} // MaxHold passed
		if tk := <-ch; !tk.Held {
			t.Fatal("not marked held")
		}
		f.claim = Claim{State: Claimed}
		if tk := r.g.Enter(ctx, "p"); tk.f == nil {
			t.Fatal("after an unanswered hold the next request should write")
		}
	})
	t.Run("warm elsewhere: nobody waits, for as long as it stays warm", func(t *testing.T) {
		r := newRig()
		shared(r, Claim{State: Warm, Warm: time.Minute})
		if tk := r.g.Enter(ctx, "p"); tk.Held || tk.f != nil {
			t.Fatal("held or writing a prefix known written")
		}
		r.clk.Advance(59 * time.Second)
		r.g.cfg.Shared = nil // known warm here: Shared is not asked
		if tk := r.g.Enter(ctx, "p"); tk.f != nil {
			t.Fatal("the prefix stopped being warm before its TTL")
		}
		r.clk.Advance(2 * time.Second)
		if tk := r.g.Enter(ctx, "p"); tk.f == nil {
			t.Fatal("the prefix stayed warm past the TTL Shared gave")
		}
	})
}
