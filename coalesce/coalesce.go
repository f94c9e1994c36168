// Package coalesce runs identical in-flight calls once: the first caller of a
// key leads a flight, callers that arrive while it runs follow it, and every
// one of them receives the leader's output, including a stream as it is
// produced (a follower does not wait for the end).
//
// It is the in-process half of the gateway's coalescing stage; across
// replicas the shared operation records do the same job. Tracker, which
// answers "was an identical call in flight?" for the ledger, is here too.
//
// # Waking subscribers
//
// A flight keeps its events in one append-only log that every subscription
// reads by index. Subscribers that have caught up wait on a broadcast
// channel that the publisher closes (and the next waiter replaces) on each
// publish. A channel rather than a sync.Cond because a wait must end with
// the subscriber's ctx, and select can wait on both; no goroutine per event
// or per subscriber is needed. The channel is created only when someone
// waits, so a flight nobody is waiting on publishes without allocating.
package coalesce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/workers"
)

// Group coalesces calls with the same key. The zero value is ready to use; a
// Group must not be copied after first use.
type Group struct {
	mu sync.Mutex
	m  map[string]*flight // lazily initialized
}

// flight is one run of fn for a key.
type flight struct {
	g      *Group
	key    string
	cancel context.CancelFunc // cancels fn's ctx

	mu        sync.Mutex
	wake      chan struct{} // closed on the next publish; nil when nobody waits
	headSet   bool
	status    int
	ctype     string
	streamed  bool
	events    []groundhog.Event // append-only; shared with subscriptions and maybe the Response
	done      bool
	resp      *groundhog.Response
	err       error
	subs      int          // open subscriptions
	followers int          // subscriptions that joined beyond the leader
	kept      bool         // a subscription detached: fn runs to completion, never cancelled
	up        upstreamSpan // the upstream wait fn reported (upstream.go)
}

// Do joins the in-flight call for key, or starts fn as a new one. It returns
// a Subscription to the call's output and whether this caller started it
// (leader). The caller must Close the subscription when done with it.
//
// fn runs in a goroutine of its own (a pooled one: internal/workers) with a
// context that carries ctx's values but not its cancellation
// (context.WithoutCancel), and that is cancelled only when every
// subscription has been closed before fn returned: a leader whose clients
// all went away keeps running while any follower still waits. Such an
// abandoned flight also leaves key at once, so a later Do starts afresh
// instead of joining a call that is being cancelled.
//
// fn publishes the head (status, content type, whether it streams) and then
// events as they arrive through pub, and returns the final Response or an
// error; the Response may reference pub.Events(). A panic or runtime.Goexit
// in fn is turned into an error with code EINTERNAL (its client message
// omits the panic value; Err carries the value and stack) delivered to every
// subscriber, so nothing hangs and the process does not crash. fn returning
// neither a Response nor an error is reported the same way.
//
// Once fn returns, the key is free: a later Do starts a new flight. Callers
// should therefore write the cache inside fn, before it returns, and check
// the cache again at fn's start (the previous flight may have just written
// it), as groupcache's load does.
func (g *Group) Do(ctx context.Context, key string, fn func(ctx context.Context, pub *Publisher) (*groundhog.Response, error)) (sub *Subscription, leader bool) {
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*flight)
	}
	if f, ok := g.m[key]; ok {
		f.mu.Lock()
		// A flight in the map is neither done nor abandoned: both remove it
		// under g.mu.
		f.subs++
		f.followers++
		f.mu.Unlock()
		g.mu.Unlock()
		return &Subscription{f: f}, false
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &flight{g: g, key: key, cancel: cancel, subs: 1}
	g.m[key] = f
	g.mu.Unlock()

	// On a worker goroutine (internal/workers): fn goes deep (the
	// prompt-cache stage's parse, the HTTP client, the stream's reading),
	// and a worker's stack has grown for an earlier flight already.
	workers.Go(func() { f.run(fctx, fn) })
	return &Subscription{f: f}, true
}

// InFlight reports whether key has a flight now.
func (g *Group) InFlight(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.m[key]
	return ok
}

