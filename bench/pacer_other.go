//go:build !linux

package bench

import "time"

// pacer sleeps the open-loop sender until each request is due; elsewhere
// than on Linux it sleeps on the runtime's timers.
type pacer struct{}

func newPacer() *pacer { return &pacer{} }

// until returns at t or later, never before.
func (*pacer) until(t time.Time) {
	for {
		w := time.Until(t)
		if w <= 0 {
			return
		}
		time.Sleep(w)
	}
}

func (*pacer) stop() {}
