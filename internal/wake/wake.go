// Package wake fans cross-process wake-ups out to the goroutines of this
// process that wait for them. The transports (Redis pub/sub, PostgreSQL
// LISTEN/NOTIFY) deliver topics to a Hub; waiters subscribe to topics.
package wake

import (
	"context"
	"strconv"
	"sync"
)

// Hub maps topics to the channels of their waiters. The zero value is not
// usable: create one with New. It is safe for concurrent use.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// New returns an empty Hub.
func New() *Hub { return &Hub{subs: map[string]map[chan struct{}]struct{}{}} }

// Subscribe returns a channel that receives a value after every later
// Deliver of topic (at most one value is buffered: a wake-up is not a
// message, and a waiter re-reads the state it waits for). The subscription
// ends, and the channel is closed, when ctx ends.
func (h *Hub) Subscribe(ctx context.Context, topic string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	set := h.subs[topic]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.subs[topic] = set
	}
	set[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		delete(set, ch)
		if len(h.subs[topic]) == 0 {
			delete(h.subs, topic)
		}
		h.mu.Unlock()
		close(ch)
	})
	return ch
}

// Deliver wakes every current subscriber of topic without blocking.
func (h *Hub) Deliver(topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[topic] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Waiters returns how many subscriptions are open (for tests and metrics).
func (h *Hub) Waiters() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.subs {
		n += len(set)
	}
	return n
}

// Transport carries wake-ups between processes: Publish wakes the waiters
// of topic in every process (this one included), Wake subscribes this
// process to topic like Hub.Subscribe. redis.DB and postgres.Waker are the
// transports.
type Transport interface {
	Publish(topic string)
	Wake(ctx context.Context, topic string) <-chan struct{}
}

// Topic names a wake-up: kind ("i" for operation records, "f" for
// cross-replica flights), then the tenant (prefixed by its length, so the
// name is unambiguous whatever the tenant holds) and the key.
func Topic(kind, tenant, key string) string {
	return kind + ":" + strconv.Itoa(len(tenant)) + "." + tenant + ":" + key
}

// IdemNotifier is an idempotency.Notifier over a Transport: `Prefer: wait`
// on one replica wakes when another completes the operation.
type IdemNotifier struct{ T Transport }

// Notify announces that the operation (tenant, key) changed.
func (n IdemNotifier) Notify(tenant, key string) { n.T.Publish(Topic("i", tenant, key)) }

// Subscribe returns a channel woken by a later Notify of (tenant, key) in
// any process; it is closed when ctx ends.
func (n IdemNotifier) Subscribe(ctx context.Context, tenant, key string) <-chan struct{} {
	return n.T.Wake(ctx, Topic("i", tenant, key))
}
