// Regression tests from the review of the SQLite store: each one
// demonstrated a defect (since fixed) and fails if it comes back.
package sqlite

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// ScanLedger's doc promises "fn may call other methods of db". Each scan
// holds a connection of the read pool (max(4, GOMAXPROCS) connections) for
// its whole duration, so once as many scans run concurrently as the pool
// has connections, a read from inside fn (or from anywhere else: Begin's
// fast path, GetCache, TenantForKey for authentication) waits for a
// connection that only a finished scan can return.
func TestReviewScanLedgerFnCallsDBUnderConcurrency(t *testing.T) {
	db := openTest(t)
	day := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	var rows []groundhog.LedgerEntry
	for i := range 4 {
		rows = append(rows, groundhog.LedgerEntry{ID: fmt.Sprintf("r%d", i), Time: day.Add(time.Duration(i)), Tenant: "t", Operation: "op"})
	}
	if err := db.AppendLedger(ctx, rows); err != nil {
		t.Fatal(err)
	}
	scans := scanConns // every scan connection busy at once
	var (
		inside sync.WaitGroup
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
	)
	inside.Add(scans)
	for range scans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			err := db.ScanLedger(ctx, groundhog.LedgerFilter{Tenant: "t"}, func(e *groundhog.LedgerEntry) error {
				if !first {
					return nil
				}
				first = false
				inside.Done()
				inside.Wait() // every scan now holds a read connection
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_, err := db.TenantForKey(cctx, "no-such-hash")
				if groundhog.ErrorCode(err) != groundhog.ENOTFOUND {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return nil
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d concurrent scans whose fn reads db: %d reads failed, first: %v (without a deadline they hang forever)", scans, len(errs), errs[0])
	}
}
