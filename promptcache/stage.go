package promptcache

import (
	"context"
	"strconv"
	"sync"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fanout"
)

// Stage is the gateway's prompt-cache stage. It runs on the request and on
// the response of every call that goes to the provider (exact-cache hits and
// coalesced followers never reach it):
//
//  1. Before, right before the upstream call: stable prompt_cache_key and
//     breakpoint injection (the returned Pending.Body is what to send), the
//     break diagnosis' expectation, and warm-then-fan-out (Before may wait,
//     at most the Group's MaxHold, for a concurrent request over the same new
//     prefix to start answering);
//  2. Pending.Started when the provider's response head arrives, and
//     Pending.Sent once no attempt will send the body again (the stage then
//     holds nothing of it);
//  3. After with the provider's usage, on a success only;
//  4. Pending.Done always (deferred): it releases requests held for this one
//     if it never started answering.
type Stage struct {
	Tracker *Tracker
	// FanOut holds concurrent requests over a new shared prefix; nil turns
	// warm-then-fan-out off.
	FanOut *fanout.Group
}

// Pending is one call between Before and After.
type Pending struct {
	// Body is what to send upstream: the client's body, or a copy with
	// prompt_cache_key set and/or breakpoints injected.
	Body []byte
	// Held is true when warm-then-fan-out held the call.
	Held bool
	// AskedProvider is true when Before asked the provider for its own
	// cache diagnostics: an Anthropic upstream request needs the
	// anthropic-beta CacheDiagnosisBeta.
	AskedProvider bool

	call   *Call // nil when the body could not be parsed
	ticket *fanout.Ticket

	// mu orders a pre-warm's read of the request's bytes (in a goroutine
	// of its own, which may outlive the hold) before Sent lets go of them.
	mu   sync.Mutex
	sent bool
}

// Sent tells the stage the request went out and its answer has begun: the
// stage reads nothing of the request's bytes from here (After works from
// the prompt's hashes and token offsets) and lets go of them, so that the
// caller may reuse the buffer they are in. A pre-warm reading them is
// waited for; one that has not started will not read them.
func (p *Pending) Sent() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.sent, p.Body = true, nil
	if c := p.call; c != nil {
		c.Body = nil
		if c.prefix != nil {
			c.prefix.body, c.prefix.fields = nil, nil
		}
	}
	p.mu.Unlock()
}

// prewarmBody is PrewarmBody of the request's bytes, unless Sent let go of
// them.
func (p *Pending) prewarmBody(body []byte) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sent {
		return nil, false
	}
	b, err := PrewarmBody(body) // a copy: nothing of body is kept
	return b, err == nil
}

// Started tells the stage the provider's response head arrived; ok is a
// success status. Requests held for this one are released.
func (p *Pending) Started(ok bool) {
	if p != nil {
		p.ticket.Started(ok)
	}
}

// Done ends the call's part in warm-then-fan-out; safe to call more than
// once and after Started.
func (p *Pending) Done() {
	if p != nil {
		p.ticket.Done()
	}
}

// Outcome is what the stage reports for a call the provider answered.
type Outcome struct {
	Result
	Usage groundhog.Usage
	Held  bool
	// Provider is the provider's own cache verdict (Reply.Provider), "" when
	// it was not asked.
	Provider string
}

// CacheHeader is the value of Groundhog-Prompt-Cache: what the provider
// read from and wrote to its prompt cache, from its own usage.
func (o Outcome) CacheHeader() string {
	return "read=" + strconv.FormatInt(o.Usage.CachedInputTokens, 10) + " write=" + strconv.FormatInt(o.Usage.CacheWriteTokens, 10)
}

// Before prepares a call (see Stage). fanOut false opts the call out of
// warm-then-fan-out (Groundhog-Fan-Out: off). It never fails: a body the
// prefix model cannot parse is sent as it came, undiagnosed and unheld.
func (s *Stage) Before(ctx context.Context, req *Request, fanOut bool) *Pending {
	p := &Pending{Body: req.Body}
	c, err := s.Tracker.Before(ctx, req)
	if err != nil {
		return p
	}
	p.Body, p.call, p.AskedProvider = c.Body, c, c.AskedProvider
	if s.FanOut == nil || !fanOut {
		return p
	}
	if chain, ok := c.sharedPrefix(); ok {
		key := req.Tenant + "\x00" + c.prefix.Model + "\x00" + c.prefix.CacheKey + "\x00" + strconv.FormatUint(chain, 16)
		o := fanout.Options{Slow: !req.Stream}
		if req.Prewarm != nil && req.Shape == groundhog.ShapeMessages {
			body, prewarm := p.Body, req.Prewarm
			o.Prewarm = func(ctx context.Context) bool {
				b, ok := p.prewarmBody(body)
				return ok && prewarm(ctx, b)
			}
		}
		p.ticket = s.FanOut.EnterWith(ctx, key, o)
		p.Held = p.ticket.Held
	}
	return p
}

// After takes the provider's usage of a successful call and returns the
// outcome: the usage, the break verdict (the prompt is recorded in its
// chain) and whether the call was held.
func (s *Stage) After(ctx context.Context, p *Pending, u groundhog.Usage) Outcome {
	return s.AfterReply(ctx, p, u, Reply{})
}

// AfterReply is After with what the answer said besides the usage: its id
// (remembered for the chain's next request) and the provider's own cache
// verdict, booked beside groundhog's cause.
func (s *Stage) AfterReply(ctx context.Context, p *Pending, u groundhog.Usage, r Reply) Outcome {
	o := Outcome{Usage: u, Provider: r.Provider}
	if p == nil {
		return o
	}
	o.Held = p.Held
	if p.call != nil {
		p.call.responseID = r.ID
		o.Result = s.Tracker.After(ctx, p.call, u)
		p.call.release() // segpool.go: the prompt is recorded, its segments go back
	}
	return o
}

// sharedPrefix returns the chain hash of the static prefix that concurrent
// requests of one task share, and whether it is long enough to be cached.
// The static prefix is everything before the newest turn (the request's last
// message or input item): tools, instructions/system and the earlier
// history. Where the provider writes only at breakpoints (Anthropic,
// Bedrock Converse; OpenAI explicit-only mode) it ends at the last breakpoint before the newest turn —
// past it nothing the first request writes is readable by the others — and
// with no such breakpoint there is nothing to wait for.
func (c *Call) sharedPrefix() (uint64, bool) {
	p := c.prefix
	if p == nil || p.NotApplicable || len(p.Segments) == 0 {
		return 0, false
	}
	segs := p.Segments
	newest := -1
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].Message >= 0 {
			newest = segs[i].Message
			break
		}
	}
	end := len(segs) // first segment of the newest turn
	if newest >= 0 {
		for i, s := range segs {
			if s.Message >= newest {
				end = i
				break
			}
		}
	}
	cut := end - 1
	if p.Shape == groundhog.ShapeMessages || p.Shape == groundhog.ShapeConverse || p.Explicit {
		for cut >= 0 && !segs[cut].Marker {
			cut--
		}
	}
	if cut < 0 || segs[cut].End < c.rules.MinTokens {
		return 0, false
	}
	return segs[cut].Chain, true
}