// Followers returns how many subscriptions have joined key's current flight
// beyond the leader so far (for metrics), or 0 when key has no flight.
func (g *Group) Followers(key string) int {
	g.mu.Lock()
	f, ok := g.m[key]
	g.mu.Unlock()
	if !ok {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.followers
}

// errGoexit is the detail of the error reported when fn called
// runtime.Goexit.
var errGoexit = errors.New("coalesce: fn called runtime.Goexit")

// PanicError is the detail (the Err of the EINTERNAL *groundhog.Error) of a
// panic in fn: the value and the stack of the panicking goroutine. It is for
// logs, never for clients.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("coalesce: fn panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value if it is an error.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// run calls fn and delivers its outcome. As in x/sync/singleflight, two
// defers tell a panic (recovered by the inner one) from runtime.Goexit
// (which runs the outer defer without fn returning or a panic being
// recovered).
func (f *flight) run(ctx context.Context, fn func(ctx context.Context, pub *Publisher) (*groundhog.Response, error)) {
	var (
		resp     *groundhog.Response
		err      error
		returned bool
	)
	defer func() {
		if !returned && err == nil {
			err = groundhog.WrapError(groundhog.EINTERNAL, "internal error", errGoexit)
		}
		f.finish(resp, err)
	}()
	func() {
		defer func() {
			if !returned {
				if r := recover(); r != nil {
					stack := debug.Stack()
					// The first line names the goroutine's state at this
					// point, which is misleading; drop it as singleflight
					// does.
					if i := bytes.IndexByte(stack, '\n'); i >= 0 {
						stack = stack[i+1:]
					}
					err = groundhog.WrapError(groundhog.EINTERNAL, "internal error", &PanicError{Value: r, Stack: stack})
				}
			}
		}()
		resp, err = fn(ctx, &Publisher{f: f})
		returned = true
	}()
	if returned && resp == nil && err == nil {
		err = groundhog.WrapError(groundhog.EINTERNAL, "internal error", errors.New("coalesce: fn returned neither a response nor an error"))
	}
	if err != nil {
		resp = nil
	}
}

// finish records fn's outcome, frees the key and wakes every subscriber.
func (f *flight) finish(resp *groundhog.Response, err error) {
	f.g.mu.Lock()
	if f.g.m[f.key] == f {
		delete(f.g.m, f.key)
	}
	f.mu.Lock()
	f.g.mu.Unlock()
	f.done = true
	f.resp, f.err = resp, err
	f.broadcast()
	f.mu.Unlock()
	f.cancel() // fn has returned; release its context's resources
}

// broadcast wakes every waiting subscriber. f.mu must be held.
func (f *flight) broadcast() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// waitChan returns the channel the next publish closes. f.mu must be held.
func (f *flight) waitChan() <-chan struct{} {
	if f.wake == nil {
		f.wake = make(chan struct{})
	}
	return f.wake
}

// Publisher is fn's side of a flight. Its methods must be called from fn's
// goroutine (or in an order fn guarantees) and only while fn runs: calls
// after fn has returned are ignored, since the log may then be referenced
// by the final Response.
type Publisher struct {
	f   *flight
	tap Tap // a copy of the output (tap.go); nil when none
}

// Head publishes the response head: status, content type and whether the
// body streams as events. Call it once, before any Event; a later call is
// ignored. If fn never calls it, subscribers get the head from the final
// Response.
func (p *Publisher) Head(status int, contentType string, streamed bool) {
	f := p.f
	f.mu.Lock()
	if f.done || f.headSet {
		f.mu.Unlock()
		return
	}
	f.headSet, f.status, f.ctype, f.streamed = true, status, contentType, streamed
	f.broadcast()
	f.mu.Unlock()
	if p.tap != nil {
		p.tap.Head(status, contentType, streamed)
	}
}

// Event appends ev to the flight's log and wakes the subscribers. The log
// shares ev.Data: the caller must not modify it afterwards. Event panics if
// Head has not been called (the panic becomes the flight's EINTERNAL error).
func (p *Publisher) Event(ev groundhog.Event) {
	f := p.f
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return
	}
	if !f.headSet {
		f.mu.Unlock()
		panic("coalesce: Publisher.Event before Head")
	}
	f.events = append(f.events, ev)
	f.broadcast()
	f.mu.Unlock()
	if p.tap != nil {
		p.tap.Event(ev)
	}
}

// Events returns the events published so far. The slice is shared with the
// subscriptions and must not be modified; fn may use it as the final
// Response.Events without copying.
func (p *Publisher) Events() []groundhog.Event {
	f := p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events[:len(f.events):len(f.events)]
}

// errClosed is returned by a Subscription's methods after Close.
var errClosed = errors.New("coalesce: subscription closed")

// Subscription is one caller's view of a flight. Its methods may be called
// from one goroutine at a time (Close from any, at any time); Next keeps a
// position in the event log.
type Subscription struct {
	mu   sync.Mutex // guards f against a concurrent Close
	f    *flight    // nil once closed, so a closed subscription does not keep the log alive
	next int        // index of the next event to return
}

// flight returns s's flight, or nil after Close.
func (s *Subscription) flight() *flight {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f
}

