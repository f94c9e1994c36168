package postgres

import (
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// insertBefore0006 is qAppendLedger without its ON CONFLICT, without
// provider_cache_reason and the agent-run columns, with its arguments for
// rows: an insert into a ledger of a schema before migration 0006.
func insertBefore0006(rows []groundhog.LedgerEntry) (string, []any) {
	q, args := preSessionInsert(rows)
	q = strings.Replace(q, ",\n\tprovider_cache_reason", "", 1)
	q = strings.Replace(q, ", $29::text[])", ")", 1)
	return q, args[:28]
}

// The provider's verdict round-trips through the ledger and its daily
// rollup: the report from the rollup has the agreement cells of the scan.
func TestRollupAgreement(t *testing.T) {
	db := openTest(t)
	at := rollupDay.Add(3 * 3600e9)
	row := func(id, op, cause, reason string, lost int64) groundhog.LedgerEntry {
		return groundhog.LedgerEntry{ID: id, Time: at, Tenant: "t", Operation: op, RequestHash: "sha256:" + id,
			Shape: groundhog.ShapeResponses, Model: "m", Provider: "sim", Outcome: groundhog.OutcomeUpstream, Status: 200,
			Usage: groundhog.Usage{InputTokens: 3000}, Attempt: 1, PromptCacheBreak: cause, PromptCacheLostTokens: lost,
			ProviderCacheReason: reason}
	}
	rows := []groundhog.LedgerEntry{
		row("a", "agent", "tools_changed", "tools_changed", 2000),
		row("b", "agent", "tools_changed", "tools_changed", 1000),
		row("c", "agent", "", "input_changed", 0),
		row("d", "agent", "ttl_gap", "", 500),
	}
	if err := db.AppendLedger(ctx, rows); err != nil {
		t.Fatal(err)
	}
	var got []groundhog.LedgerEntry
	if err := db.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error { got = append(got, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].ProviderCacheReason != "tools_changed" || got[2].ProviderCacheReason != "input_changed" || got[3].ProviderCacheReason != "" {
		t.Fatalf("scanned %+v", got)
	}
	rep, err := ledger.BuildReport(ctx, db, ledger.ReportParams{Day: rollupDay})
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.PromptCacheAgreement{
		{Cause: "tools_changed", ProviderReason: "tools_changed", Calls: 2, LostTokens: 3000},
		{Cause: "", ProviderReason: "input_changed", Calls: 1},
	}
	if ag := rep.Total.PromptCache.Agreement; len(ag) != 2 || ag[0] != want[0] || ag[1] != want[1] {
		t.Errorf("agreement from the rollup %+v, want %+v", ag, want)
	}
	sameReports(t, db, scanOnly{db})
}
