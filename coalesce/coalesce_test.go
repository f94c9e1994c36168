package coalesce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"weak"

	"golang.org/x/sync/singleflight"

	"github.com/groundhog-ai/groundhog"
)

type fnType = func(ctx context.Context, pub *Publisher) (*groundhog.Response, error)

func events(n int) []groundhog.Event {
	evs := make([]groundhog.Event, n)
	for i := range evs {
		evs[i] = groundhog.Event{Name: "delta", Data: fmt.Appendf(nil, `{"i":%d}`, i)}
	}
	return evs
}

// drain reads s to its end and returns the events and the final error.
func drain(ctx context.Context, s *Subscription) ([]groundhog.Event, error) {
	var got []groundhog.Event
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return got, err
		}
		got = append(got, ev)
	}
}

func sameEvents(a, b []groundhog.Event) bool {
	return slices.EqualFunc(a, b, func(x, y groundhog.Event) bool {
		return x.Name == y.Name && string(x.Data) == string(y.Data)
	})
}

// TestDoCoalescesLateJoiners starts 200 concurrent Do calls for one key in
// batches: one batch before the first event, one after each event is
// published (fn is held between events), one after the last. fn must run
// once and every subscriber must receive the full sequence, late ones by
// replaying the log.
func TestDoCoalescesLateJoiners(t *testing.T) {
	const total, nEvents = 200, 5
	want := events(nEvents)
	gates := make([]chan struct{}, nEvents)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	published := make(chan int)
	finish := make(chan struct{})
	var calls atomic.Int32
	fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		calls.Add(1)
		pub.Head(200, "text/event-stream", true)
		for i, ev := range want {
			<-gates[i]
			pub.Event(ev)
			published <- i
		}
		<-finish
		return &groundhog.Response{Status: 200, ContentType: "text/event-stream", Streamed: true, Events: pub.Events()}, nil
	}

	var g Group
	ctx := context.Background()
	type result struct {
		leader bool
		events []groundhog.Event
		err    error
		resp   *groundhog.Response
		werr   error
	}
	results := make(chan result, total)
	batches := nEvents + 1
	started := 0
	for b := range batches {
		n := total / batches
		if b == batches-1 {
			n = total - started
		}
		started += n
		var joined sync.WaitGroup
		joined.Add(n)
		for range n {
			go func() {
				sub, leader := g.Do(ctx, "k", fn)
				defer sub.Close()
				joined.Done()
				evs, err := drain(ctx, sub)
				resp, werr := sub.Wait(ctx)
				results <- result{leader, evs, err, resp, werr}
			}()
		}
		joined.Wait()
		if b < nEvents {
			close(gates[b])
			if got := <-published; got != b {
				t.Fatalf("published event %d, want %d", got, b)
			}
		}
	}
	if got := g.Followers("k"); got != total-1 {
		t.Errorf("Followers = %d, want %d", got, total-1)
	}
	if !g.InFlight("k") {
		t.Errorf("InFlight = false while fn runs")
	}
	close(finish)

	leaders := 0
	for range total {
		r := <-results
		if r.leader {
			leaders++
		}
		if r.err != io.EOF {
			t.Fatalf("Next ended with %v, want io.EOF", r.err)
		}
		if !sameEvents(r.events, want) {
			t.Fatalf("subscriber got %d events %q, want %d", len(r.events), r.events, len(want))
		}
		if r.werr != nil || r.resp == nil || !sameEvents(r.resp.Events, want) {
			t.Fatalf("Wait = %v, %v; want the response with every event", r.resp, r.werr)
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders, want 1", leaders)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("fn ran %d times, want 1", n)
	}
	if g.InFlight("k") {
		t.Errorf("InFlight = true after fn returned")
	}
}

type ctxKey struct{}

