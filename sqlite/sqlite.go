// Package sqlite is groundhog's embedded default store: one SQLite file
// (modernc.org/sqlite, no cgo) in WAL mode that implements
// groundhog.CacheStore, groundhog.LedgerStore, groundhog.OperationStore and
// groundhog.KeyStore.
//
// # Storage conventions
//
//   - Times are INTEGER unix nanoseconds UTC, NULL for the zero time.Time
//     (a cache entry or record that never expires). Nanoseconds keep every
//     time.Time the callers use exactly, so boundary rules such as
//     "ExpiresAt == now counts as expired" hold to the nanosecond; the range
//     is the years 1678–2262. Times come back in UTC.
//   - Money is INTEGER picodollars (groundhog.Money), durations INTEGER
//     nanoseconds, booleans INTEGER 0/1.
//   - A stored groundhog.Response is a set of columns (status, content_type,
//     streamed, model, the four usage counters, cost) plus the body BLOB and
//     the events BLOB in the compact binary form described at encodeEvents.
//
// # Concurrency
//
// SQLite allows one writer at a time. DB keeps two connection pools on the
// same file: a writer pool of exactly one connection, through which every
// write is serialized in process (so writers queue in Go instead of spinning
// on SQLITE_BUSY), and a read-only pool for reads. In WAL mode readers never
// block the writer nor wait for it. Read-modify-write transactions start
// with BEGIN IMMEDIATE, so they hold the write lock from their first
// statement and can never fail half-way with a lock upgrade. Another process
// using the same file is tolerated through busy_timeout.
//
// The pools use a private instance of the modernc driver that carries one
// SQL function, groundhog_ledger_row, through which ScanLedger reads each
// ledger row as one packed value (see ledgerpack.go for why).
//
// # Errors
//
// Lock timeouts ("database is locked"), I/O errors, a full disk and a closed
// DB are reported as *groundhog.Error with code groundhog.EUNAVAILABLE, so
// the gateway answers 503 and never runs an operation without its record.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"github.com/groundhog-ai/groundhog/internal/migrations"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/groundhog-ai/groundhog"
)

// DB is a groundhog store in one SQLite file. It is safe for concurrent use.
type DB struct {
	path   string
	w      *sql.DB // exactly one connection: every write goes through it
	r      *sql.DB // read-only pool of the request path
	scan   *sql.DB // read-only pool of ledger scans (scanConns connections)
	closed atomic.Bool
	wstmts stmtCache     // prepared statements of the writer (stmtcache.go)
	rstmts stmtCache     // prepared statements of the read pool
	ledger appenderSlot  // scratch of AppendLedger (ledgerblock.go)
	ops    opBatch       // group commit of operation and cache writes (operation_batch.go)
	ckpt   *checkpointer // copies the WAL into the main file (checkpoint.go)
}

// scanConns is how many ledger scans run at once; more wait for a turn.
const scanConns = 2

var (
	_ groundhog.CacheStore     = (*DB)(nil)
	_ groundhog.LedgerStore    = (*DB)(nil)
	_ groundhog.OperationStore = (*DB)(nil)
	_ groundhog.KeyStore       = (*DB)(nil)
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeout is how long a statement waits for a lock held by another
// connection (another process on the same file, or a checkpoint) before it
// fails with SQLITE_BUSY, which is reported as EUNAVAILABLE.
const busyTimeout = 5 * time.Second

// Open opens the database file at path, creating it if needed, and applies
// the embedded migrations that are not applied yet (each in its own
// transaction, recorded in schema_migrations, so reopening is a no-op).
//
// Every connection is configured with:
//   - journal_mode=WAL: readers and the writer do not block each other.
//   - synchronous=NORMAL: in WAL mode a commit appends to the WAL without an
//     fsync; the WAL is synced at checkpoints. Every committed transaction
//     survives a process crash (kill -9), because the data is in the OS page
//     cache; only an OS crash or power loss can lose the last transactions
//     (never corrupt the file). FULL would fsync every commit, several times
//     slower for ledger and cache writes, to guard against that rarer event.
//   - wal_autocheckpoint=0 on the writer: the WAL is copied into the main
//     file by a checkpointer on a connection of its own, never inside a
//     commit (checkpoint.go).
//   - busy_timeout: waits for another process's lock instead of failing at
//     once.
//   - foreign_keys=ON, so any future reference between tables is enforced.
//
// path must name a file: ":memory:" is refused (an in-memory database
// cannot be shared by the two pools and has no WAL), as is a path
// containing '?' (the driver would read it as DSN parameters).
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		return nil, groundhog.Errorf(groundhog.EINVALID, "sqlite: unsupported database path %q: give a file path", path)
	}
	// Create the file owner-only before SQLite does (it would use 0644
	// minus umask): it holds prompts' cached answers and key hashes. The
	// -wal and -shm files SQLite creates take the database file's mode.
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, mapErr(fmt.Errorf("sqlite: create %s: %w", path, err))
	}
	common := url.Values{}
	common.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	common.Add("_pragma", "foreign_keys(1)")
	common.Add("_pragma", "synchronous(NORMAL)")

	wq := cloneValues(common)
	wq.Add("_pragma", "journal_mode(WAL)")
	// Every transaction on the writer is BEGIN IMMEDIATE: it takes the write
	// lock up front, so a read-modify-write (Begin, fenced writes) cannot see
	// a snapshot that another writer invalidates before it writes.
	wq.Set("_txlock", "immediate")
	if !writerCheckpoints {
		// Checkpoints are the checkpointer's (checkpoint.go), off the writer.
		wq.Add("_pragma", "wal_autocheckpoint(0)")
	}
	w := sql.OpenDB(connector{dsn: path + "?" + wq.Encode()})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	db := &DB{path: path, w: w}
	// The first connection switches the file to WAL (persistent) before any
	// reader opens it.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, mapErr(fmt.Errorf("sqlite: open %s: %w", path, err))
	}
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := db.moveLegacyLedger(ctx); err != nil {
		db.wstmts.close()
		w.Close()
		return nil, err
	}

	rq := cloneValues(common)
	// A reader can never write, even by mistake: writes must go through the
	// single writer connection.
	rq.Add("_pragma", "query_only(1)")
	r := sql.OpenDB(connector{dsn: path + "?" + rq.Encode()})
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db.r = r
	if err := r.PingContext(ctx); err != nil {
		db.Close()
		return nil, mapErr(fmt.Errorf("sqlite: open %s: %w", path, err))
	}
	// Ledger scans (reports, dashboards) run long: they get their own
	// small pool, so however many run at once they never hold the
	// connections that key lookups, cache reads and Begin need — and a
	// scan callback may read the store through db.r without deadlocking.
	sc := sql.OpenDB(connector{dsn: path + "?" + rq.Encode()})
	sc.SetMaxOpenConns(scanConns)
	sc.SetMaxIdleConns(1)
	db.scan = sc
	if !writerCheckpoints {
		cp := sql.OpenDB(connector{dsn: path + "?" + common.Encode()})
		cp.SetMaxOpenConns(1)
		cp.SetMaxIdleConns(1)
		db.ckpt = startCheckpointer(cp, checkpointEvery)
	}
	return db, nil
}

