// Package distcoalesce coalesces identical cacheable calls across gateway
// replicas (docs/cache-and-coalescing.md, across processes).
//
// In-process coalescing (package coalesce) already makes one leader per
// (tenant, request hash) in each replica; Group.Lead is what that leader
// calls before paying for an upstream call. The first replica to claim the
// flight in Redis — SET NX PX of a lease key holding a random token — runs
// the call; the leaders of the other replicas wait, woken by a pub/sub
// message when the flight ends (never a hot poll), and then serve the
// result the flight stored in the shared cache — or, when the answer
// streams, receive its events as they arrive through a Redis Stream
// (live.go).
//
// The claim is a lease renewed while the call runs. A leader whose process
// dies stops renewing: its claim expires after at most one lease, and one
// waiter claims it in turn and runs the call. That waiter — exactly one
// across the replicas — also reports the dead leader's claim (Lead's lost),
// so the attempt the dead replica may have paid for is booked: the provider
// billed it, and its own ledger row may never be written. A leader that ends without
// storing a result (an upstream error, an uncacheable response) releases
// the claim; again one waiter takes over. No waiter waits past its own
// context or Options.MaxWait: then it runs the call itself.
//
// Redis failures never fail a call: Lead then returns at once and the
// caller runs the call (correct, only not deduplicated).
package distcoalesce

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/internal/wake"
)

// Defaults of Options.
const (
	DefaultLease   = 10 * time.Second
	DefaultMaxWait = 5 * time.Minute
)

// fallbackPoll is how often a waiter re-reads the claim and the cache when
// no wake-up arrives: a lost pub/sub message delays it by at most this.
const fallbackPoll = time.Second

// Options configure a Group.
type Options struct {
	Client *goredis.Client // required
	// Prefix starts the claim keys; it must be the prefix of Waker's
	// channel when Waker is Redis (the same deployment).
	Prefix string
	Waker  wake.Transport // required: wakes the waiters when a flight ends
	// Lease is the claim's lifetime without renewal (renewed every third of
	// it while the call runs); default DefaultLease. A dead leader's flight
	// is taken over after at most one Lease.
	Lease time.Duration
	// MaxWait bounds how long a waiter waits for another replica's flight
	// before running the call itself; default DefaultMaxWait.
	MaxWait time.Duration
	// Degraded, when set and true, means Redis is known to be down: Lead
	// then returns at once (the call runs uncoordinated) without a round
	// trip or a log line per call.
	Degraded func() bool
	Logger   *slog.Logger
	// ClaimLook, when set, takes a flight's claim (key, token, lease) and
	// reads the call's shared cache entry in one round trip, returning
	// whether it took the claim and the context under which the look-up
	// after the claim answers from what it read (redis.DB.ClaimLook).
	// Without it, the claim is a SET NX and the look-up reads on its own.
	ClaimLook func(ctx context.Context, key, token string, lease time.Duration, tenant, hash string) (claimed bool, lookCtx context.Context, err error)
	// RideWithPut, when set, returns ctx under which the cache write of
	// (tenant, hash) also sends the commands cmds queues, in its round
	// trip, and sent, reporting whether they were sent and succeeded
	// (redis.DB.RideWithPut): a flight's release rides with the write of
	// its result (a lead's RideStore). Without it the release is a round
	// trip of its own.
	RideWithPut func(ctx context.Context, tenant, hash string, cmds func(ctx context.Context, p goredis.Pipeliner) []goredis.Cmder) (rideCtx context.Context, sent func() bool)
	// Live configures the live relay of streamed answers to the other
	// replicas' waiters (live.go).
	Live LiveOptions
}

// Group coordinates flights across replicas. It is safe for concurrent use.
type Group struct {
	o Options

	led, waited, tookOver, lost, errors atomic.Uint64
	liveFollowed, abandoned             atomic.Uint64
	waiting                             atomic.Int64
	live                                chan struct{} // one slot per live reader; nil when live relay is off
}

// Stats are the counters of a Group since New.
type Stats struct {
	Led      uint64 // flights this replica claimed and ran
	Shared   uint64 // calls answered by another replica's flight
	TookOver uint64 // claims taken after another leader's claim ended without a result
	Lost     uint64 // claims of other replicas found gone without a release and reported (Lead's lost)
	Errors   uint64 // Redis failures (the call then ran uncoordinated)
	Waiting  int64  // calls waiting for another replica's flight now
	// LiveFollowed counts the Shared calls that received another replica's
	// stream live and whole; Abandoned the streams this replica led whose
	// live relay was given up (queue overflow, event over the entry bound,
	// Redis error): their followers served the stored result.
	LiveFollowed, Abandoned uint64
}

