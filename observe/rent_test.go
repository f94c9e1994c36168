package observe_test

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/observe"
)

type rows []groundhog.LedgerEntry

func (r *rows) Record(e groundhog.LedgerEntry) error { *r = append(*r, e); return nil }

// TestRentRowIsNoCall: a cache_rent row reaches the ledger and writes no
// call line; a call's row does both.
func TestRentRowIsNoCall(t *testing.T) {
	var next rows
	var log bytes.Buffer
	o := &observe.Recorder{Next: &next, Log: slog.New(slog.NewTextHandler(&log, nil))}
	at := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	if err := o.Record(groundhog.LedgerEntry{ID: "r", Time: at, Tenant: "t", Operation: "docs", Outcome: groundhog.OutcomeCacheRent, Cost: 5, FullCost: 5}); err != nil {
		t.Fatal(err)
	}
	if len(next) != 1 || log.Len() != 0 {
		t.Fatalf("rent row: %d ledger rows, log %q", len(next), log.String())
	}
	if err := o.Record(groundhog.LedgerEntry{ID: "c", Time: at, Tenant: "t", Operation: "docs", Outcome: groundhog.OutcomeUpstream, Cost: 5, FullCost: 5}); err != nil {
		t.Fatal(err)
	}
	if len(next) != 2 || log.Len() == 0 {
		t.Fatalf("call row: %d ledger rows, log %q", len(next), log.String())
	}
}
