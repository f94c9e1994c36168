package coalesce

import "github.com/groundhog-ai/groundhog"

// Tap receives a copy of a flight's output as fn publishes it: the head,
// then every event, in order, from fn's goroutine. The gateway taps a
// flight to mirror it to the other replicas (package distcoalesce); a Tap
// must not block (it queues and returns).
type Tap interface {
	Head(status int, contentType string, streamed bool)
	Event(ev groundhog.Event)
}

// Sink is a Tap whose End receives the flight's outcome once its work is
// done: the final Response (after the cache write), or nil when the flight
// failed. End is called exactly once.
type Sink interface {
	Tap
	End(resp *groundhog.Response)
}

// SetTap makes p forward every later Head and Event to t, after publishing
// it to the flight's own subscribers (a nil t stops forwarding). Call it
// from fn's goroutine.
func (p *Publisher) SetTap(t Tap) { p.tap = t }
