package bench

import "time"

// until returns at t or later, never before: it sleeps (sleep, one per
// platform) for what is left until t, again if woken early.
func (p *pacer) until(t time.Time) {
	for {
		w := time.Until(t)
		if w <= 0 {
			return
		}
		p.sleep(w)
	}
}