// TestLeaderGoneFollowerWaits: the leader's client cancels and closes; fn
// keeps running (its ctx is not cancelled, yet carries the leader's values)
// and the follower gets the result.
func TestLeaderGoneFollowerWaits(t *testing.T) {
	var g Group
	leaderCtx, cancelLeader := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "leader-value"))
	running, release := make(chan struct{}), make(chan struct{})
	type seen struct {
		err   error
		value any
	}
	fnSaw := make(chan seen, 1)
	fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		close(running)
		<-release
		fnSaw <- seen{ctx.Err(), ctx.Value(ctxKey{})}
		return &groundhog.Response{Status: 200, Body: []byte("answer")}, nil
	}
	lsub, leader := g.Do(leaderCtx, "k", fn)
	if !leader {
		t.Fatal("first Do is not the leader")
	}
	<-running
	fsub, leader := g.Do(context.Background(), "k", fn)
	if leader {
		t.Fatal("second Do is a leader")
	}
	defer fsub.Close()

	cancelLeader()
	if _, err := lsub.Wait(leaderCtx); !errors.Is(err, context.Canceled) {
		t.Fatalf("leader Wait with its ctx cancelled = %v", err)
	}
	lsub.Close()
	close(release)

	resp, err := fsub.Wait(context.Background())
	if err != nil || string(resp.Body) != "answer" {
		t.Fatalf("follower Wait = %v, %v; want the answer", resp, err)
	}
	s := <-fnSaw
	if s.err != nil {
		t.Errorf("fn's ctx was cancelled (%v) while a follower waited", s.err)
	}
	if s.value != "leader-value" {
		t.Errorf("fn's ctx value = %v, want the leader ctx's", s.value)
	}
}

// TestAllClosedCancelsFn: once every subscription has closed, fn's ctx is
// cancelled and the key is free for a new flight.
func TestAllClosedCancelsFn(t *testing.T) {
	var g Group
	running := make(chan struct{})
	cancelled := make(chan error, 1)
	fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		close(running)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}
	lsub, _ := g.Do(context.Background(), "k", fn)
	fsub, _ := g.Do(context.Background(), "k", fn)
	<-running
	lsub.Close()
	select {
	case err := <-cancelled:
		t.Fatalf("fn cancelled (%v) while a follower was still subscribed", err)
	default:
	}
	if !g.InFlight("k") {
		t.Fatal("flight left the key while a follower was subscribed")
	}
	fsub.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("fn's ctx ended with %v, want context.Canceled", err)
	}
	if g.InFlight("k") {
		t.Fatal("abandoned flight still holds the key")
	}
	sub, leader := g.Do(context.Background(), "k", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		return &groundhog.Response{Status: 200}, ctx.Err()
	})
	defer sub.Close()
	if !leader {
		t.Fatal("Do after abandonment joined the abandoned flight")
	}
	if _, err := sub.Wait(context.Background()); err != nil {
		t.Fatalf("new flight: %v", err)
	}
}

var errUpstream = groundhog.Errorf(groundhog.EUPSTREAM, "provider returned 503")

type boom struct{}

func (boom) Error() string { return "boom error" }

