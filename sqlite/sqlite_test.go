package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/storetest"
)

var ctx = context.Background()

func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Stores { return openTest(t) })
}

func TestOpenRefusesNonFiles(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:?cache=shared", filepath.Join(t.TempDir(), "a.db?mode=ro")} {
		if _, err := Open(ctx, path); groundhog.ErrorCode(err) != groundhog.EINVALID {
			t.Errorf("Open(%q) = %v, want EINVALID", path, err)
		}
	}
}

func TestOpenSetsPragmas(t *testing.T) {
	db := openTest(t)
	for _, tc := range []struct {
		pool   *sql.DB
		pragma string
		want   string
	}{
		{db.w, "journal_mode", "wal"},
		{db.w, "synchronous", "1"}, // NORMAL
		{db.w, "foreign_keys", "1"},
		{db.w, "busy_timeout", "5000"},
		{db.r, "journal_mode", "wal"},
		{db.r, "query_only", "1"},
		{db.r, "busy_timeout", "5000"},
	} {
		var got string
		if err := tc.pool.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %q, want %q", tc.pragma, got, tc.want)
		}
	}
}

func TestReopenKeepsDataAndMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	migrations := func(db *DB) map[int]int64 {
		t.Helper()
		rows, err := db.r.QueryContext(ctx, "SELECT version, applied_at FROM schema_migrations")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[int]int64{}
		for rows.Next() {
			var v int
			var at int64
			if err := rows.Scan(&v, &at); err != nil {
				t.Fatal(err)
			}
			m[v] = at
		}
		return m
	}
	first := migrations(db)
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(migs) || len(migs) == 0 {
		t.Fatalf("applied %d migrations, embedded %d", len(first), len(migs))
	}
	_, k := groundhog.NewAPIKey("acme", time.Now())
	if err := db.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if tenant, err := db.TenantForKey(ctx, k.Hash); err != nil || tenant != "acme" {
		t.Errorf("after reopen TenantForKey = %q, %v", tenant, err)
	}
	second := migrations(db)
	if len(second) != len(first) {
		t.Errorf("after reopen %d migrations recorded, want %d", len(second), len(first))
	}
	for v, at := range first {
		if second[v] != at {
			t.Errorf("migration %d re-applied (applied_at %d → %d)", v, at, second[v])
		}
	}
}

func TestClosedDBIsUnavailable(t *testing.T) {
	db := openTest(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	calls := map[string]func() error{
		"Ping":     func() error { return db.Ping(ctx) },
		"GetCache": func() error { _, err := db.GetCache(ctx, "t", "h", now); return err },
		"PutCache": func() error {
			return db.PutCache(ctx, &groundhog.CacheEntry{Tenant: "t", RequestHash: "h", Response: groundhog.Response{Status: 200}})
		},
		"AppendLedger": func() error { return db.AppendLedger(ctx, []groundhog.LedgerEntry{{ID: "x", Time: now}}) },
		"ScanLedger": func() error {
			return db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(*groundhog.LedgerEntry) error { return nil })
		},
		"Begin": func() error {
			_, _, err := db.Begin(ctx, groundhog.BeginParams{Tenant: "t", Key: "k", Now: now, Lease: time.Minute})
			return err
		},
		"Complete":     func() error { return db.Complete(ctx, "t", "id", 1, &groundhog.Response{}, now) },
		"TenantForKey": func() error { _, err := db.TenantForKey(ctx, "h"); return err },
		"CountKeys":    func() error { _, err := db.CountKeys(ctx); return err },
	}
	for name, call := range calls {
		if code := groundhog.ErrorCode(call()); code != groundhog.EUNAVAILABLE {
			t.Errorf("%s on a closed DB: code %q, want %q", name, code, groundhog.EUNAVAILABLE)
		}
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestLockedIsUnavailable takes the write lock from another connection
// (as another process would) and checks that SQLITE_BUSY maps to
// EUNAVAILABLE.
func TestLockedIsUnavailable(t *testing.T) {
	db := openTest(t)
	other, err := sql.Open("sqlite", db.path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, "ROLLBACK")

	// A second connection with no busy timeout fails at once with the
	// driver's real SQLITE_BUSY error.
	probe, err := sql.Open("sqlite", db.path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	_, err = probe.ExecContext(ctx, "DELETE FROM cache")
	if err == nil {
		t.Fatal("write under another connection's lock succeeded")
	}
	if code := groundhog.ErrorCode(mapErr(err)); code != groundhog.EUNAVAILABLE {
		t.Errorf("mapErr(%v) code %q, want %q", err, code, groundhog.EUNAVAILABLE)
	}
	// Readers are not blocked by the writer in WAL mode.
	if _, err := db.CountKeys(ctx); err != nil {
		t.Errorf("read while another connection holds the write lock: %v", err)
	}
	// A cancelled wait for the lock is unavailable too, not an internal error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if code := groundhog.ErrorCode(db.PutCache(cctx, &groundhog.CacheEntry{Tenant: "t", RequestHash: "h"})); code != groundhog.EUNAVAILABLE {
		t.Errorf("PutCache with a cancelled context: code %q, want %q", code, groundhog.EUNAVAILABLE)
	}
}

func TestMapErr(t *testing.T) {
	plain := errors.New("syntax error")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"closed", fmt.Errorf("x: %w", errors.New("sql: database is closed")), groundhog.EUNAVAILABLE},
		{"conn done", sql.ErrConnDone, groundhog.EUNAVAILABLE},
		{"deadline", context.DeadlineExceeded, groundhog.EUNAVAILABLE},
		{"coded error kept", groundhog.Errorf(groundhog.ENOTFOUND, "x"), groundhog.ENOTFOUND},
		{"other", plain, groundhog.EINTERNAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mapErr(tc.err)
			if got := groundhog.ErrorCode(err); got != tc.want {
				t.Errorf("code %q, want %q", got, tc.want)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("mapErr lost the cause: %v", err)
			}
		})
	}
}

