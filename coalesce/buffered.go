package coalesce

// Buffered reports whether Next would return an event at once: one was
// published that s has not read yet. A relay uses it to flush only before
// it would wait (events already there go out in one write), as a proxy
// flushes per read rather than per event. False after Close.
func (s *Subscription) Buffered() bool {
	f := s.flight()
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return s.next < len(f.events)
}
