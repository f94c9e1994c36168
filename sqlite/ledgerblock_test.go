package sqlite

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// A block decodes to exactly the packed rows of its entries, whatever
// repeats or changes from one row to the next.
func TestBlockCodecRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	base := groundhog.LedgerEntry{ID: groundhog.NewTimeID(t0), Time: t0, Tenant: "acme", Operation: "summarize",
		RequestHash: "sha256:" + strings.Repeat("0f", 32), Shape: groundhog.ShapeChat, Model: "m", Provider: "sim",
		Outcome: groundhog.OutcomeCacheHit, Status: 200, Usage: groundhog.Usage{InputTokens: 10, OutputTokens: 3},
		Cost: 7, FullCost: 7, Attempt: 1, PromptCacheSaved: groundhog.CostUnknown}
	var rows []groundhog.LedgerEntry
	add := func(f func(e *groundhog.LedgerEntry)) {
		e := base
		if len(rows) > 0 {
			e = rows[len(rows)-1]
		}
		f(&e)
		rows = append(rows, e)
	}
	add(func(e *groundhog.LedgerEntry) {})
	add(func(e *groundhog.LedgerEntry) {
		e.ID = groundhog.NewTimeID(e.Time.Add(time.Microsecond))
		e.Time = e.Time.Add(time.Microsecond)
	})
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "not-hex", e.Time.Add(-time.Hour) })       // back in time
	add(func(e *groundhog.LedgerEntry) { e.ID, e.RequestHash = "ABCDEF01", "sha256:ABCD" })        // upper case: kept as text
	add(func(e *groundhog.LedgerEntry) { e.ID, e.RequestHash = "abc", "sha256:abc" })              // odd length
	add(func(e *groundhog.LedgerEntry) { e.ID, e.RequestHash = "", "" })                           // empty
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "00", time.Unix(0, math.MinInt64).UTC() }) // extreme times
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "01", time.Unix(0, math.MaxInt64).UTC() }) // delta wraps
	add(func(e *groundhog.LedgerEntry) { e.ID, e.Time = "02", time.Unix(0, -5).UTC() })
	add(func(e *groundhog.LedgerEntry) {
		e.ID, e.Tenant, e.Operation, e.Model, e.Shape, e.Provider, e.Outcome = "03", "other", "", "ü", groundhog.ShapeMessages, "anthropic", groundhog.OutcomeUpstream
		e.Status, e.Usage, e.Cost, e.Saved, e.FullCost = 499, groundhog.Usage{InputTokens: 1, CachedInputTokens: 2, CacheWriteTokens: 3, OutputTokens: 4, CacheWrite1hTokens: 5}, -1, 1<<62, math.MinInt64
		e.Latency, e.Attempt, e.InFlight, e.CacheOn, e.Idempotent, e.Stream = time.Second, 9, true, true, true, true
		e.PromptCacheSaved, e.PromptCacheBreak, e.PromptCacheLostTokens, e.FanOutHeld = -3, "ttl_gap", 77, true
	})
	add(func(e *groundhog.LedgerEntry) { e.ID = "04" }) // everything else the same
	add(func(e *groundhog.LedgerEntry) {
		e.ID, e.RequestHash = strings.Repeat("ab", 40), "sha256:"+strings.Repeat("cd", 40)
	})

	var w blockEncoder
	w.reset()
	for i := range rows {
		w.add(&rows[i])
	}
	d := blockDecoder{rest: w.out}
	for i := range rows {
		got, err := d.next()
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if want := packLedger(&rows[i]); !bytes.Equal(got, want) {
			t.Fatalf("row %d: decoded\n%q\nwant\n%q", i, got, want)
		}
	}
	if got, err := d.next(); got != nil || err != nil {
		t.Fatalf("after the last row: %q, %v", got, err)
	}
	if packed := func() (n int) {
		for i := range rows {
			n += len(packLedger(&rows[i]))
		}
		return n
	}(); len(w.out) >= packed {
		t.Errorf("block of %d bytes, not smaller than the %d bytes of its packed rows", len(w.out), packed)
	}
}

func TestKeyTime(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC)
	for _, tc := range []struct {
		id   string
		want int64
		ok   bool
	}{
		{groundhog.NewTimeID(at), at.UnixNano(), true},
		{"0000000000000001" + strings.Repeat("f", 16), 1, true},
		{"8000000000000000" + strings.Repeat("0", 16), 0, false}, // negative
		{strings.ToUpper(groundhog.NewTimeID(at)), 0, false},
		{groundhog.NewTimeID(at)[:31], 0, false},
		{"bulk-00001", 0, false},
	} {
		got, ok := keyTime(tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("keyTime(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if p := keyPrefix(at.UnixNano()); p != groundhog.NewTimeID(at)[:16] {
		t.Errorf("keyPrefix = %q, want the id's prefix %q", p, groundhog.NewTimeID(at)[:16])
	}
}
