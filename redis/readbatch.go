package redis

import (
	"context"
	"fmt"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog/internal/groupcommit"
)

// Cache reads are batched as the databases batch their writes
// (internal/groupcommit): the first reader to find no read in flight sends
// its GET alone; readers that come while a read is in flight queue, and the
// first of them, once it returns, sends every queued key in one MGET. Under
// load a round trip then serves many hits, and its system calls (most of a
// read's cost on the gateway, and on Redis) are shared; a lone read costs
// what it did. A read waits for at most the read in flight before its own.
// A batch runs under its first reader's context without its cancellation
// (the client's timeouts bound it): one caller giving up does not fail the
// others' reads.

// read is one GET in a read batch.
type read struct {
	ctx context.Context
	key string
	val []byte
	err error
	groupcommit.Waiter
}

var readPool = sync.Pool{New: func() any { return &read{Waiter: groupcommit.NewWaiter()} }}

// get reads key: its bytes, goredis.Nil when absent, or the error of the
// round trip that carried it.
func (db *DB) get(ctx context.Context, key string) ([]byte, error) {
	r := readPool.Get().(*read)
	r.ctx, r.key = ctx, key
	db.reads.Run(r, db.runReads)
	b, err := r.val, r.err
	*r = read{Waiter: r.Waiter}
	readPool.Put(r)
	return b, err
}

// runReads sends batch's reads in one round trip.
func (db *DB) runReads(batch []*read) {
	db.readTrips.Add(1)
	db.readKeys.Add(uint64(len(batch)))
	if len(batch) == 1 {
		r := batch[0]
		r.val, r.err = db.rdb.Get(r.ctx, r.key).Bytes()
		return
	}
	keys := make([]string, len(batch))
	for i, r := range batch {
		keys[i] = r.key
	}
	vals, err := db.rdb.MGet(context.WithoutCancel(batch[0].ctx), keys...).Result()
	if err == nil && len(vals) != len(batch) {
		err = fmt.Errorf("redis: MGET of %d keys answered %d values", len(batch), len(vals))
	}
	for i, r := range batch {
		if err != nil {
			r.err = err
			continue
		}
		s, ok := vals[i].(string)
		if !ok {
			r.err = goredis.Nil
			continue
		}
		r.val = []byte(s)
	}
}
