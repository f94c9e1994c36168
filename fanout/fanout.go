// Package fanout is warm-then-fan-out (docs/prompt-caching.md): of
// concurrent requests that share a prompt prefix the provider has not cached
// yet, the first goes upstream at once and the others wait until it has
// started answering — the provider has then written the prefix, so they read
// it instead of each writing it again.
package fanout

import (
	"context"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Config configures a Group. Zero values take the defaults.
type Config struct {
	// MaxHold is the longest a request waits for the first one; it then
	// goes upstream anyway (default 10 s).
	MaxHold time.Duration
	// Warm is how long a prefix counts as written after its first request
	// started answering, so later requests are not held for it (default 5
	// minutes, the providers' shortest cache TTL). A request that arrives
	// later is never held anyway: nobody is writing the prefix then.
	Warm time.Duration
	// PrewarmAfter is how long after a writer that does not stream was
	// sent its first held follower sends the pre-warm (Options.Prewarm;
	// default 5 s, negative: never). It must be past the provider's time
	// to first token on the shared prompt: the provider has then written
	// the prefix from the writer and the pre-warm reads it, where sent
	// earlier it writes the prefix a second time. The followers then go
	// then rather than when the writer's whole answer is in (or MaxHold).
	PrewarmAfter time.Duration
	// MaxKeys bounds the warm prefixes remembered (default 100,000); past
	// it the oldest are forgotten, which can only cost a hold, never a
	// failure.
	MaxKeys int
	// Clock tells the time for Warm; After makes the MaxHold timer. Tests
	// inject both; defaults are the wall clock and time.After.
	Clock groundhog.Clock
	After func(d time.Duration) <-chan time.Time
	// OnHold, when set, is called as a request starts waiting, its timers
	// set (for metrics, and so tests know a request is held without
	// polling).
	OnHold func()
	// Shared, when set, extends the holds across processes: the replicas
	// of one deployment hold for each other's writer as for their own
	// (package distfanout, over Redis). Nil holds within this process.
	Shared Shared
}

// Shared coordinates a prefix's writer across processes. Within a process
// the Group already has one writer per prefix; that writer asks Shared
// whether another process writes the prefix. Its methods never fail a
// request: on any error they answer as if no other process were there
// (Claim gives Claimed, Wait gives false).
type Shared interface {
	// Claim makes this process the prefix's writer for at most hold,
	// unless another process writes it (Busy) or it is known written
	// (Warm, for Claim.Warm more).
	Claim(ctx context.Context, key string, hold time.Duration) Claim
	// Wait returns once the other process's writer has started answering
	// (true: the prefix is written), has ended without an answer or let
	// its claim lapse (false), or ctx is done (false).
	Wait(ctx context.Context, key string) bool
	// Release ends a claim that Claim returned as Claimed: ok marks the
	// prefix written for warm, and the waiting processes are woken.
	Release(key string, c Claim, ok bool, warm time.Duration)
}

// ClaimState is what Shared.Claim found.
type ClaimState int

const (
	Claimed ClaimState = iota // this process writes the prefix
	Busy                      // another process writes it: Wait for it
	Warm                      // it is written: nobody needs to wait
)

// Claim is the answer of Shared.Claim.
type Claim struct {
	State ClaimState
	Token string        // identifies a Claimed claim to Release
	Warm  time.Duration // for Warm: how much longer the prefix counts as written
}

// Group holds requests by prefix key. The key must scope everything that
// decides whether the provider shares a cache entry: tenant (or provider
// account), model, prompt_cache_key and the prefix digest. Safe for
// concurrent use.
type Group struct {
	cfg     Config
	mu      sync.Mutex
	writing map[string]*flight   // prefix key -> the request writing it
	warm    map[string]time.Time // prefix key -> until when it counts as written
	order   []string             // warm keys, oldest first (bounded by MaxKeys)
}

type flight struct {
	started chan struct{} // closed when the writer started answering or gave up
	closed  sync.Once
	// slow: the writer starts answering only when it is done (it does
	// not stream), so its followers may wait for the whole answer.
	slow bool
	sent time.Time // when the writer entered (went upstream)
	// prewarming: a follower has sent the flight's pre-warm (under g.mu).
	prewarming bool
}

// Options are one request's part in Enter beyond its prefix key.
type Options struct {
	// Slow says the request, should it write the prefix, starts answering
	// only when it is done (it does not stream).
	Slow bool
	// Prewarm, when set, writes the prefix with a request the provider
	// answers as soon as the prefix is written (Anthropic's max_tokens 0),
	// reporting a success. The first request held behind a slow writer
	// calls it (Config.PrewarmAfter after the writer went), and a success releases every request held for that writer
	// (in this process) without waiting for the writer's whole answer. It
	// runs on its own goroutine and must end on its own (it is not
	// cancelled when its caller stops waiting: what it sent is billed).
	Prewarm func(ctx context.Context) bool
}

// New returns a Group configured by cfg.
func New(cfg Config) *Group {
	if cfg.MaxHold <= 0 {
		cfg.MaxHold = 10 * time.Second
	}
	if cfg.Warm <= 0 {
		cfg.Warm = 5 * time.Minute
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100000
	}
	if cfg.PrewarmAfter == 0 {
		cfg.PrewarmAfter = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = groundhog.SystemClock{}
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	return &Group{cfg: cfg, writing: map[string]*flight{}, warm: map[string]time.Time{}}
}

// Ticket is one request's place in a Group. Exactly one of its owners'
// paths ends it: Started when the provider's response head arrives, Done in
// every case (a deferred Done after Started is a no-op).
type Ticket struct {
	g     *Group
	key   string
	f     *flight // non-nil when this request is the prefix's writer
	claim *Claim  // non-nil when it writes it for every process (Config.Shared)
	once  sync.Once
	// Held is true when Enter waited for another request.
	Held bool
}

// Enter admits a request over the prefix key. When no request is writing
// the prefix (and it is not known warm) the caller becomes its writer and
// Enter returns at once. When another request is writing it, Enter waits
// until that one has started answering, MaxHold has passed or ctx is done —
// then returns (never an error: the hold never fails a request) with Held
// set. If the writer failed before answering, the released requests simply
// go upstream; the first of them to come back becomes the next writer for
// requests still to arrive.
//
// With Config.Shared the writer of this process then claims the prefix for
// every process. If another process writes it, the writer waits for that
// one (at most MaxHold, Held set), and the requests held for it here are
// released with it; if it is known written, none of them waits.
func (g *Group) Enter(ctx context.Context, key string) *Ticket {
	return g.EnterWith(ctx, key, Options{})
}

// EnterWith is Enter with the request's Options: a slow writer (one that
// does not stream) has its first held follower pre-warm the prefix when
// that follower can (Options.Prewarm), so the followers go as soon as the
// prefix is written rather than when the writer's whole answer is in. A
// failed pre-warm changes nothing: they wait for the writer as before.
func (g *Group) EnterWith(ctx context.Context, key string, o Options) *Ticket {
	t := &Ticket{g: g, key: key}
	g.mu.Lock()
	if until, ok := g.warm[key]; ok && g.cfg.Clock.Now().Before(until) {
		g.mu.Unlock()
		return t
	}
	f, ok := g.writing[key]
	if !ok {
		t.f = &flight{started: make(chan struct{}), slow: o.Slow}
		if o.Slow {
			t.f.sent = g.cfg.Clock.Now()
		}
		g.writing[key] = t.f
		g.mu.Unlock()
		if g.cfg.Shared != nil {
			g.claim(ctx, t)
		}
		return t
	}
	warm := f.slow && !f.prewarming && o.Prewarm != nil && g.cfg.PrewarmAfter > 0
	if warm {
		f.prewarming = true
	}
	g.mu.Unlock()
	t.Held = true
	var (
		due    <-chan time.Time // the pre-warm's time
		warmed chan bool        // its outcome
	)
	if warm {
		due = g.cfg.After(max(0, g.cfg.PrewarmAfter-g.cfg.Clock.Now().Sub(f.sent)))
	}
	hold := g.cfg.After(g.cfg.MaxHold)
	if g.cfg.OnHold != nil {
		g.cfg.OnHold() // its timers are set: it waits
	}
	for {
		select {
		case <-f.started:
		case <-hold:
		case <-ctx.Done():
		case <-due:
			due, warmed = nil, make(chan bool, 1)
			go func() { warmed <- o.Prewarm(ctx) }()
			continue
		case ok := <-warmed:
			if !ok {
				warmed = nil // wait for the writer as if no pre-warm was sent
				continue
			}
			g.release(key, f, true, g.cfg.Warm)
		}
		if due != nil { // it stopped waiting before its pre-warm's time: another follower may send one
			g.mu.Lock()
			f.prewarming = false
			g.mu.Unlock()
		}
		return t
	}
}

// claim asks the other processes about the prefix t writes in this one.
func (g *Group) claim(ctx context.Context, t *Ticket) {
	c := g.cfg.Shared.Claim(ctx, t.key, g.cfg.MaxHold)
	switch c.State {
	case Claimed:
		t.claim = &c
		return
	case Warm:
		g.release(t.key, t.f, true, c.Warm)
	default: // Busy
		t.Held = true
		hctx, cancel := context.WithCancel(ctx)
		hold := g.cfg.After(g.cfg.MaxHold)
		if g.cfg.OnHold != nil {
			g.cfg.OnHold() // its timer is set: it waits
		}
		go func() {
			select {
			case <-hold:
				cancel()
			case <-hctx.Done():
			}
		}()
		ok := g.cfg.Shared.Wait(hctx, t.key)
		cancel()
		g.release(t.key, t.f, ok, g.cfg.Warm)
	}
	t.f = nil // released: this request no longer writes the prefix
}

// Started tells the Group the request's provider response head arrived;
// ok means a success (the provider wrote the prefix). Requests held for
// this one are released. Only the writer's call has an effect.
func (t *Ticket) Started(ok bool) {
	if t == nil || t.f == nil {
		return
	}
	t.once.Do(func() {
		t.g.release(t.key, t.f, ok, t.g.cfg.Warm)
		if c := t.claim; c != nil {
			// Off the response's path: the other processes' waiters only
			// wait a round trip longer.
			go t.g.cfg.Shared.Release(t.key, *c, ok, t.g.cfg.Warm)
		}
	})
}

// Done ends the ticket: a writer that never started answering releases the
// requests held for it. Safe to call more than once and after Started.
func (t *Ticket) Done() { t.Started(false) }

// release ends the writing of f; ok marks key written for warm.
func (g *Group) release(key string, f *flight, ok bool, warm time.Duration) {
	g.mu.Lock()
	if g.writing[key] == f {
		delete(g.writing, key)
	}
	if ok {
		if _, seen := g.warm[key]; !seen {
			g.order = append(g.order, key)
		}
		g.warm[key] = g.cfg.Clock.Now().Add(warm)
		for len(g.order) > g.cfg.MaxKeys {
			delete(g.warm, g.order[0])
			g.order = g.order[1:]
		}
	}
	g.mu.Unlock()
	f.closed.Do(func() { close(f.started) }) // a pre-warm and the writer may both end it
}
