package coalesce

import "time"

// upstreamSpan is the time a flight spent waiting for its upstream: the
// first send to the end of the last body read (envelope) and the sum of
// the waits (total), which differ only when fn tried more than once.
type upstreamSpan struct {
	start, end time.Time
	total      time.Duration
}

// Upstream records that fn waited for its upstream from start (the request
// sent) to end (the response body read or relayed to its end). Call it
// before fn returns; calls after are ignored.
func (p *Publisher) Upstream(start, end time.Time) {
	if end.Before(start) {
		return
	}
	f := p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return
	}
	u := &f.up
	if u.start.IsZero() || start.Before(u.start) {
		u.start = start
	}
	if end.After(u.end) {
		u.end = end
	}
	u.total += end.Sub(start)
}

// UpstreamWait returns how much of the interval [from, to] the flight spent
// waiting for its upstream: the overlap of the interval with the flight's
// upstream wait, never more than that wait's total. A follower that joined
// after the request was sent waits only for the rest of it. It is 0 after
// Close, and for a flight that never reached its upstream.
func (s *Subscription) UpstreamWait(from, to time.Time) time.Duration {
	f := s.flight()
	if f == nil {
		return 0
	}
	f.mu.Lock()
	u := f.up
	f.mu.Unlock()
	if u.total <= 0 {
		return 0
	}
	if from.Before(u.start) {
		from = u.start
	}
	if to.After(u.end) {
		to = u.end
	}
	if !to.After(from) {
		return 0
	}
	return min(to.Sub(from), u.total)
}
