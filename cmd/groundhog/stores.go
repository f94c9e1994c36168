package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/distcoalesce"
	"github.com/groundhog-ai/groundhog/distfanout"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/internal/wake"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/postgres"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// database is what a durable backend (sqlite, postgres) implements:
// every store interface of the root package. openDatabase is the one place
// that knows which backends exist.
type database interface {
	groundhog.CacheStore
	groundhog.LedgerStore
	groundhog.OperationStore
	groundhog.KeyStore
	groundhog.StateStore
	groundhog.EvidenceStore
	groundhog.ResourceStore // the gateway's record of Gemini explicit caches per tenant
	Ping(ctx context.Context) error
	Close() error
	// GroupStats counts the writes of operation records and cache entries
	// that went through the database's group commit, and the transactions
	// they took.
	GroupStats() (writes, commits int64)
}

var (
	_ database = (*sqlite.DB)(nil)
	_ database = (*postgres.DB)(nil)
)

// isPostgresURL reports whether --db names a PostgreSQL database rather
// than a SQLite file.
func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openDatabase opens the durable store of cfg.DB: a SQLite file, or a
// PostgreSQL database (migrated at open under an advisory lock, so replicas
// starting together apply each migration once) whose pool size and
// statement timeout come from cfg.Postgres unless the URL sets them.
func openDatabase(ctx context.Context, cfg *config.Config) (database, error) {
	if !isPostgresURL(cfg.DB) {
		db, err := sqlite.Open(ctx, cfg.DB)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", cfg.DB, err)
		}
		return db, nil
	}
	u, err := postgresURL(cfg)
	if err != nil {
		return nil, err
	}
	db, err := postgres.Open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", redact(cfg.DB), err)
	}
	return db, nil
}