// TestFnFailures: an error, a panic or runtime.Goexit in fn, after the head
// and two events, reaches every subscriber through Head, Next and Wait;
// nothing hangs and nothing crashes.
func TestFnFailures(t *testing.T) {
	tests := []struct {
		name    string
		head    bool
		fail    func() (*groundhog.Response, error)
		check   func(t *testing.T, err error)
		errHead bool // Head reports the error (no head was published)
	}{
		{
			name: "error", head: true,
			fail: func() (*groundhog.Response, error) { return nil, errUpstream },
			check: func(t *testing.T, err error) {
				if !errors.Is(err, errUpstream) {
					t.Errorf("err = %v, want fn's error", err)
				}
			},
		},
		{
			name: "error before head", errHead: true,
			fail: func() (*groundhog.Response, error) {
				return &groundhog.Response{Status: 200}, errUpstream // the response is dropped
			},
			check: func(t *testing.T, err error) {
				if !errors.Is(err, errUpstream) {
					t.Errorf("err = %v, want fn's error", err)
				}
			},
		},
		{
			name: "panic value", head: true,
			fail:  func() (*groundhog.Response, error) { panic("secret panic detail") },
			check: checkInternal("secret panic detail", nil),
		},
		{
			name: "panic error before head", errHead: true,
			fail:  func() (*groundhog.Response, error) { panic(boom{}) },
			check: checkInternal("boom error", boom{}),
		},
		{
			name: "Goexit", head: true,
			fail: func() (*groundhog.Response, error) {
				runtime.Goexit()
				return nil, nil
			},
			check: checkInternal("", nil),
		},
		{
			name: "neither response nor error", head: true,
			fail:  func() (*groundhog.Response, error) { return nil, nil },
			check: checkInternal("", nil),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g Group
			ctx := context.Background()
			proceed := make(chan struct{})
			var want []groundhog.Event
			if tt.head {
				want = events(2)
			}
			fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
				<-proceed
				if tt.head {
					pub.Head(200, "text/event-stream", true)
					for _, ev := range want {
						pub.Event(ev)
					}
				}
				return tt.fail()
			}
			subs := make([]*Subscription, 3)
			for i := range subs {
				subs[i], _ = g.Do(ctx, "k", fn)
				defer subs[i].Close()
			}
			close(proceed)
			for i, s := range subs {
				_, _, _, herr := s.Head(ctx)
				if tt.errHead {
					tt.check(t, herr)
				} else if herr != nil {
					t.Errorf("sub %d: Head = %v after a head was published", i, herr)
				}
				got, err := drain(ctx, s)
				if !sameEvents(got, want) {
					t.Errorf("sub %d: events before the failure = %q, want %q", i, got, want)
				}
				tt.check(t, err)
				resp, err := s.Wait(ctx)
				if resp != nil {
					t.Errorf("sub %d: Wait returned a response with an error", i)
				}
				tt.check(t, err)
			}
			if g.InFlight("k") {
				t.Error("failed flight still holds the key")
			}
		})
	}
}

// checkInternal returns a check that err is the client-safe EINTERNAL error
// of a crashed fn: its message does not contain detail, its chain does (and
// reaches target when not nil).
func checkInternal(detail string, target error) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if groundhog.ErrorCode(err) != groundhog.EINTERNAL {
			t.Fatalf("err = %v, want code EINTERNAL", err)
		}
		if msg := groundhog.ErrorMessage(err); msg != "internal error" {
			t.Errorf("client message = %q, want %q", msg, "internal error")
		}
		if detail != "" {
			var pe *PanicError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), detail) || len(pe.Stack) == 0 {
				t.Errorf("err = %v, want a PanicError with %q and a stack", err, detail)
			}
		}
		if target != nil && !errors.Is(err, target) {
			t.Errorf("err = %v does not wrap the panic's error %v", err, target)
		}
	}
}

func TestDoAgainAfterCompletion(t *testing.T) {
	var g Group
	var calls atomic.Int32
	fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		n := calls.Add(1)
		return &groundhog.Response{Status: 200, Body: fmt.Appendf(nil, "%d", n)}, nil
	}
	for i := 1; i <= 3; i++ {
		sub, leader := g.Do(context.Background(), "k", fn)
		resp, err := sub.Wait(context.Background())
		sub.Close()
		if !leader || err != nil || string(resp.Body) != fmt.Sprint(i) {
			t.Fatalf("Do #%d: leader=%v resp=%v err=%v; want a new flight", i, leader, resp, err)
		}
	}
}

