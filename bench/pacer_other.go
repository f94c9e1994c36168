//go:build !linux

package bench

import "time"

// pacer sleeps the open-loop sender until each request is due; elsewhere
// than on Linux it sleeps on the runtime's timers.
type pacer struct{}

func newPacer() *pacer { return &pacer{} }

func (*pacer) sleep(d time.Duration) { time.Sleep(d) }

func (*pacer) stop() {}