// postgresURL adds the pool size (pgxpool's pool_max_conns) and the
// server-side statement_timeout to cfg.DB, where the URL does not already
// set them.
func postgresURL(cfg *config.Config) (string, error) {
	u, err := url.Parse(cfg.DB)
	if err != nil {
		return "", fmt.Errorf("--db: invalid PostgreSQL URL: %w", errors.Unwrap(err))
	}
	q := u.Query()
	if !q.Has("pool_max_conns") {
		q.Set("pool_max_conns", strconv.Itoa(int(cfg.Postgres.MaxConns)))
	}
	if !q.Has("statement_timeout") && cfg.Postgres.StatementTimeout > 0 {
		q.Set("statement_timeout", strconv.FormatInt(cfg.Postgres.StatementTimeout.Milliseconds(), 10))
	}
	if !q.Has("application_name") {
		q.Set("application_name", "groundhog")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// redact hides the password of a URL for logs and errors, also of one that
// does not parse (config.RedactUserinfo); a SQLite path is returned as it
// is, whatever it holds.
func redact(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return config.RedactUserinfo(s)
}

// stores are the backends of one serve process.
type stores struct {
	// DB keeps operation records, the ledger and keys (and the cache
	// entries when Cache is DB).
	DB database
	// Cache is the shared tier behind the in-memory cache: DB, or Redis.
	Cache groundhog.CacheStore
	// Redis is the Redis backend, nil with --cache memory.
	Redis *redis.DB
	// Waker carries wake-ups across replicas: Redis pub/sub with --cache
	// redis, else LISTEN/NOTIFY on PostgreSQL, nil on SQLite (one process).
	Waker wake.Transport
	// FanOut holds warm-then-fan-out across replicas, with Redis.
	FanOut *distfanout.Shared
	// Describe says which stores are in use, without secrets.
	Describe string

	closers []func() error
}

// openStores opens the stores cfg names. On error, whatever was opened is
// closed.
func openStores(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ *stores, err error) {
	st := &stores{}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	st.DB, st.Cache = db, db
	st.closers = append(st.closers, db.Close)
	desc := "database sqlite " + cfg.DB
	if lite, ok := db.(*sqlite.DB); ok {
		// Before serving, so no upload of this process is spooling yet.
		switch n, err := lite.SweepEvidenceSpool(); {
		case err != nil:
			log.Warn("sweep of the evidence spool failed", "removed", n, "err", err)
		case n > 0:
			log.Info("evidence spool files left by an interrupted upload removed", "files", n)
		}
		st.closers = append(st.closers, sweepOrphanEvidence(lite, log))
	}
	if pg, ok := db.(*postgres.DB); ok {
		desc = fmt.Sprintf("database postgres %s (pool %d, statement timeout %s)", redact(cfg.DB), cfg.Postgres.MaxConns, cfg.Postgres.StatementTimeout)
		st.closers = append(st.closers, maintainLedger(pg, cfg.Postgres.LedgerRetention, log))
		desc += ledgerRetentionDesc(cfg.Postgres.LedgerRetention)
		if cfg.Cache.Backend == "memory" {
			w, err := pg.Listen(ctx, log)
			if err != nil {
				return nil, fmt.Errorf("listen for wake-ups: %w", err)
			}
			st.Waker = w
			st.closers = append(st.closers, w.Close)
			desc += ", wake-ups LISTEN/NOTIFY"
		}
	}
	tier := "cache memory tier + "
	if cfg.Cache.MemoryBytes < 0 {
		tier = "cache without a memory tier: " // --cache-memory-bytes -1: every look-up reads the store
	}
	cdesc := tier + "the database"
	if cfg.Cache.Backend != "memory" {
		rdb, err := redis.Open(ctx, cfg.Cache.Backend, redis.Options{Prefix: cfg.Cache.RedisPrefix,
			MaxEntryBytes: int(cfg.Cache.RedisMaxEntryBytes), StartDegraded: true, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("open cache %s: %w", redact(cfg.Cache.Backend), err)
		}
		st.Redis, st.Cache, st.Waker = rdb, rdb, rdb
		st.FanOut = distfanout.New(distfanout.Options{Client: rdb.Client(), Prefix: rdb.Prefix(), Waker: rdb,
			Degraded: rdb.Degraded, Logger: log})
		st.closers = append(st.closers, rdb.Close)
		cdesc = fmt.Sprintf("%sredis %s (prefix %q, entries up to %d bytes), wake-ups pub/sub, flights and fan-out holds across replicas",
			tier, redact(cfg.Cache.Backend), cfg.Cache.RedisPrefix, cfg.Cache.RedisMaxEntryBytes)
	}
	st.Describe = desc + "; " + cdesc
	return st, nil
}

// cacheLocal reports whether the cache's store is this process's alone:
// SQLite, which one serve opens (its journal directory is locked; several
// processes on one file would not coalesce their calls either).
func (st *stores) cacheLocal() bool {
	_, ok := st.Cache.(*sqlite.DB)
	return ok
}

// Ready reports whether the database answers (for /readyz).
func (st *stores) Ready(ctx context.Context) error { return st.DB.Ping(ctx) }

// Close closes every store, the last opened first.
func (st *stores) Close() error {
	var errs []error
	for i := len(st.closers) - 1; i >= 0; i-- {
		errs = append(errs, st.closers[i]())
	}
	st.closers = nil
	return errors.Join(errs...)
}

// notifier is the idempotency stage's cross-replica wake-up, nil on one
// SQLite process (in-process wake-ups need none).
func (st *stores) notifier() idempotency.Notifier {
	if st.Waker == nil {
		return nil
	}
	if w, ok := st.Waker.(*postgres.Waker); ok {
		return w.IdemNotifier() // the completing UPDATE sends the wake-up
	}
	return wake.IdemNotifier{T: st.Waker}
}

// defaultJournalDir is the ledger journal's directory when none is
// configured: beside a SQLite file; for PostgreSQL, a directory in the
// working directory named by the listen address, so several replicas on
// one machine keep separate journals and each finds its own again after a
// crash.
func defaultJournalDir(cfg *config.Config) string {
	if !isPostgresURL(cfg.DB) {
		return cfg.DB + ".journal"
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, cfg.Addr)
	return "groundhog-" + name + ".journal"
}

// flights is the cross-replica coalescing of cacheable calls: over Redis
// when the cache is there, else none (the gateway coalesces in process).
// The claim's lease is the idempotency lease; a waiter waits at most the
// upstream timeout.
func (st *stores) flights(cfg *config.Config, log *slog.Logger) gateway.Flights {
	if st.Redis == nil {
		return nil
	}
	return distcoalesce.New(distcoalesce.Options{Client: st.Redis.Client(), Prefix: st.Redis.Prefix(), Waker: st.Redis,
		Lease: cfg.Idempotency.Lease, MaxWait: cfg.UpstreamTimeout, Degraded: st.Redis.Degraded, Logger: log, ClaimLook: st.Redis.ClaimLook,
		RideWithPut: st.Redis.RideWithPut})
}

// fanOut is the cross-replica warm-then-fan-out, nil without Redis (each
// replica holds for its own writers).
func (st *stores) fanOut() fanout.Shared {
	if st.FanOut == nil {
		return nil // not a nil *distfanout.Shared in the interface
	}
	return st.FanOut
}

// degraded lists the stores running in a degraded mode, for /readyz.
func (st *stores) degraded() []string {
	if st.Redis != nil && st.Redis.Degraded() {
		return []string{"cache: redis unavailable, serving from each replica's memory tier"}
	}
	return nil
}

// register adds the stores' gauges to the metrics.
func (st *stores) register(m *metrics.Metrics) {
	m.CounterFunc("groundhog_store_group_writes_total", "Writes of idempotency records and cache entries that went through the database's group commit (concurrent writes committed together).",
		func() float64 { w, _ := st.DB.GroupStats(); return float64(w) })
	m.CounterFunc("groundhog_store_group_commits_total", "Transactions the group commit's writes took: writes ÷ commits is its mean batch.",
		func() float64 { _, c := st.DB.GroupStats(); return float64(c) })
	if pg, ok := st.DB.(*postgres.DB); ok {
		m.CounterFunc("groundhog_store_cache_reads_total", "Cache entries looked up in PostgreSQL, alone or batched with concurrent look-ups.",
			func() float64 { r, _ := pg.ReadStats(); return float64(r) })
		m.CounterFunc("groundhog_store_cache_read_statements_total", "Statements those look-ups took: look-ups ÷ statements is the mean batch.",
			func() float64 { _, s := pg.ReadStats(); return float64(s) })
	}
	if st.Redis == nil {
		return
	}
	m.CounterFuncs("groundhog_fan_out_claims_total", "Cross-replica warm-then-fan-out claims in Redis by answer: claimed (this replica writes the prefix), busy (held for another replica's writer), warm (already written), error (Redis failed: held within the replica).",
		"answer", func() map[string]float64 {
			s := st.FanOut.Stats()
			return map[string]float64{"claimed": float64(s.Claimed), "busy": float64(s.Busy), "warm": float64(s.Warm), "error": float64(s.Errors)}
		})
	m.CounterFunc("groundhog_cache_redis_reads_total", "Cache entries read from Redis, alone or batched with concurrent reads.",
		func() float64 { return float64(st.Redis.Stats().Reads) })
	m.CounterFunc("groundhog_cache_redis_read_round_trips_total", "Round trips the cache's Redis reads took: reads ÷ round trips is the mean batch.",
		func() float64 { return float64(st.Redis.Stats().ReadTrips) })
	m.GaugeFunc("groundhog_cache_redis_degraded", "1 while Redis is unavailable and the cache serves from each replica's memory tier.", func() float64 {
		if st.Redis.Degraded() {
			return 1
		}
		return 0
	})
}

// sweepOrphanEvidence removes, once at start and in the background, the
// evidence chunks an upload killed mid-way left in a SQLite database (a
// PostgreSQL upload is one transaction and leaves none). The function it
// returns stops the sweep and waits for it (before the database closes).
func sweepOrphanEvidence(db *sqlite.DB, log *slog.Logger) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := db.SweepOrphanEvidence(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("sweep of orphan evidence chunks failed", "removed", n, "err", err)
		case n > 0:
			log.Info("evidence chunks left by an interrupted upload removed", "chunks", n)
		}
	}()
	return func() error {
		cancel()
		<-done
		return nil
	}
}
