// Package redis is groundhog's shared tier for several gateway replicas on
// Redis (go-redis v9): the exact response cache (groundhog.CacheStore, with
// the in-memory tier of package cache in front of it), cross-process
// wake-ups (idempotency.Notifier over pub/sub) and the claims of
// cross-replica coalescing (package distcoalesce).
//
// # Keys
//
// Every key starts with Options.Prefix (default "groundhog:"), so several
// deployments or test runs can share one Redis. A cache entry lives at
//
//	<prefix>c:<len(tenant)>.<tenant>:<request hash>
//
// — the tenant's length makes the name unambiguous whatever characters the
// tenant holds, and all of a tenant's entries share one key prefix. The
// sorted set <prefix>cache-expiry indexes the entries that expire, for
// PurgeCache; Redis itself expires them natively (PEXPIRE).
//
// # Entries
//
// An entry is stored as a versioned header and a CRC-32C checksum over the
// JSON of the entry. An entry whose header, length or checksum does not
// check out, or that names another key, is a miss: it is deleted (only if
// it is still the bytes that were read) and never served. Entries whose
// encoded size is over Options.MaxEntryBytes (default 4 MiB) are not
// written to Redis at all: PutCache drops any older entry of the key and
// succeeds, so the memory tier of the replica that made the entry still
// serves it while other replicas miss. That keeps one large response from
// taking Redis memory and bandwidth that would serve thousands of small
// ones.
//
// # Errors
//
// Connection failures and timeouts are *groundhog.Error with code
// EUNAVAILABLE.
package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog/internal/groupcommit"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/wake"
)

// Defaults of Options.
const (
	DefaultPrefix        = "groundhog:"
	DefaultMaxEntryBytes = 4 << 20
)

// Options configure a DB.
type Options struct {
	// Prefix starts every key and pub/sub channel; default DefaultPrefix.
	Prefix string
	// MaxEntryBytes is the largest encoded cache entry written to Redis;
	// default DefaultMaxEntryBytes.
	MaxEntryBytes int
	// PoolSize is the connection pool size; 0 = go-redis's default (10 per
	// CPU).
	PoolSize int
	// StartDegraded lets Open succeed when Redis cannot be reached: the DB
	// starts in the degraded mode (see health.go) and joins Redis when it
	// answers, so a replica restarted during a Redis outage still serves.
	StartDegraded bool
	Logger        *slog.Logger
}

// DB is groundhog's store in one Redis. It is safe for concurrent use.
type DB struct {
	rdb      *goredis.Client
	prefix   string
	maxEntry int
	log      *slog.Logger

	hub    *wake.Hub
	pubsub *goredis.PubSub
	wg     sync.WaitGroup
	closed atomic.Bool
	down   atomic.Bool // degraded: see health.go

	reads               groupcommit.Queue[*read] // readbatch.go
	readKeys, readTrips atomic.Uint64

	corrupt atomic.Uint64 // corrupt entries found (and deleted)
	skipped atomic.Uint64 // entries too large for Redis
}

var _ groundhog.CacheStore = (*DB)(nil)

