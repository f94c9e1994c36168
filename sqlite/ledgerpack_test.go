package sqlite

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// legacyPack packs e as rows were packed before the prompt-cache fields
// existed: the 23 original values only.
func legacyPack(t *testing.T, e *groundhog.LedgerEntry) []byte {
	t.Helper()
	b, err := packLedgerRow([]driver.Value{e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, e.RequestHash, string(e.Shape),
		e.Model, e.Provider, string(e.Outcome), int64(e.Status),
		e.Usage.InputTokens, e.Usage.CachedInputTokens, e.Usage.CacheWriteTokens, e.Usage.OutputTokens,
		int64(e.Cost), int64(e.Saved), int64(e.FullCost), int64(e.Latency), int64(e.Attempt),
		int64(boolInt(e.InFlight)), int64(boolInt(e.CacheOn)), int64(boolInt(e.Idempotent)), int64(boolInt(e.Stream))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLegacyPackedRowsStillRead stores rows in the packed format of before
// the prompt-cache fields, next to a new one, and reads all back: the old
// ones with zero prompt-cache fields and, when they had cache tokens, an
// unknown saving (it was never computed).
func TestLegacyPackedRowsStillRead(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	base := groundhog.LedgerEntry{Time: t0, Tenant: "t", Operation: "op", RequestHash: "h", Shape: groundhog.ShapeMessages,
		Model: "sim-small", Provider: "sim", Outcome: groundhog.OutcomeUpstream, Status: 200, Cost: 5, FullCost: 5, Attempt: 1}
	plain := base
	plain.ID, plain.Usage = "a-plain", groundhog.Usage{InputTokens: 10, OutputTokens: 2}
	cached := base
	cached.ID, cached.Time = "b-cached", t0.Add(time.Second)
	cached.Usage = groundhog.Usage{InputTokens: 3000, CachedInputTokens: 2048, CacheWriteTokens: 512, OutputTokens: 2}
	for _, e := range []*groundhog.LedgerEntry{&plain, &cached} {
		if _, err := db.w.ExecContext(ctx, "INSERT INTO ledger ("+ledgerStoredCols+") VALUES (?, ?, ?, ?, ?)",
			e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, legacyPack(t, e)); err != nil {
			t.Fatal(err)
		}
	}
	fresh := base
	fresh.ID, fresh.Time = "c-new", t0.Add(2*time.Second)
	fresh.Usage = groundhog.Usage{InputTokens: 3000, CachedInputTokens: 1024, CacheWriteTokens: 1500, CacheWrite1hTokens: 1000, OutputTokens: 2}
	fresh.PromptCacheSaved, fresh.PromptCacheBreak, fresh.PromptCacheLostTokens, fresh.FanOutHeld = -123456, "ttl_gap", 977, true
	fresh.ProviderCacheReason = "input_changed"
	if err := db.AppendLedger(ctx, []groundhog.LedgerEntry{fresh}); err != nil {
		t.Fatal(err)
	}
	var got []groundhog.LedgerEntry
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		got = append(got, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("read %d rows, want 3", len(got))
	}
	cachedWant := cached
	cachedWant.PromptCacheSaved = groundhog.CostUnknown
	for i, want := range []groundhog.LedgerEntry{plain, cachedWant, fresh} {
		if got[i] != want {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
}

// TestPackedRowsBeforeProviderReasonStillRead reads a row packed with the
// prompt-cache fields but before the provider's cache verdict was booked:
// every field back, no verdict.
func TestPackedRowsBeforeProviderReasonStillRead(t *testing.T) {
	e := groundhog.LedgerEntry{ID: "a", Time: time.Unix(1_700_000_000, 0).UTC(), Tenant: "t", Operation: "op", Model: "m",
		Usage: groundhog.Usage{InputTokens: 3000, CachedInputTokens: 1024}, PromptCacheSaved: 55, PromptCacheBreak: "ttl_gap",
		PromptCacheLostTokens: 900, FanOutHeld: true}
	b, err := packLedgerRow([]driver.Value{e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, e.RequestHash, string(e.Shape),
		e.Model, e.Provider, string(e.Outcome), int64(e.Status),
		e.Usage.InputTokens, e.Usage.CachedInputTokens, e.Usage.CacheWriteTokens, e.Usage.OutputTokens,
		int64(e.Cost), int64(e.Saved), int64(e.FullCost), int64(e.Latency), int64(e.Attempt),
		int64(boolInt(e.InFlight)), int64(boolInt(e.CacheOn)), int64(boolInt(e.Idempotent)), int64(boolInt(e.Stream)),
		e.Usage.CacheWrite1hTokens, int64(e.PromptCacheSaved), e.PromptCacheBreak, e.PromptCacheLostTokens,
		int64(boolInt(e.FanOutHeld))})
	if err != nil {
		t.Fatal(err)
	}
	var u ledgerUnpacker
	got := groundhog.LedgerEntry{ProviderCacheReason: "stale"}
	if err := u.unpack(b, &got); err != nil {
		t.Fatal(err)
	}
	if got != e {
		t.Fatalf("\n got %+v\nwant %+v", got, e)
	}
	e.ProviderCacheReason = "tools_changed"
	if err := u.unpack(packLedger(&e), &got); err != nil || got != e {
		t.Fatalf("with a verdict: %+v (%v)", got, err)
	}
}
