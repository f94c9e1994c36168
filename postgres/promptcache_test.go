package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
)

// TestPromptCacheMigrationKeepsOldRows builds a schema at version 1, stores
// rows the way the ledger did then, and opens it: migration 0003 adds the
// prompt-cache columns, and an old row with cache tokens reads back with an
// unknown saving (never computed), one without them with 0.
func TestPromptCacheMigrationKeepsOldRows(t *testing.T) {
	u := freshSchema(t)
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer NOT NULL PRIMARY KEY,
		name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if migs[0].Version != 1 {
		t.Fatalf("first migration is %s", migs[0].Name)
	}
	if err := applyMigration(ctx, conn, migs[0]); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for i, cached := range []int64{0, 2048} {
		if _, err := conn.Exec(ctx, `INSERT INTO ledger (id, time, tenant, operation, request_hash, shape, model, provider, outcome, status,
			input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost, saved, full_cost,
			latency, attempt, in_flight, cache_on, idempotent, stream)
			VALUES ($1, $2, 't', 'op', 'h', 'chat', 'sim-small', 'sim', 'upstream', 200, 3000, $3, 0, 5, 7, 0, 7, 1, 1, false, false, false, false)`,
			string(rune('a'+i)), t0+int64(i), cached); err != nil {
			t.Fatal(err)
		}
	}
	db, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var saved []groundhog.Money
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		saved = append(saved, e.PromptCacheSaved)
		if e.PromptCacheBreak != "" || e.PromptCacheLostTokens != 0 || e.FanOutHeld || e.Usage.CacheWrite1hTokens != 0 {
			t.Errorf("old row %s has prompt-cache fields %+v", e.ID, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(saved) != 2 || saved[0] != 0 || saved[1] != groundhog.CostUnknown {
		t.Fatalf("savings of the old rows = %v, want [0 unknown]", saved)
	}
}
