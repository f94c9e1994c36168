package gateway

import "github.com/groundhog-ai/groundhog/coalesce"

// outlivesClient reports whether c's upstream call must run to completion
// even when its client leaves first (bounded by the upstream timeout): an
// idempotent call, whose result the client's retry replays from the
// operation record, and a cacheable one, whose result the cache keeps. Were
// such a flight cancelled, the provider would still bill the abandoned
// attempt and the retry would pay again. A call that is neither may be
// cancelled when its last client leaves: nothing could reuse its answer.
func outlivesClient(c *call) bool {
	return c.claim != nil || (c.policy.on() && !c.noStore)
}

// leaveFlight ends a call's subscription: detached (the flight goes on)
// when keep, closed (the flight is cancelled if nobody else waits) if not.
func leaveFlight(sub *coalesce.Subscription, keep bool) {
	if keep {
		sub.Detach()
		return
	}
	sub.Close()
}

// coalesces decides whether identical calls in flight share one upstream
// call: the request's Groundhog-Coalesce (+1 on, -1 off) wins, then the
// operation's coalesce setting, else coalescing is on exactly when the cache
// is (use or refresh). Without the cache a shared call's result goes to the
// callers waiting for it and nowhere else: nothing is stored.
func coalesces(p cachePolicy, op *bool, header int8) bool {
	switch {
	case header > 0:
		return true
	case header < 0:
		return false
	case op != nil:
		return *op
	}
	return p.on()
}