// New returns a Group.
func New(o Options) *Group {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Group{o: o}
	g.o.Live = o.Live.withDefaults(o.Client)
	if !g.o.Live.Off {
		g.live = make(chan struct{}, g.o.Live.MaxReaders)
	}
	return g
}

// Stats returns the counters.
func (g *Group) Stats() Stats {
	return Stats{Led: g.led.Load(), Shared: g.waited.Load(), TookOver: g.tookOver.Load(), Lost: g.lost.Load(), Errors: g.errors.Load(), Waiting: g.waiting.Load(),
		LiveFollowed: g.liveFollowed.Load(), Abandoned: g.abandoned.Load()}
}

// renewScript extends the claim KEYS[1] by ARGV[2] ms if it still holds
// the token ARGV[1].
var renewScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// releaseScript deletes the claim KEYS[1] if it still holds ARGV[1], and
// marks the claim ended (KEYS[2], for ARGV[2] ms) either way: a claim that
// ended is never reported lost (reportLost).
var releaseScript = goredis.NewScript(`
redis.call('SET', KEYS[2], 'ended', 'PX', ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// releasePublishScript is releaseScript followed by the wake-up of the
// flight's waiters: the topic ARGV[4] published on the channel ARGV[3], as
// the Waker's Publish sends it.
var releasePublishScript = goredis.NewScript(`
redis.call('SET', KEYS[2], 'ended', 'PX', ARGV[2])
local n = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  n = redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return n`)

// endKey marks the end of the claim (claim key key, token token): "ended"
// when its holder released it, "lost" when a waiter found it gone without
// a release and reported it (SET NX: one waiter only).
func (g *Group) endKey(key, token string) string {
	return g.o.Prefix + "e:" + key[len(g.o.Prefix)+len("f:"):] + ":" + token
}

// endTTL is how long a claim's end mark lives: longer than any waiter can
// go between reading a claim's holder and claiming the flight after it
// (a lease plus a fallback poll), with a wide margin.
func (g *Group) endTTL() time.Duration {
	return max(time.Minute, 4*g.o.Lease)
}

func (g *Group) claimKey(tenant, hash string) string {
	return g.o.Prefix + "f:" + strconv.Itoa(len(tenant)) + "." + tenant + ":" + hash
}

// Lead coordinates the call (tenant, hash) with the other replicas.
//
// lookup reads the shared cache for the call's result (nil when absent).
// Lead returns a nil entry only after lookup missed: once the call holds
// the claim, or, when Lead cannot coordinate (Redis degraded or failing),
// just before it returns. The caller need not look again.
// Lead returns either a non-nil entry — another replica's flight stored it
// or streamed it whole: serve it and do not call upstream — or a nil entry
// and lead: run the call, store its result in the shared cache, then call
// lead.End exactly once with the result (nil on failure), which ends the
// claim (if this replica held it) and wakes the waiters of every replica.
// End must be called after the cache write, so that a woken waiter finds
// the result. A lead that holds the claim is a Claim: its token and claim
// time name the flight's attempt. lead is also the Tap the caller's flight publishes its output
// to: a streamed answer then goes live to the other replicas (live.go).
//
// relay, when not nil, is where a call that waits for another replica's
// streaming flight publishes that flight's head and events as they arrive
// (live.go); the returned entry then holds the whole stream, of which the
// caller has published a prefix to relay (the rest comes from the stored
// result). Once something was published to relay the call can no longer
// run upstream itself: if the other replica's flight then fails or dies,
// Lead returns ErrLeaderLost.
//
// lost, when not nil, is called (before Lead returns) with the token and
// claim time of another replica's claim that this call found gone without
// being released — its replica died, or lost Redis for a whole lease —
// once this call held the claim after it. Of all the calls that saw that
// claim, on every replica, exactly one reports it. The attempt it names may
// have been billed by the provider; its replica's own ledger row, if it is
// ever written, names the same attempt (the same Claim).
//
// followed is true when the entry came from a flight that was running on
// another replica when this call found it claimed (the call shared it, as
// a coalesced follower does in one process); false when the entry was
// already stored once this call held the claim (a flight that ended just
// before: a cache hit).
func (g *Group) Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry, relay coalesce.Tap, lost func(token string, claimed time.Time)) (e *groundhog.CacheEntry, followed bool, lead coalesce.Sink, err error) {
	if g.o.Degraded != nil && g.o.Degraded() {
		return g.lookThenRun(ctx, lookup, false)
	}
	key := g.claimKey(tenant, hash)
	topic := wake.Topic("f", tenant, hash)
	// Subscribe before the first claim attempt, so that a flight ending
	// between a failed claim and the wait cannot be missed.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	woken := g.o.Waker.Wake(wctx, topic)
	deadline := time.Now().Add(g.o.MaxWait)
	token := groundhog.NewTimeID(time.Now()) // its time is the claim time a waiter taking over reports
	waited := false
	seen := ""        // the last holder of the claim this call saw
	var lv liveFollow // what this call relayed of another replica's stream
	// run is the answer when this call must not wait any longer: run the
	// call itself — unless it already relayed part of another's stream.
	run := func() (*groundhog.CacheEntry, bool, coalesce.Sink, error) { return runSelf(lv.started) }
	for {
		ok, lookCtx, err := g.claim(ctx, key, token, tenant, hash)
		if err != nil {
			g.uncoordinated(ctx, err)
			return g.lookThenRun(ctx, lookup, lv.started)
		}
		if ok {
			if seen != "" {
				g.reportLost(key, seen, lost)
			}
			// A flight may have stored its result and ended its claim
			// between the caller's last cache look-up and this claim:
			// look once more before paying (read with the claim when
			// ClaimLook is set, else one GET per miss).
			if e := lookup(lookCtx); e != nil {
				g.release(key, token, topic)
				g.waited.Add(1)
				return e, waited, nopSink{}, nil
			}
			if lv.started {
				// The flight this call relayed ended without a result:
				// hand the claim to the other waiters.
				g.release(key, token, topic)
				return run()
			}
			g.led.Add(1)
			if waited {
				g.tookOver.Add(1)
			}
			return nil, false, g.leaderSink(tenant, hash, key, token, topic, relay != nil), nil
		}
		// Another replica leads: follow its stream live, or wait for its
		// end, its lease's expiry, our fallback poll or our own deadline,
		// whichever comes first.
		waited = true
		if e := lookup(ctx); e != nil {
			g.waited.Add(1)
			return e, true, nopSink{}, nil
		}
		var holder *goredis.StringCmd
		var pttl *goredis.DurationCmd
		if _, err := g.o.Client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			holder, pttl = p.Get(ctx, key), p.PTTL(ctx, key)
			return nil
		}); err != nil && !errors.Is(err, goredis.Nil) {
			g.uncoordinated(ctx, err)
			return g.lookThenRun(ctx, lookup, lv.started)
		}
		if h := holder.Val(); h != "" {
			seen = h
		}
		if h := holder.Val(); relay != nil && g.live != nil && h != "" && h != lv.holder && !lv.started && g.renewed(pttl.Val()) && time.Until(deadline) > 0 {
			switch g.follow(ctx, &lv, g.streamKey(tenant, hash, h), key, h, relay, woken, deadline) {
			case liveComplete:
				g.waited.Add(1)
				g.liveFollowed.Add(1)
				return lv.entry(tenant, hash), true, nopSink{}, nil
			default: // fall back to the stored result, or take over
				continue
			}
		}
		ttl := pttl.Val()
		left := time.Until(deadline)
		if left <= 0 {
			return run()
		}
		wait := min(fallbackPoll, left)
		if ttl > 0 {
			wait = min(wait, ttl)
		}
		t := time.NewTimer(wait)
		g.waiting.Add(1)
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
			g.waiting.Add(-1)
			t.Stop()
			return run()
		}
		g.waiting.Add(-1)
		t.Stop()
		if e := lookup(ctx); e != nil {
			g.waited.Add(1)
			return e, true, nopSink{}, nil
		}
	}
}

// claim tries to take the flight's claim: with ClaimLook, reading the
// call's cache entry in the same round trip (lookCtx carries it).
func (g *Group) claim(ctx context.Context, key, token, tenant, hash string) (ok bool, lookCtx context.Context, err error) {
	if g.o.ClaimLook != nil {
		return g.o.ClaimLook(ctx, key, token, g.o.Lease, tenant, hash)
	}
	ok, err = g.o.Client.SetNX(ctx, key, token, g.o.Lease).Result()
	return ok, ctx, err
}

// lookThenRun is Lead's answer when it cannot coordinate the call: the
// entry if lookup finds one now, else run the call (or ErrLeaderLost once
// part of another replica's stream was relayed). The caller does not look
// again (gateway.Flights): this is its second look.
func (g *Group) lookThenRun(ctx context.Context, lookup func(context.Context) *groundhog.CacheEntry, relayed bool) (*groundhog.CacheEntry, bool, coalesce.Sink, error) {
	if e := lookup(ctx); e != nil {
		return e, false, nopSink{}, nil
	}
	return runSelf(relayed)
}

// runSelf is Lead's answer when the call must run itself: run it upstream,
// unless part of another replica's stream was relayed to it (ErrLeaderLost).
func runSelf(relayed bool) (*groundhog.CacheEntry, bool, coalesce.Sink, error) {
	if relayed {
		return nil, false, nopSink{}, ErrLeaderLost
	}
	return nil, false, nopSink{}, nil
}

// reportLost reports the claim token, seen held before this call claimed
// the flight, to lost if it was neither released nor already reported.
func (g *Group) reportLost(key, token string, lost func(string, time.Time)) {
	if lost == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	first, err := g.o.Client.SetNX(ctx, g.endKey(key, token), "lost", g.endTTL()).Result()
	if err != nil {
		g.o.Logger.Warn("distcoalesce: mark a lost claim", "err", err)
		return
	}
	if first {
		g.lost.Add(1)
		lost(token, ClaimTime(token))
	}
}

// ClaimTime is the time a claim's token was made (its first 64 bits, as
// groundhog.NewTimeID writes them), or the zero time for a token of
// another form.
func ClaimTime(token string) time.Time {
	if len(token) != 32 {
		return time.Time{}
	}
	b, err := hex.DecodeString(token[:16])
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)))
}

// renewed reports whether a claim with ttl left was renewed on time (a
// live holder renews every third of the lease). A waiter does not start
// relaying the stream of a holder that missed a renewal — probably a dead
// replica, whose partial stream it could only end with an error — but
// waits (and takes over once the claim expires). The lease is the
// deployment's, the same on every replica.
func (g *Group) renewed(ttl time.Duration) bool {
	return ttl >= g.o.Lease*2/3-100*time.Millisecond
}

// uncoordinated logs a Redis failure and lets the caller run the call.
func (g *Group) uncoordinated(ctx context.Context, err error) {
	if ctx.Err() == nil {
		g.errors.Add(1)
		g.o.Logger.Warn("distcoalesce: redis failed; running the call without cross-replica coalescing", "err", err)
	}
}

// hold renews the claim until the returned function is called, which
// stops the renewal and, unless released says its release was sent already
// (RideStore), releases the claim and wakes the waiters.
func (g *Group) hold(key, token, topic string) func(released bool) {
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(g.o.Lease / 3)
		defer t.Stop()
		ms := strconv.FormatInt(g.o.Lease.Milliseconds(), 10)
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), g.o.Lease/3)
				n, err := renewScript.Run(ctx, g.o.Client, []string{key}, token, ms).Int()
				cancel()
				if err == nil && n == 0 {
					return // lost: another replica took over; keep running, our result is still good
				}
			}
		}
	}()
	var once atomic.Bool
	return func(released bool) {
		if once.Swap(true) {
			return
		}
		close(stop)
		<-stopped
		if !released {
			g.release(key, token, topic)
		}
	}
}

// releaseKeys are the keys of the release scripts: the claim and its end
// mark.
func (g *Group) releaseKeys(key, token string) []string {
	return []string{key, g.endKey(key, token)}
}

func (g *Group) release(key, token, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	keys := g.releaseKeys(key, token)
	if w, ok := g.o.Waker.(channelWaker); ok {
		if ch, ok := w.PublishChannel(g.o.Client); ok {
			// The wake-up rides in the script: one round trip.
			err := releasePublishScript.Run(ctx, g.o.Client, keys, token, g.endTTL().Milliseconds(), ch, topic).Err()
			if err == nil {
				return
			}
			g.o.Logger.Warn("distcoalesce: release claim", "err", err)
			g.o.Waker.Publish(topic)
			return
		}
	}
	if err := releaseScript.Run(ctx, g.o.Client, keys, token, g.endTTL().Milliseconds()).Err(); err != nil {
		g.o.Logger.Warn("distcoalesce: release claim", "err", err)
	}
	g.o.Waker.Publish(topic)
}

// channelWaker is a Waker that publishes its wake-ups on a channel of the
// Group's own Redis (redis.DB): release then publishes in its script.
type channelWaker interface {
	PublishChannel(c *goredis.Client) (channel string, ok bool)
}
