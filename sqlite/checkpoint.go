package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// The writer connection does not checkpoint the WAL itself
// (wal_autocheckpoint 0): a checkpointer of its own does, in the
// background. SQLite's automatic checkpoint runs inside the commit that
// takes the WAL past 1000 pages, on the committing connection: it copies
// the WAL into the main file and syncs both, which on a disk takes tens of
// milliseconds, and every write behind it — an idempotency lease a client
// is waiting on — waits for the one writer connection all that time. At
// 1,000 idempotent calls a second on a local disk, an idempotent miss's
// p99 was 15–197 ms with it and 7–10 ms without it (design record 0015).
// A PASSIVE checkpoint on another connection copies the same frames
// without taking the write lock, so commits go on while it runs; the syncs
// are the same ones, made off the request path. Durability is unchanged: a
// committed transaction is in the WAL either way, and the WAL is synced
// before its frames are copied.

// checkpointEvery is how often the checkpointer copies the WAL into the
// main file. A checkpoint with nothing new to copy does no I/O.
var checkpointEvery = time.Second

// writerCheckpoints restores SQLite's automatic checkpoint on the writer
// and starts no checkpointer (the benchmark compares).
var writerCheckpoints bool

// checkpointer runs PASSIVE checkpoints on its own connection until stop.
type checkpointer struct {
	conn *sql.DB
	stop chan struct{}
	done sync.WaitGroup
}

func startCheckpointer(conn *sql.DB, every time.Duration) *checkpointer {
	c := &checkpointer{conn: conn, stop: make(chan struct{})}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				// An error (another process checkpointing the same file,
				// a full disk) is tried again at the next tick; the WAL
				// only grows meanwhile, and the last connection to close
				// checkpoints it.
				_, _, _ = c.run(context.Background())
			}
		}
	}()
	return c
}

// run copies what it can of the WAL into the main file without blocking
// writers or readers, and returns the WAL's frames and how many of them
// are in the main file.
func (c *checkpointer) run(ctx context.Context) (log, copied int, err error) {
	var busy int
	err = c.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied)
	return log, copied, err
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	c.done.Wait()
	return c.conn.Close()
}
