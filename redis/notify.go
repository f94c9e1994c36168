package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// wakeChannel is the one pub/sub channel of every wake-up: a message is a
// topic, and every replica delivers it to its own waiters. One channel (not
// one per key) keeps one subscription per process whatever the number of
// waiters; the cost is that every replica sees every wake-up, which are
// small and as frequent as idempotent or coalesced completions.
func (db *DB) wakeChannel() string { return db.prefix + "wake" }

// listen subscribes to the wake-up channel and waits for the confirmation,
// so a Subscribe after Open cannot miss a Publish made after it.
func (db *DB) listen(ctx context.Context) error {
	db.pubsub = db.rdb.Subscribe(ctx, db.wakeChannel())
	if _, err := db.pubsub.Receive(ctx); err != nil {
		_ = db.pubsub.Close()
		return mapErr(fmt.Errorf("redis: subscribe: %w", err))
	}
	db.deliver()
	return nil
}

// deliver hands every message of the subscription to the hub until Close.
func (db *DB) deliver() {
	ch := db.pubsub.Channel()
	db.wg.Add(1)
	go func() {
		defer db.wg.Done()
		for m := range ch {
			db.hub.Deliver(m.Payload)
		}
	}()
}

// PublishChannel returns the channel Publish sends its topics on, for a
// caller that publishes a topic itself in a script or transaction of its
// own on c; ok is false when c is not this store's client, or while Redis
// is degraded (Publish then wakes this process's waiters without Redis).
func (db *DB) PublishChannel(c *goredis.Client) (channel string, ok bool) {
	return db.wakeChannel(), c == db.rdb && !db.Degraded()
}

// Publish wakes the waiters of topic in every process subscribed to this
// Redis and prefix, this one included. Errors are logged: a lost wake-up
// only delays a waiter until its own poll or deadline.
func (db *DB) Publish(topic string) {
	if db.Degraded() {
		db.hub.Deliver(topic)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := db.rdb.Publish(ctx, db.wakeChannel(), topic).Err(); err != nil {
		if db.failed(mapErr(err)) == nil || !db.Degraded() {
			db.log.Warn("redis: publish wake-up failed", "err", err)
		}
		// Wake this process's own waiters anyway.
		db.hub.Deliver(topic)
	}
}

// Wake returns a channel that receives a value after a later Publish of
// topic anywhere; see wake.Hub.Subscribe.
func (db *DB) Wake(ctx context.Context, topic string) <-chan struct{} {
	return db.hub.Subscribe(ctx, topic)
}