// Head waits for the head, or for fn's outcome if fn returned without
// publishing one: then the head is the final Response's, or err is fn's
// error. It returns ctx.Err() if ctx ends first.
func (s *Subscription) Head(ctx context.Context) (status int, contentType string, streamed bool, err error) {
	f := s.flight()
	if f == nil {
		return 0, "", false, errClosed
	}
	for {
		f.mu.Lock()
		switch {
		case f.headSet:
			status, contentType, streamed = f.status, f.ctype, f.streamed
			f.mu.Unlock()
			return status, contentType, streamed, nil
		case f.done && f.err != nil:
			err = f.err
			f.mu.Unlock()
			return 0, "", false, err
		case f.done:
			r := f.resp
			f.mu.Unlock()
			return r.Status, r.ContentType, r.Streamed, nil
		}
		wake := f.waitChan()
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, "", false, ctx.Err()
		}
	}
}

// Next returns the flight's events in order from the first one: a follower
// that joins late replays the log, then follows live. After the last event
// it returns io.EOF if fn succeeded, or fn's error if it failed. If ctx ends
// first it returns ctx.Err() and the subscription stays usable: the next
// call resumes at the same position. A fn that returns a Response without
// publishing events yields io.EOF at once; the body is in Wait's Response.
func (s *Subscription) Next(ctx context.Context) (groundhog.Event, error) {
	f := s.flight()
	if f == nil {
		return groundhog.Event{}, errClosed
	}
	for {
		f.mu.Lock()
		if s.next < len(f.events) {
			ev := f.events[s.next]
			f.mu.Unlock()
			s.next++
			return ev, nil
		}
		if f.done {
			err := f.err
			f.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return groundhog.Event{}, err
		}
		wake := f.waitChan()
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return groundhog.Event{}, ctx.Err()
		}
	}
}

// Wait waits for fn's outcome and returns it: the final Response (shared
// with every subscriber: read-only) or fn's error. It returns ctx.Err() if
// ctx ends first; the subscription stays usable.
func (s *Subscription) Wait(ctx context.Context) (*groundhog.Response, error) {
	f := s.flight()
	if f == nil {
		return nil, errClosed
	}
	for {
		f.mu.Lock()
		if f.done {
			resp, err := f.resp, f.err
			f.mu.Unlock()
			return resp, err
		}
		wake := f.waitChan()
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close leaves the flight. It is idempotent. When the last subscription of
// a flight that is still running closes, fn's context is cancelled and the
// key is freed for a new flight — unless a subscription of the flight has
// detached (see Detach), which keeps fn running whoever closes later. After Close the other methods return an
// error.
func (s *Subscription) Close() {
	s.mu.Lock()
	f := s.f
	s.f = nil
	s.mu.Unlock()
	if f == nil {
		return
	}
	f.g.mu.Lock()
	f.mu.Lock()
	f.subs--
	abandon := f.subs == 0 && !f.done && !f.kept
	if abandon {
		if f.g.m[f.key] == f {
			delete(f.g.m, f.key)
		}
	}
	f.mu.Unlock()
	f.g.mu.Unlock()
	if abandon {
		f.cancel()
	}
}

// Detach leaves the flight like Close, except that it never cancels fn: a
// flight whose last subscription detaches keeps running to completion
// (bounded only by fn's own deadline) and stays joinable under its key until
// fn returns. The gateway detaches a call whose result must outlive its
// client — an idempotent call, whose result the retry replays, or a
// cacheable one, whose result the cache keeps — so a client that times out
// does not make its retry pay the provider twice. Detach is idempotent and
// may be mixed with Close (the first of them counts).
func (s *Subscription) Detach() {
	s.mu.Lock()
	f := s.f
	s.f = nil
	s.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	f.subs--
	f.kept = true
	f.mu.Unlock()
}

// Tracker answers "was an identical call in flight when this one arrived?"
// for every call, coalesced or not (the ledger's in-flight flag). The zero
// value is ready to use; a Tracker must not be copied after first use. K
// is the key's type: a string, or a struct of strings that spares the
// caller building one.
type Tracker[K comparable] struct {
	mu sync.Mutex
	m  map[K]int // key -> active calls; absent when 0
}

// Enter records a call for key. It returns whether key already had an
// active call, and leave, which ends this call: call it exactly once when
// the call ends (further calls do nothing).
func (t *Tracker[K]) Enter(key K) (wasInFlight bool, leave func()) {
	was := t.Add(key)
	var once sync.Once
	return was, func() { once.Do(func() { t.Done(key) }) }
}

// Add records a call for key and reports whether key already had an active
// call. Done ends it: call it exactly once per Add. It is Enter without the
// leave closure and its sync.Once (two allocations a call).
func (t *Tracker[K]) Add(key K) (wasInFlight bool) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[K]int)
	}
	n := t.m[key]
	t.m[key] = n + 1
	t.mu.Unlock()
	return n > 0
}

// Done ends a call recorded by Add.
func (t *Tracker[K]) Done(key K) {
	t.mu.Lock()
	if t.m[key] <= 1 {
		delete(t.m, key)
	} else {
		t.m[key]--
	}
	t.mu.Unlock()
}

// Active returns how many calls for key have entered and not left.
func (t *Tracker[K]) Active(key K) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[key]
}