// drv is this package's own instance of the modernc driver.
var drv = &msqlite.Driver{}

// connector opens connections of drv for sql.OpenDB.
type connector struct{ dsn string }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return drv.Open(c.dsn)
}

func (c connector) Driver() driver.Driver { return drv }

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// Close closes both pools. Later calls on db fail with EUNAVAILABLE.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	var errs []error
	if db.ckpt != nil {
		errs = append(errs, db.ckpt.close())
	}
	if db.scan != nil {
		errs = append(errs, db.scan.Close())
	}
	if db.r != nil {
		errs = append(errs, db.rstmts.close(), db.r.Close())
	}
	// Closing the writer last lets SQLite checkpoint the WAL into the main
	// file when the last connection goes.
	errs = append(errs, db.wstmts.close(), db.w.Close())
	return errors.Join(errs...)
}

// Ping checks that the database answers on both the read pool and the
// writer connection (for /readyz). It waits behind a write in progress.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.check(); err != nil {
		return err
	}
	var one int
	if err := db.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return mapErr(fmt.Errorf("sqlite: ping reader: %w", err))
	}
	if err := db.w.PingContext(ctx); err != nil {
		return mapErr(fmt.Errorf("sqlite: ping writer: %w", err))
	}
	return nil
}

// check fails fast once db is closed.
func (db *DB) check() error {
	if db.closed.Load() {
		return groundhog.Errorf(groundhog.EUNAVAILABLE, "store unavailable: database closed")
	}
	return nil
}

// migrate applies the embedded migrations in file-name order. Each runs in
// its own IMMEDIATE transaction that first re-checks schema_migrations, so
// two processes opening a new file together apply each migration once.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return mapErr(fmt.Errorf("sqlite: create schema_migrations: %w", err))
	}
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		return err
	}
	for _, m := range migs {
		if err := db.applyMigration(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// migration is one embedded schema change.
type migration = migrations.Migration

// loadMigrations reads the embedded migrations, sorted by version.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	migs, err := migrations.Load(fsys)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return migs, nil
}

func (db *DB) applyMigration(ctx context.Context, m migration) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(fmt.Errorf("sqlite: migration %s: %w", m.Name, err))
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil {
		return mapErr(fmt.Errorf("sqlite: migration %s: %w", m.Name, err))
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return mapErr(fmt.Errorf("sqlite: apply migration %s: %w", m.Name, err))
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UnixNano()); err != nil {
		return mapErr(fmt.Errorf("sqlite: record migration %s: %w", m.Name, err))
	}
	if err := tx.Commit(); err != nil {
		return mapErr(fmt.Errorf("sqlite: commit migration %s: %w", m.Name, err))
	}
	return nil
}

// mapErr gives err a groundhog code: EUNAVAILABLE for the failures of the
// store itself (locked, I/O, full, closed, cancelled), unchanged (so
// EINTERNAL) for anything else. err is kept in the chain for logs.
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
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// database/sql has no exported sentinel for a closed *sql.DB.
	if strings.Contains(err.Error(), "sql: database is closed") {
		return true
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // primary code of an extended result code
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_CORRUPT,
			sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_INTERRUPT:
			return true
		}
	}
	return false
}

// isConstraint reports a UNIQUE / PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// ns encodes t as unix nanoseconds, nil (NULL) for the zero time.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// fromNS decodes a column written by ns.
func fromNS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
