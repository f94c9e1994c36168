package gateway

import (
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// stageLog collects a call's timed pipeline stages for its ledger row's
// observers (trace spans). The upstream stage is timed on the flight's
// goroutine, the others on the handler's: hence the lock.
type stageLog struct {
	mu sync.Mutex
	s  []groundhog.Stage
}

// stage records c's stage name from start to now, on the gateway's clock
// (as the row's time and latency are).
func (s *Server) stage(c *call, name string, start time.Time) {
	end := s.clock.Now()
	c.stages.mu.Lock()
	c.stages.s = append(c.stages.s, groundhog.Stage{Name: name, Start: start, End: end})
	c.stages.mu.Unlock()
}

// stageTimes returns a copy of the stages recorded so far.
func (c *call) stageTimes() []groundhog.Stage {
	c.stages.mu.Lock()
	defer c.stages.mu.Unlock()
	if len(c.stages.s) == 0 {
		return nil
	}
	return append([]groundhog.Stage(nil), c.stages.s...)
}