func TestKeysIndependent(t *testing.T) {
	var g Group
	ctx := context.Background()
	release := make(chan struct{})
	slow, leaderA := g.Do(ctx, "a", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		<-release
		return &groundhog.Response{Status: 200, Body: []byte("a")}, nil
	})
	defer slow.Close()
	fast, leaderB := g.Do(ctx, "b", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		return &groundhog.Response{Status: 200, Body: []byte("b")}, nil
	})
	defer fast.Close()
	if !leaderA || !leaderB {
		t.Fatalf("leaders: a=%v b=%v, want both", leaderA, leaderB)
	}
	if resp, err := fast.Wait(ctx); err != nil || string(resp.Body) != "b" {
		t.Fatalf("b = %v, %v while a is blocked", resp, err)
	}
	if !g.InFlight("a") || g.InFlight("b") {
		t.Fatalf("InFlight a=%v b=%v, want true false", g.InFlight("a"), g.InFlight("b"))
	}
	close(release)
	if resp, err := slow.Wait(ctx); err != nil || string(resp.Body) != "a" {
		t.Fatalf("a = %v, %v", resp, err)
	}
}

// TestNextContext: a Next whose ctx ends returns ctx.Err() and the next
// call resumes at the same position.
func TestNextContext(t *testing.T) {
	var g Group
	want := events(2)
	step := make(chan struct{})
	sub, _ := g.Do(context.Background(), "k", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		pub.Head(200, "text/event-stream", true)
		pub.Event(want[0])
		<-step
		pub.Event(want[1])
		return &groundhog.Response{Status: 200, Streamed: true, Events: pub.Events()}, nil
	})
	defer sub.Close()
	ctx := context.Background()
	if ev, err := sub.Next(ctx); err != nil || !sameEvents([]groundhog.Event{ev}, want[:1]) {
		t.Fatalf("first Next = %v, %v", ev, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sub.Next(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with ended ctx = %v, want context.Canceled", err)
	}
	if _, err := sub.Wait(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with ended ctx = %v, want context.Canceled", err)
	}
	close(step)
	rest, err := drain(ctx, sub)
	if err != io.EOF || !sameEvents(rest, want[1:]) {
		t.Fatalf("after the cancelled Next: %q, %v; want the second event then EOF", rest, err)
	}
}

// TestHeadWaitsAndDerives: Head waits for a published head; without one it
// is the final Response's, and Next ends at once.
func TestHeadWaitsAndDerives(t *testing.T) {
	ctx := context.Background()
	t.Run("published", func(t *testing.T) {
		var g Group
		release := make(chan struct{})
		sub, _ := g.Do(ctx, "k", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
			pub.Head(201, "text/event-stream", true)
			pub.Head(500, "text/plain", false) // ignored
			<-release
			return &groundhog.Response{Status: 201, Streamed: true}, nil
		})
		defer sub.Close()
		defer close(release)
		status, ct, streamed, err := sub.Head(ctx) // fn is still blocked
		if err != nil || status != 201 || ct != "text/event-stream" || !streamed {
			t.Fatalf("Head = %d %q %v %v", status, ct, streamed, err)
		}
	})
	t.Run("from response", func(t *testing.T) {
		var g Group
		sub, _ := g.Do(ctx, "k", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
			return &groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte("{}")}, nil
		})
		defer sub.Close()
		status, ct, streamed, err := sub.Head(ctx)
		if err != nil || status != 200 || ct != "application/json" || streamed {
			t.Fatalf("Head = %d %q %v %v", status, ct, streamed, err)
		}
		if _, err := sub.Next(ctx); err != io.EOF {
			t.Fatalf("Next on a non-streamed response = %v, want io.EOF", err)
		}
	})
}

