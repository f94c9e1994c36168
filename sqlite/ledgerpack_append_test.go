package sqlite

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// The field-by-field packer writes exactly the bytes of the generic one
// (packLedgerRow over driver values), so rows packed before and after it
// read back the same.
func TestAppendPackedLedgerMatchesPackLedgerRow(t *testing.T) {
	entries := []groundhog.LedgerEntry{
		{},
		{ID: "01J0000000000000000000000", Time: time.Unix(1_700_000_000, 123), Tenant: "acme", Operation: "summarize",
			RequestHash: "sha256:" + string(bytes.Repeat([]byte("ab"), 32)), Shape: groundhog.ShapeMessages, Model: "claude-ünïcode",
			Provider: "anthropic", Outcome: groundhog.OutcomeCacheHit, Status: 499,
			Usage: groundhog.Usage{InputTokens: 1 << 40, CachedInputTokens: 2, CacheWriteTokens: 3, OutputTokens: 4, CacheWrite1hTokens: 5},
			Cost:  groundhog.CostUnknown, Saved: -6, FullCost: 1 << 62, Latency: 8 * time.Millisecond, Attempt: 3,
			InFlight: true, Stream: true, PromptCacheSaved: groundhog.CostUnknown, PromptCacheBreak: "ttl_gap",
			PromptCacheLostTokens: 977, FanOutHeld: true, ProviderCacheReason: "tools_changed"},
		{ID: "x", Time: time.Unix(0, -1), CacheOn: true, Idempotent: true, Model: string(bytes.Repeat([]byte("m"), 300))},
	}
	for i := range entries {
		e := &entries[i]
		want, err := packLedgerRow([]driver.Value{e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, e.RequestHash, string(e.Shape),
			e.Model, e.Provider, string(e.Outcome), int64(e.Status),
			e.Usage.InputTokens, e.Usage.CachedInputTokens, e.Usage.CacheWriteTokens, e.Usage.OutputTokens,
			int64(e.Cost), int64(e.Saved), int64(e.FullCost), int64(e.Latency), int64(e.Attempt),
			int64(boolInt(e.InFlight)), int64(boolInt(e.CacheOn)), int64(boolInt(e.Idempotent)), int64(boolInt(e.Stream)),
			e.Usage.CacheWrite1hTokens, int64(e.PromptCacheSaved), e.PromptCacheBreak, e.PromptCacheLostTokens,
			int64(boolInt(e.FanOutHeld)), e.ProviderCacheReason})
		if err != nil {
			t.Fatal(err)
		}
		got := packLedger(e)
		if !bytes.Equal(got, want) {
			t.Fatalf("entry %d: packed\n%q\nwant\n%q", i, got, want)
		}
		if len(got) > packedLedgerSize(e) {
			t.Fatalf("entry %d: packed %d bytes, over the bound %d", i, len(got), packedLedgerSize(e))
		}
		var u ledgerUnpacker
		var back groundhog.LedgerEntry
		if err := u.unpack(got, &back); err != nil {
			t.Fatalf("entry %d: unpack: %v", i, err)
		}
		if back.ID != e.ID || back.Model != e.Model || back.Cost != e.Cost || back.FanOutHeld != e.FanOutHeld || back.Time.UnixNano() != e.Time.UnixNano() {
			t.Fatalf("entry %d: round trip %+v, want %+v", i, back, *e)
		}
	}
}

// The pack arena is reused from statement to statement and across calls:
// every row must come back as it went in (a row packed over by the next
// statement before its own had run would come back as another row).
func TestAppendLedgerArenaReuse(t *testing.T) {
	db := openTest(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []groundhog.LedgerEntry
	for call := range 3 {
		// 2 full statements of ledgerBatch rows, then single-row ones.
		rows := benchRows(fmt.Sprintf("c%d-", call), 2*ledgerBatch+37, start.Add(time.Duration(call)*time.Hour), time.Millisecond)
		for i := range rows {
			rows[i].Model = strings.Repeat("m", (call*7+i)%50)
			rows[i].Usage.OutputTokens = int64(call*100000 + i)
		}
		if err := db.AppendLedger(ctx, rows); err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	var got []groundhog.LedgerEntry
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		got = append(got, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("stored %d rows, want %d", len(got), len(want))
	}
	byID := make(map[string]groundhog.LedgerEntry, len(got))
	for _, e := range got {
		byID[e.ID] = e
	}
	for _, w := range want {
		g, ok := byID[w.ID]
		if !ok || g.Model != w.Model || g.Usage != w.Usage || g.Tenant != w.Tenant || g.Operation != w.Operation ||
			g.RequestHash != w.RequestHash || !g.Time.Equal(w.Time) || g.Cost != w.Cost {
			t.Fatalf("row %s came back as %+v, want %+v", w.ID, g, w)
		}
	}
}