// TestConcurrentWritersAndReaders runs writers (cache, ledger, operations)
// and readers at once; under -race it also checks the pools' sharing.
func TestConcurrentWritersAndReaders(t *testing.T) {
	db := openTest(t)
	const workers, each = 4, 25
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var wg sync.WaitGroup
	errc := make(chan error, 4*workers*each)
	for w := range workers {
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			for i := range each {
				hash := fmt.Sprintf("sha256:%d-%d", w, i)
				e := &groundhog.CacheEntry{Tenant: "t", RequestHash: hash, Shape: groundhog.ShapeChat,
					Response: groundhog.Response{Status: 200, Body: []byte(hash)}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := db.PutCache(ctx, e); err != nil {
					errc <- err
				}
				row := groundhog.LedgerEntry{ID: hash, Time: now.Add(time.Duration(i)), Tenant: "t"}
				if err := db.AppendLedger(ctx, []groundhog.LedgerEntry{row}); err != nil {
					errc <- err
				}
				if _, _, err := db.Begin(ctx, groundhog.BeginParams{Tenant: "t", Key: hash, RequestHash: hash,
					Owner: "w", Lease: time.Minute, Retention: time.Hour, Now: now}); err != nil {
					errc <- err
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			for i := range each {
				_, err := db.GetCache(ctx, "t", fmt.Sprintf("sha256:%d-%d", w, i), now)
				if err != nil && !groundhog.IsNotFound(err) {
					errc <- err
				}
				if err := db.ScanLedger(ctx, groundhog.LedgerFilter{Tenant: "t"}, func(*groundhog.LedgerEntry) error { return nil }); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	n := 0
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(*groundhog.LedgerEntry) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != workers*each {
		t.Errorf("%d ledger rows, want %d", n, workers*each)
	}
}

// TestScanLedgerCallbackMayWrite checks that fn can use the store while a
// scan holds a read connection (no deadlock between the pools).
func TestScanLedgerCallbackMayWrite(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	var rows []groundhog.LedgerEntry
	for i := range 10 {
		rows = append(rows, groundhog.LedgerEntry{ID: fmt.Sprint(i), Time: now.Add(time.Duration(i))})
	}
	if err := db.AppendLedger(ctx, rows); err != nil {
		t.Fatal(err)
	}
	seen := 0
	err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		seen++
		// Rows written during the scan are not part of its snapshot.
		return db.AppendLedger(ctx, []groundhog.LedgerEntry{{ID: "during-" + e.ID, Time: e.Time}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 10 {
		t.Errorf("scan saw %d rows, want the 10 of its snapshot", seen)
	}
}

func TestEventsCodec(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []groundhog.Event
	}{
		{"none", nil},
		{"one empty", []groundhog.Event{{}}},
		{"mixed", []groundhog.Event{{Name: "a", Data: []byte("x\ny")}, {Data: []byte{0, 0xff}}, {Name: "ping"}}},
		{"large", []groundhog.Event{{Name: "big", Data: bytes.Repeat([]byte("z"), 70000)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeEvents(encodeEvents(tc.evs))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.evs) {
				t.Fatalf("%d events, want %d", len(got), len(tc.evs))
			}
			for i := range got {
				if got[i].Name != tc.evs[i].Name || !bytes.Equal(got[i].Data, tc.evs[i].Data) {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tc.evs[i])
				}
			}
		})
	}
	for _, bad := range [][]byte{{2}, {1, 5, 'a'}, {1, 0}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := decodeEvents(bad); err == nil {
			t.Errorf("decodeEvents(%v) accepted corrupt input", bad)
		}
	}
}

func FuzzDecodeEvents(f *testing.F) {
	f.Add(encodeEvents([]groundhog.Event{{Name: "a", Data: []byte("b")}}))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := decodeEvents(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes (the format has one
		// encoding per value, except for the empty list).
		if len(evs) > 0 && !bytes.Equal(encodeEvents(evs), b) {
			t.Errorf("re-encoding %v differs from %v", evs, b)
		}
	})
}

func TestLedgerUnpackRejectsCorruptRows(t *testing.T) {
	var u ledgerUnpacker
	var e groundhog.LedgerEntry
	packed := packLedger(&groundhog.LedgerEntry{ID: "id", Time: time.Unix(0, 42), Tenant: "t", Operation: "op", RequestHash: "h",
		Shape: "chat", Model: "m", Provider: "p", Outcome: "upstream", Status: 200,
		Usage: groundhog.Usage{InputTokens: 1, CachedInputTokens: 2, CacheWriteTokens: 3, OutputTokens: 4},
		Cost:  groundhog.CostUnknown, Saved: 6, FullCost: 7, Latency: 8, Attempt: 9, InFlight: true, Idempotent: true})
	if err := u.unpack(packed, &e); err != nil {
		t.Fatalf("unpack: %v", err)
	}
	if e.ID != "id" || e.Time.UnixNano() != 42 || e.Cost != groundhog.CostUnknown || e.Attempt != 9 || !e.InFlight || e.CacheOn || !e.Idempotent || e.Stream {
		t.Errorf("unpacked %+v", e)
	}
	for _, bad := range [][]byte{nil, packed[:len(packed)-1], append(append([]byte{}, packed...), 'i', 0), {'i', 0}, {'s', 5, 'a'}} {
		if err := u.unpack(bad, &e); err == nil {
			t.Errorf("unpack(%q) accepted a corrupt row", bad)
		}
	}
}