// TestPublisherMisuse: Event before Head fails the flight; a Publisher used
// after fn returned changes nothing.
func TestPublisherMisuse(t *testing.T) {
	ctx := context.Background()
	var g Group
	sub, _ := g.Do(ctx, "early", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		pub.Event(groundhog.Event{Data: []byte("x")})
		return &groundhog.Response{Status: 200}, nil
	})
	if _, err := sub.Wait(ctx); groundhog.ErrorCode(err) != groundhog.EINTERNAL {
		t.Fatalf("Event before Head: %v, want EINTERNAL", err)
	}
	sub.Close()

	leaked := make(chan *Publisher, 1)
	sub, _ = g.Do(ctx, "late", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		pub.Head(200, "text/event-stream", true)
		pub.Event(groundhog.Event{Data: []byte("only")})
		leaked <- pub
		return &groundhog.Response{Status: 200, Streamed: true, Events: pub.Events()}, nil
	})
	defer sub.Close()
	resp, err := sub.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pub := <-leaked
	pub.Event(groundhog.Event{Data: []byte("after")})
	pub.Head(500, "", false)
	got, err := drain(ctx, sub)
	if err != io.EOF || len(got) != 1 || len(resp.Events) != 1 {
		t.Fatalf("after a late publish: %q, %v, response events %d; want one event", got, err, len(resp.Events))
	}
	if status, _, _, _ := sub.Head(ctx); status != 200 {
		t.Fatalf("late Head changed the status to %d", status)
	}
}

func TestCloseIdempotent(t *testing.T) {
	var g Group
	ctx := context.Background()
	release := make(chan struct{})
	fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		<-release
		return &groundhog.Response{Status: 200}, ctx.Err()
	}
	sub, _ := g.Do(ctx, "k", fn)
	other, _ := g.Do(ctx, "k", fn)
	defer other.Close()
	sub.Close()
	sub.Close() // must not count as another subscription leaving
	close(release)
	if _, err := other.Wait(ctx); err != nil {
		t.Fatalf("a double Close cancelled the remaining subscriber's flight: %v", err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("Next after Close = %v", err)
	}
	if _, err := sub.Wait(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("Wait after Close = %v", err)
	}
	if _, _, _, err := sub.Head(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("Head after Close = %v", err)
	}
}

func TestTracker(t *testing.T) {
	var tr Tracker[string]
	steps := []struct {
		op          string // "enter" or "leave <i>"
		key         string
		wantFlight  bool
		wantActiveA int
	}{
		{op: "enter", key: "a", wantFlight: false, wantActiveA: 1},
		{op: "enter", key: "a", wantFlight: true, wantActiveA: 2},
		{op: "enter", key: "b", wantFlight: false, wantActiveA: 2},
		{op: "leave 0", wantActiveA: 1},
		{op: "leave 0", wantActiveA: 1}, // a second leave does nothing
		{op: "enter", key: "a", wantFlight: true, wantActiveA: 2},
		{op: "leave 1", wantActiveA: 1},
		{op: "leave 3", wantActiveA: 0},
		{op: "enter", key: "a", wantFlight: false, wantActiveA: 1},
	}
	var leaves []func()
	for i, st := range steps {
		if st.op == "enter" {
			was, leave := tr.Enter(st.key)
			leaves = append(leaves, leave)
			if was != st.wantFlight {
				t.Fatalf("step %d: Enter(%s) = %v, want %v", i, st.key, was, st.wantFlight)
			}
		} else {
			var j int
			fmt.Sscanf(st.op, "leave %d", &j)
			leaves[j]()
		}
		if got := tr.Active("a"); got != st.wantActiveA {
			t.Fatalf("step %d: Active(a) = %d, want %d", i, got, st.wantActiveA)
		}
	}
}

// TestTrackerConcurrent: n calls that overlap in time; exactly one of them
// found nothing in flight.
func TestTrackerConcurrent(t *testing.T) {
	var tr Tracker[string]
	const n = 100
	var entered, wg sync.WaitGroup
	entered.Add(n)
	allIn := make(chan struct{})
	var inFlight atomic.Int32
	for range n {
		wg.Go(func() {
			was, leave := tr.Enter("k")
			if was {
				inFlight.Add(1)
			}
			entered.Done()
			<-allIn
			leave()
		})
	}
	entered.Wait()
	if got := tr.Active("k"); got != n {
		t.Fatalf("Active = %d, want %d", got, n)
	}
	close(allIn)
	wg.Wait()
	if got := inFlight.Load(); got != n-1 {
		t.Fatalf("%d calls saw one in flight, want %d", got, n-1)
	}
	if was, leave := tr.Enter("k"); was {
		t.Fatal("Enter after every call left reports one in flight")
	} else {
		leave()
	}
}

