package bench

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The sender never starts a request before its scheduled time, whether the
// time is ahead, now or already past.
func TestPacerNeverWakesEarly(t *testing.T) {
	p := newPacer()
	defer p.stop()
	for i := range 300 {
		due := time.Now().Add(time.Duration(rand.IntN(1500)-300) * time.Microsecond)
		p.until(due)
		if now := time.Now(); now.Before(due) {
			t.Fatalf("wait %d returned %v before its time", i, due.Sub(now))
		}
	}
}
