// Package postgres is groundhog's shared store for several gateway replicas:
// groundhog.CacheStore, groundhog.LedgerStore, groundhog.OperationStore and
// groundhog.KeyStore over PostgreSQL (pgx v5, pgxpool).
//
// # Storage conventions
//
// The same as package sqlite, so both backends behave alike to the
// nanosecond: times are BIGINT unix nanoseconds UTC (NULL for the zero
// time.Time; timestamptz would round to microseconds and move the
// "ExpiresAt == now is expired" boundaries), money BIGINT picodollars,
// durations BIGINT nanoseconds. A stored groundhog.Response is a set of
// columns plus the body (bytea) and its SSE events as the parallel arrays
// event_names text[] and event_data bytea[].
//
// # Concurrency
//
// Begin runs in one READ COMMITTED transaction: INSERT … ON CONFLICT DO
// NOTHING claims a new key; otherwise SELECT … FOR UPDATE locks the
// existing record, so concurrent Begins on one key across replicas are
// serialized by the row lock and exactly one claims. Fenced writes are a
// single conditional UPDATE.
//
// # Migrations
//
// Open applies the embedded migrations (postgres/migrations/NNNN_*.sql)
// that are not yet recorded in schema_migrations, each in its own
// transaction, while holding a session-level pg_advisory_lock, so replicas
// that start together apply each migration once. Tables are created in the
// first schema of the connection's search_path (set it with a
// search_path=… parameter in the URL to use another schema).
//
// # Errors
//
// Connection failures, timeouts, server shutdown, resource exhaustion and a
// closed DB are reported as *groundhog.Error with code
// groundhog.EUNAVAILABLE (the gateway answers 503).
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"github.com/groundhog-ai/groundhog/internal/migrations"
	"io"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/groundhog-ai/groundhog"
)

// DB is a groundhog store in a PostgreSQL database. It is safe for
// concurrent use.
type DB struct {
	pool   *pgxpool.Pool
	closed atomic.Bool
	// ledgerDays holds the UTC days (int64, see dayOf) whose ledger
	// partition is known to exist, so AppendLedger asks the server only
	// about new days.
	ledgerDays sync.Map
	// notifyIdem: Complete, Fail and Release also send the operation's
	// wake-up, in their own statement (see Waker.IdemNotifier).
	notifyIdem atomic.Bool
	// group commits concurrent cache and operation writes together
	// (group.go).
	group group
	// reads batches concurrent cache look-ups (readbatch.go).
	reads readBatches
}

var (
	_ groundhog.CacheStore     = (*DB)(nil)
	_ groundhog.LedgerStore    = (*DB)(nil)
	_ groundhog.OperationStore = (*DB)(nil)
	_ groundhog.KeyStore       = (*DB)(nil)
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the pg_advisory_lock key that serializes migrations
// across replicas ("groundhog" in ASCII).
const migrationLock int64 = 0x67726f756e64686f

// Open connects to the database at url (a postgres:// URL or a key=value
// DSN, as pgx accepts; parameters pgx does not know, such as search_path,
// are sent to the server as run-time settings), checks that it answers and
// applies the pending migrations.
func Open(ctx context.Context, url string) (*DB, error) {
	return open(ctx, url, nil)
}

// open is Open with a hook that may change the pool's configuration (tests
// install a tracer that counts round trips).
func open(ctx context.Context, url string, configure func(*pgxpool.Config)) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "postgres: invalid database URL", err)
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: open: %w", err))
	}
	db := &DB{pool: pool}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, mapErr(fmt.Errorf("postgres: connect: %w", err))
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	// Ledger partitions for yesterday through a few days ahead, so the
	// first appends of the day find theirs (AppendLedger creates any other).
	if _, err := db.MaintainLedger(ctx, time.Now(), 0); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the pool, waiting for connections in use to be returned.
// Later calls on db fail with EUNAVAILABLE.
func (db *DB) Close() error {
	if !db.closed.Swap(true) {
		db.pool.Close()
	}
	return nil
}

// Ping checks that the database answers (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.check(); err != nil {
		return err
	}
	if err := db.pool.Ping(ctx); err != nil {
		return mapErr(fmt.Errorf("postgres: ping: %w", err))
	}
	return nil
}

func (db *DB) check() error {
	if db.closed.Load() {
		return groundhog.Errorf(groundhog.EUNAVAILABLE, "store unavailable: database closed")
	}
	return nil
}

// migration is one embedded schema change.
type migration = migrations.Migration

// loadMigrations reads the embedded migrations, sorted by version.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	migs, err := migrations.Load(fsys)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return migs, nil
}

// migrate applies the pending migrations under the advisory lock, on one
// connection (a session lock belongs to its connection).
func (db *DB) migrate(ctx context.Context) (err error) {
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		return err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return mapErr(fmt.Errorf("postgres: migrate: %w", err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return mapErr(fmt.Errorf("postgres: migrate: lock: %w", err))
	}
	defer func() {
		// Unlock with a fresh context: ctx may be what failed. If the unlock
		// itself fails, drop the connection, which releases the lock.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", migrationLock); uerr != nil {
			conn.Hijack().Close(uctx)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     NOT NULL PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return mapErr(fmt.Errorf("postgres: create schema_migrations: %w", err))
	}
	for _, m := range migs {
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return err
		}
	}
	return nil
}

// migrationAfter holds the Go part of a migration, run after its SQL in
// its transaction.
var migrationAfter = map[int]func(context.Context, pgx.Tx) error{
	// The rollups of the existing days are built once the schema they
	// read and fill is complete: after 0008 (a store opened at 0005, 0006
	// or 0007 has them rebuilt once, a one-time read of the ledger).
	8: migrateRollups,
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE version = $1", m.Version).Scan(&n); err != nil {
			return mapErr(fmt.Errorf("postgres: migration %s: %w", m.Name, err))
		}
		if n > 0 {
			return nil
		}
		// Simple protocol: a migration file holds several statements.
		if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return mapErr(fmt.Errorf("postgres: apply migration %s: %w", m.Name, err))
		}
		if after := migrationAfter[m.Version]; after != nil {
			if err := after(ctx, tx); err != nil {
				return mapErr(fmt.Errorf("postgres: apply migration %s: %w", m.Name, err))
			}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			return mapErr(fmt.Errorf("postgres: record migration %s: %w", m.Name, err))
		}
		return nil
	})
}

// mapErr gives err a groundhog code: EUNAVAILABLE for failures of the
// database or the way to it, unchanged (so EINTERNAL) for anything else.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var ge *groundhog.Error
	if errors.As(err, &ge) {
		return err
	}
	if unavailable(err) {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "store unavailable", err)
	}
	return err
}

func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", // connection exception
			"40", // transaction rollback: serialization failure, deadlock
			"53", // insufficient resources: disk full, out of memory, too many connections
			"57", // operator intervention: shutdown, query canceled, cannot connect now
			"58": // system error: I/O
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	// pgxpool reports an acquire after Close with puddle's ErrClosedPool,
	// whose module groundhog does not import directly.
	return strings.Contains(err.Error(), "closed pool")
}

// isUniqueViolation reports a duplicate key.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// ns encodes t as unix nanoseconds, nil (NULL) for the zero time.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// fromNS decodes a column written by ns.
func fromNS(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(0, *v).UTC()
}

// params returns "$from, $from+1, …" for n parameters.
func params(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}