// Open connects to the Redis at url (redis:// or rediss://, as go-redis's
// ParseURL accepts), checks that it answers, and subscribes to the wake-up
// channel.
func Open(ctx context.Context, url string, o Options) (*DB, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		// url.Parse's error quotes the whole URL, password included.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, groundhog.WrapError(groundhog.EINVALID, "redis: invalid URL", err)
	}
	if o.PoolSize > 0 {
		opt.PoolSize = o.PoolSize
	}
	// Fail fast when Redis is down: the cache is an optimisation, and a
	// request must not wait long for it.
	opt.DialTimeout = 2 * time.Second
	opt.ReadTimeout = 2 * time.Second
	opt.WriteTimeout = 2 * time.Second
	opt.MaxRetries = 1
	db := &DB{rdb: goredis.NewClient(opt), prefix: o.Prefix, maxEntry: o.MaxEntryBytes, log: o.Logger, hub: wake.New()}
	if db.prefix == "" {
		db.prefix = DefaultPrefix
	}
	if db.maxEntry <= 0 {
		db.maxEntry = DefaultMaxEntryBytes
	}
	if db.log == nil {
		db.log = slog.New(slog.DiscardHandler)
	}
	routeLibraryLog(db.log)
	if err := db.rdb.Ping(ctx).Err(); err != nil {
		err = mapErr(fmt.Errorf("redis: connect: %w", err))
		if !o.StartDegraded || groundhog.ErrorCode(err) != groundhog.EUNAVAILABLE {
			db.rdb.Close()
			return nil, err
		}
		db.failed(err)
		// go-redis subscribes once it can connect, and again after every
		// reconnect.
		db.pubsub = db.rdb.Subscribe(context.WithoutCancel(ctx), db.wakeChannel())
		db.deliver()
		return db, nil
	}
	if err := db.listen(ctx); err != nil {
		db.rdb.Close()
		return nil, err
	}
	return db, nil
}

// Close stops the subscription and closes the connections.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	if db.pubsub != nil {
		_ = db.pubsub.Close()
	}
	db.wg.Wait()
	return db.rdb.Close()
}

// Ping checks that Redis answers (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.rdb.Ping(ctx).Err(); err != nil {
		return mapErr(fmt.Errorf("redis: ping: %w", err))
	}
	return nil
}

// Prefix returns the key prefix.
func (db *DB) Prefix() string { return db.prefix }

// Client returns the underlying go-redis client (for packages that keep
// their own keys under Prefix, such as distcoalesce).
func (db *DB) Client() *goredis.Client { return db.rdb }

// Stats are the counters of the cache store.
type Stats struct {
	Corrupt  uint64 // entries that did not decode: deleted, served as misses
	TooLarge uint64 // entries over MaxEntryBytes, kept out of Redis
	// Reads are the cache entries read with a round trip of their own or
	// in a batch (readbatch.go), ReadTrips the round trips they took:
	// Reads ÷ ReadTrips is the mean batch.
	Reads, ReadTrips uint64
}

// Stats returns the counters since Open.
func (db *DB) Stats() Stats {
	return Stats{Corrupt: db.corrupt.Load(), TooLarge: db.skipped.Load(), Reads: db.readKeys.Load(), ReadTrips: db.readTrips.Load()}
}

// mapErr gives err a groundhog code: EUNAVAILABLE for failures of Redis or
// the way to it.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var ge *groundhog.Error
	if errors.As(err, &ge) {
		return err
	}
	var netErr net.Error
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, goredis.ErrClosed) ||
		errors.As(err, &netErr) || errors.Is(err, net.ErrClosed) || isServerBusy(err) {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "cache store unavailable", err)
	}
	return err
}

func isServerBusy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "LOADING") || strings.Contains(s, "connection refused") ||
		strings.Contains(s, "EOF") || strings.Contains(s, "connection reset") || strings.Contains(s, "i/o timeout")
}

var _ wake.Transport = (*DB)(nil)

// go-redis logs through one process-wide logger that writes plain lines to
// stderr: while Redis is down, "failed to dial after 5 attempts" twice a
// second, around the log format and in spite of the degraded mode's one
// line (health.go). Its lines go instead to the Logger of the DB opened
// last, at debug level.
var libraryLog struct {
	once sync.Once
	to   atomic.Pointer[slog.Logger]
}

type libraryLogger struct{}

func (libraryLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := libraryLog.to.Load(); l != nil {
		l.DebugContext(ctx, fmt.Sprintf(format, v...), "source", "go-redis")
	}
}

func routeLibraryLog(l *slog.Logger) {
	libraryLog.to.Store(l)
	libraryLog.once.Do(func() { goredis.SetLogger(libraryLogger{}) })
}
