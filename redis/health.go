package redis

import (
	"context"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Degraded mode.
//
// The first time an operation fails because Redis cannot be reached, the
// DB turns degraded: it logs once, and until Redis answers again every
// cache operation returns at once without touching the network — GetCache
// is a miss, PutCache and DeleteCache succeed without effect, PurgeCache
// does nothing — so the in-memory tier in front of it keeps serving and
// storing entries, per replica, and no request waits for a dead Redis.
// Wake-ups are delivered to this process only. A probe pings Redis every
// probeInterval; its first success ends the degraded mode (logged once).
// Entries written or deleted while degraded are not in Redis afterwards:
// a delete (Groundhog-Cache: refresh writes anew anyway) may leave an older
// entry behind there until its TTL.

// probeInterval is the ping interval while degraded.
const probeInterval = time.Second

// Degraded reports whether Redis is considered down.
func (db *DB) Degraded() bool { return db.down.Load() }

// failed inspects err from a Redis operation: an EUNAVAILABLE error makes
// the DB degraded (and starts the probe). It returns err.
func (db *DB) failed(err error) error {
	if groundhog.ErrorCode(err) != groundhog.EUNAVAILABLE || db.closed.Load() {
		return err
	}
	if db.down.Swap(true) {
		return err
	}
	db.log.Warn("redis unavailable: caching in each replica's memory only until it answers again", "err", err)
	db.wg.Add(1)
	go db.probe()
	return err
}

func (db *DB) probe() {
	defer db.wg.Done()
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for range t.C {
		if db.closed.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeInterval)
		err := db.rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			db.down.Store(false)
			db.log.Info("redis answers again: shared cache restored")
			return
		}
	}
}
