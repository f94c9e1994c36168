package wake

import (
	"context"
	"testing"
)

func TestHubDeliversToTopicSubscribersOnly(t *testing.T) {
	h := New()
	ctx, cancel := context.WithCancel(context.Background())
	a1 := h.Subscribe(ctx, Topic("i", "acme", "k"))
	a2 := h.Subscribe(ctx, Topic("i", "acme", "k"))
	other := h.Subscribe(ctx, Topic("i", "acme:k", "")) // same characters, another topic
	h.Deliver(Topic("i", "acme", "k"))
	h.Deliver(Topic("i", "acme", "k")) // a second wake-up while one is buffered: dropped, no block
	for i, ch := range []<-chan struct{}{a1, a2} {
		select {
		case <-ch:
		default:
			t.Errorf("subscriber %d not woken", i)
		}
	}
	select {
	case <-other:
		t.Error("a wake-up reached another topic")
	default:
	}
	if h.Waiters() != 3 {
		t.Errorf("Waiters = %d, want 3", h.Waiters())
	}
	cancel()
	for _, ch := range []<-chan struct{}{a1, a2, other} {
		for range ch { // drains a buffered value, ends when closed
		}
	}
	if h.Waiters() != 0 {
		t.Errorf("Waiters after cancel = %d, want 0", h.Waiters())
	}
	h.Deliver(Topic("i", "acme", "k")) // no subscribers: nothing to do
}
