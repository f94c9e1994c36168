package gateway

import (
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// stageLog collects a call's timed pipeline stages for its ledger row's
// observers (trace spans). A call has one only when the Server times
// stages (a tracer is configured): without, the call is ≈ 400 bytes
// smaller on every request. The upstream stage is timed on the flight's
// goroutine, the others on the handler's: hence the lock.
type stageLog struct {
	mu sync.Mutex
	s  [maxStages]groundhog.Stage // a call has at most one of each: no allocation
	n  int

	upstream time.Time // the start of the flight's upstream stage (the flight's own)
}

// maxStages bounds the stages of one call (admit, idempotency, cache,
// fan-out hold, upstream, and one spare).
const maxStages = 6

// stage records c's stage name from start to now, on the gateway's clock
// (as the row's time and latency are).
func (s *Server) stage(c *call, name string, start time.Time) {
	if !s.stagesOn || c.stages == nil {
		return
	}
	end := s.clock.Now()
	c.stages.mu.Lock()
	if c.stages.n < maxStages {
		c.stages.s[c.stages.n] = groundhog.Stage{Name: name, Start: start, End: end}
		c.stages.n++
	}
	c.stages.mu.Unlock()
}

// stageStart returns the start of a stage to time: now, or the zero time
// when stages are not timed (stage then ignores it), which saves a clock
// read per stage on every call.
func (s *Server) stageStart() time.Time {
	if !s.stagesOn {
		return time.Time{}
	}
	return s.clock.Now()
}

// after returns the time now, read after t (a reading of s.clock): on the
// system clock, t moved on by the time since it, which reads the monotonic
// clock only where a fresh reading would also read the wall clock (each
// read costs a tenth of a microsecond or more on some virtual machines);
// on any other clock, its reading. A call reads the full clock once on
// arrival and derives its later times from that reading this way.
func (s *Server) after(t time.Time) time.Time {
	if !s.sysClk || t.IsZero() {
		return s.clock.Now()
	}
	return t.Add(time.Since(t))
}

// stageTimes returns a copy of the stages recorded so far.
func (c *call) stageTimes() []groundhog.Stage {
	if c.stages == nil {
		return nil
	}
	c.stages.mu.Lock()
	defer c.stages.mu.Unlock()
	if c.stages.n == 0 {
		return nil
	}
	return append([]groundhog.Stage(nil), c.stages.s[:c.stages.n]...)
}