// BenchmarkDoUncontended is one uncached call with nobody to share it:
// Do, Wait, Close. The baseline is singleflight.DoChan, which also runs fn
// on a new goroutine, measured in the same run.
func BenchmarkDoUncontended(b *testing.B) {
	resp := &groundhog.Response{Status: 200, Body: []byte("{}")}
	ctx := context.Background()
	b.Run("coalesce", func(b *testing.B) {
		var g Group
		fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) { return resp, nil }
		b.ReportAllocs()
		for b.Loop() {
			sub, _ := g.Do(ctx, "sha256:key", fn)
			if _, err := sub.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			sub.Close()
		}
	})
	b.Run("baseline=singleflight.DoChan", func(b *testing.B) {
		var g singleflight.Group
		fn := func() (any, error) { return resp, nil }
		b.ReportAllocs()
		for b.Loop() {
			if r := <-g.DoChan("sha256:key", fn); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	})
}

// TestFlightReleased: once fn has returned and every subscription is closed,
// nothing keeps the flight and its log alive: not the Group, not fn's
// goroutine, not the closed subscriptions themselves (still referenced).
func TestFlightReleased(t *testing.T) {
	var g Group
	ctx := context.Background()
	subs := make([]*Subscription, 3)
	release := make(chan struct{})
	for i := range subs {
		subs[i], _ = g.Do(ctx, "k", func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
			pub.Head(200, "text/event-stream", true)
			pub.Event(groundhog.Event{Data: make([]byte, 1<<20)})
			<-release
			return &groundhog.Response{Status: 200, Streamed: true, Events: pub.Events()}, nil
		})
	}
	wf := weak.Make(subs[0].f)
	close(release)
	for _, s := range subs {
		if _, err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	// fn's goroutine may still be unwinding after Wait returned; give it a
	// bounded number of chances to exit.
	for i := 0; wf.Value() != nil; i++ {
		if i == 1000 {
			t.Fatal("flight still reachable after it ended and every subscription closed")
		}
		runtime.Gosched()
		runtime.GC()
	}
	runtime.KeepAlive(subs)
}

// TestDetachKeepsFlightRunning: a leader that is the only subscriber and
// detaches (its client left) does not cancel fn; the flight stays joinable,
// a follower that joins and closes does not cancel it either, and fn's
// result reaches a later subscriber.
func TestDetachKeepsFlightRunning(t *testing.T) {
	var g Group
	running := make(chan struct{})
	release := make(chan struct{})
	fn := func(ctx context.Context, pub *Publisher) (*groundhog.Response, error) {
		close(running)
		select {
		case <-release:
			return &groundhog.Response{Status: 200, Body: []byte("done")}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	lsub, leader := g.Do(context.Background(), "k", fn)
	if !leader {
		t.Fatal("first Do is not the leader")
	}
	<-running
	lsub.Detach()
	lsub.Close() // mixing is harmless
	if !g.InFlight("k") {
		t.Fatal("a detached flight left its key")
	}
	fsub, leader := g.Do(context.Background(), "k", fn)
	if leader {
		t.Fatal("Do while a detached flight runs started a new one")
	}
	fsub.Close() // the last subscriber leaves: still no cancellation
	last, leader := g.Do(context.Background(), "k", fn)
	defer last.Close()
	if leader {
		t.Fatal("the detached flight was cancelled by a follower's Close")
	}
	close(release)
	resp, err := last.Wait(context.Background())
	if err != nil || string(resp.Body) != "done" {
		t.Fatalf("result %v %v", resp, err)
	}
}
