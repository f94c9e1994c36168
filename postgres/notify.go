package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog/internal/wake"
)

// wakeChannel is the LISTEN/NOTIFY channel of every wake-up; a
// notification's payload is its topic.
const wakeChannel = "groundhog_wake"

// Waker delivers cross-replica wake-ups with LISTEN/NOTIFY: Publish is a
// pg_notify on the pool, and one dedicated connection LISTENs and fans the
// notifications out to this process's waiters. It is the wake-up transport
// when the deployment has PostgreSQL but no Redis.
//
// When the listening connection fails, Waker reconnects with backoff; a
// wake-up sent meanwhile is lost, which only delays its waiter until its own
// poll or deadline (every waiter has one).
type Waker struct {
	db     *DB
	hub    *wake.Hub
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Listen starts a Waker. It returns once the LISTEN is in place, so a
// Publish after Listen returns reaches the waiters of this process.
func (db *DB) Listen(ctx context.Context, log *slog.Logger) (*Waker, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := db.listenConn(ctx)
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	w := &Waker{db: db, hub: wake.New(), log: log, cancel: cancel}
	w.wg.Add(1)
	go w.loop(bg, conn)
	return w, nil
}

func (db *DB) listenConn(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: listen: %w", err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+wakeChannel); err != nil {
		conn.Close(context.Background())
		return nil, mapErr(fmt.Errorf("postgres: listen: %w", err))
	}
	return conn, nil
}

func (w *Waker) loop(ctx context.Context, conn *pgx.Conn) {
	defer w.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		if conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			c, err := w.db.listenConn(ctx)
			if err != nil {
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			w.log.Info("postgres: wake-up listener reconnected")
			conn, backoff = c, 100*time.Millisecond
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			conn.Close(context.Background())
			conn = nil
			if ctx.Err() != nil {
				return
			}
			w.log.Warn("postgres: wake-up listener lost its connection; reconnecting", "err", err)
			continue
		}
		w.hub.Deliver(n.Payload)
	}
}

// Close stops listening.
func (w *Waker) Close() error {
	w.cancel()
	w.wg.Wait()
	return nil
}

// Publish wakes the waiters of topic in every replica listening on this
// database. Errors are logged (and this process's waiters woken anyway).
func (w *Waker) Publish(topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := w.db.pool.Exec(ctx, "SELECT pg_notify($1, $2)", wakeChannel, topic); err != nil {
		w.log.Warn("postgres: publish wake-up failed", "err", err)
		w.hub.Deliver(topic)
	}
}

// Wake returns a channel that receives a value after a later Publish of
// topic in any replica; it is closed when ctx ends.
func (w *Waker) Wake(ctx context.Context, topic string) <-chan struct{} {
	return w.hub.Subscribe(ctx, topic)
}

var _ wake.Transport = (*Waker)(nil)

// IdemNotifier returns the idempotency.Notifier of this database's
// operation records, and from then on Complete, Fail and Release of db send
// the operation's wake-up themselves, inside their fenced UPDATE: one
// round trip completes the record and wakes every replica's waiters, and
// the wake-up goes out exactly when the record changed. Its Notify therefore
// does nothing (the idempotency Service calls it after those writes);
// Subscribe is Wake on the operation's topic.
func (w *Waker) IdemNotifier() IdemNotifier {
	w.db.notifyIdem.Store(true)
	return IdemNotifier{w: w}
}

// IdemNotifier is the wake-up of operation records over LISTEN/NOTIFY, sent
// by the store's own writes (see Waker.IdemNotifier).
type IdemNotifier struct{ w *Waker }

// Notify does nothing: the write that changed the record sent the wake-up.
func (IdemNotifier) Notify(tenant, key string) {}

// Subscribe returns a channel woken by a later change of the operation
// (tenant, key) in any replica; it is closed when ctx ends.
func (n IdemNotifier) Subscribe(ctx context.Context, tenant, key string) <-chan struct{} {
	return n.w.Wake(ctx, wake.Topic("i", tenant, key))
}
