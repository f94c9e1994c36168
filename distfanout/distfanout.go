// Package distfanout extends warm-then-fan-out (package fanout) across
// gateway replicas over Redis: of concurrent requests that share a prompt
// prefix the provider has not cached yet, the first to reach any replica
// writes it, and the others — on every replica — wait until it has started
// answering, then read the prefix instead of writing it again.
//
// Each replica's fanout.Group already has one writer per prefix; that writer
// claims the prefix here. The claim is a key set NX with a lifetime of the
// hold (fanout's MaxHold): a writer that dies holds nobody longer than a
// request would have been held anyway. A writer that starts answering marks
// the prefix warm (a second key, for fanout's Warm) and wakes the waiters
// of every replica through the deployment's wake-up channel; a writer that
// fails only ends its claim. A waiter re-reads both keys when woken, and
// every Options.Poll in case a wake-up was lost.
//
// Redis failures never fail or delay a request beyond one bounded round
// trip: Claim then says Claimed (the replica holds within itself, as
// without Redis) and Wait says false (the waiter goes upstream).
package distfanout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/internal/wake"
)

// Defaults of Options.
const (
	DefaultPoll    = 250 * time.Millisecond
	DefaultTimeout = 500 * time.Millisecond
)

// Options configure a Shared.
type Options struct {
	Client *goredis.Client // required
	// Prefix starts the keys; it must be the prefix of Waker's channel when
	// Waker is Redis (the same deployment).
	Prefix string
	Waker  wake.Transport // required: wakes the waiters when a writer ends
	// Poll is how often a waiter re-reads the prefix's keys when no
	// wake-up arrives (default DefaultPoll).
	Poll time.Duration
	// Timeout bounds each round trip to Redis (default DefaultTimeout).
	Timeout time.Duration
	// Degraded, when set and true, means Redis is known to be down: Claim
	// and Wait then answer at once without a round trip.
	Degraded func() bool
	Logger   *slog.Logger
}

// Shared is a fanout.Shared over Redis. It is safe for concurrent use.
type Shared struct {
	o Options

	claimed, busy, warm, errors atomic.Uint64
}

var _ fanout.Shared = (*Shared)(nil)

// New returns a Shared configured by o.
func New(o Options) *Shared {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Shared{o: o}
}

// Stats counts the claims by their answer, and the Redis errors.
type Stats struct {
	Claimed, Busy, Warm, Errors uint64
}

// Stats returns the counters since New.
func (s *Shared) Stats() Stats {
	return Stats{Claimed: s.claimed.Load(), Busy: s.busy.Load(), Warm: s.warm.Load(), Errors: s.errors.Load()}
}

// keys names the prefix's claim key, warm key and wake-up topic. The
// fanout key scopes the tenant, model, cache key and prefix digest; its
// SHA-256 keeps Redis keys short and holds none of it in clear.
func (s *Shared) keys(key string) (claim, warm, topic string) {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:16])
	return s.o.Prefix + "fo:c:" + h, s.o.Prefix + "fo:w:" + h, wake.Topic("o", "", h)
}

func (s *Shared) down() bool { return s.o.Degraded != nil && s.o.Degraded() }

func (s *Shared) failed(op string, err error) {
	s.errors.Add(1)
	s.o.Logger.Warn("distfanout: redis "+op+" failed; holding within this replica", "err", err)
}

// claimScript answers {1} when the prefix is warm (with its PTTL), {2} when
// this call claimed it, {0} when another claim holds it.
var claimScript = goredis.NewScript(`
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then return {1, ttl} end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2, 0} end
return {0, 0}
`)

// Claim implements fanout.Shared.
func (s *Shared) Claim(ctx context.Context, key string, hold time.Duration) fanout.Claim {
	if s.down() {
		return fanout.Claim{State: fanout.Claimed}
	}
	claim, warm, _ := s.keys(key)
	token := groundhog.NewID()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Timeout)
	defer cancel()
	r, err := claimScript.Run(ctx, s.o.Client, []string{claim, warm}, token, max(1, hold.Milliseconds())).Int64Slice()
	if err != nil || len(r) != 2 {
		s.failed("claim", err)
		return fanout.Claim{State: fanout.Claimed}
	}
	switch r[0] {
	case 1:
		s.warm.Add(1)
		return fanout.Claim{State: fanout.Warm, Warm: time.Duration(r[1]) * time.Millisecond}
	case 2:
		s.claimed.Add(1)
		return fanout.Claim{State: fanout.Claimed, Token: token}
	}
	s.busy.Add(1)
	return fanout.Claim{State: fanout.Busy}
}

// waitScript answers 1 when the prefix is warm, 2 when a claim still holds
// it, 0 when neither (its writer ended without an answer, or lapsed).
var waitScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 2 end
return 0
`)

// Wait implements fanout.Shared.
func (s *Shared) Wait(ctx context.Context, key string) bool {
	if s.down() {
		return false
	}
	claim, warm, topic := s.keys(key)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	woken := s.o.Waker.Wake(wctx, topic) // before the first read: no wake-up is missed
	poll := time.NewTimer(s.o.Poll)
	defer poll.Stop()
	for {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Timeout)
		st, err := waitScript.Run(rctx, s.o.Client, []string{claim, warm}).Int64()
		cancel()
		if err != nil {
			s.failed("wait", err)
			return false
		}
		if st != 2 {
			return st == 1
		}
		select {
		case <-ctx.Done():
			return false
		case <-woken:
		case <-poll.C:
			poll.Reset(s.o.Poll)
		}
	}
}

// releaseScript marks the prefix warm for ARGV[3] ms when ARGV[2] is 1,
// then ends the claim if it is still this one's (ARGV[1]).
var releaseScript = goredis.NewScript(`
if ARGV[2] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[3]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`)

// Release implements fanout.Shared.
func (s *Shared) Release(key string, c fanout.Claim, ok bool, warm time.Duration) {
	if c.Token == "" || s.down() {
		return // a claim Redis never held: nobody elsewhere waits for it
	}
	claim, warmKey, topic := s.keys(key)
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	okArg := "0"
	if ok {
		okArg = "1"
	}
	if err := releaseScript.Run(ctx, s.o.Client, []string{claim, warmKey}, c.Token, okArg,
		strconv.FormatInt(max(1, warm.Milliseconds()), 10)).Err(); err != nil {
		// The claim lapses by itself within the hold; the waiters poll.
		s.failed("release", err)
	}
	s.o.Waker.Publish(topic)
}
