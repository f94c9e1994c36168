package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Fresh returns a view of store whose ScanLedger first waits until every
// row recorded on w before the call is committed (Flush), so a report built
// from it includes every call already answered. Use it for reports served
// by the process that owns w.
func (w *Writer) Fresh(store groundhog.LedgerStore) groundhog.LedgerStore {
	return freshStore{LedgerStore: store, w: w}
}

type freshStore struct {
	groundhog.LedgerStore
	w *Writer
}

// LedgerRollup flushes w first, like ScanLedger.
func (s freshStore) LedgerRollup(ctx context.Context, day time.Time, tenant string, pending []groundhog.LedgerEntry) (*Rollup, error) {
	agg, ok := s.LedgerStore.(Aggregator)
	if !ok {
		return nil, ErrNoRollup
	}
	if err := s.w.Flush(ctx); err != nil && !errors.Is(err, ErrClosed) {
		return nil, fmt.Errorf("ledger: flush before reading: %w", err)
	}
	return agg.LedgerRollup(ctx, day, tenant, pending)
}

func (s freshStore) ScanLedger(ctx context.Context, f groundhog.LedgerFilter, fn func(*groundhog.LedgerEntry) error) error {
	if err := s.w.Flush(ctx); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("ledger: flush before reading: %w", err)
	}
	return s.LedgerStore.ScanLedger(ctx, f, fn)
}

// ReadJournal returns the rows held in the journal directory dir of a
// Writer, possibly owned by another (running) process: rows recorded but not
// yet committed, and possibly some already committed whose segment file is
// not yet deleted. It only reads: a segment being appended to ends at its
// last whole record, a segment deleted meanwhile is skipped (its rows are in
// the store). A missing dir is no rows.
//
// Read the journal before scanning the store (see WithPending): a row that
// leaves the journal in between is then in the store.
func ReadJournal(dir string) ([]groundhog.LedgerEntry, error) {
	seqs, err := listSegments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: journal %s: %w", dir, err)
	}
	var rows []groundhog.LedgerEntry
	for _, seq := range seqs {
		f, err := os.Open(filepath.Join(dir, segmentName(seq)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // committed and removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: journal: %w", err)
		}
		sr, err := newSegmentReader(f)
		if err == nil {
			for {
				var e groundhog.LedgerEntry
				if sr.next(&e) != nil {
					// io.EOF, or a record still being written (or torn):
					// everything before it is whole.
					break
				}
				rows = append(rows, e)
			}
		} else if err != io.EOF {
			f.Close()
			return nil, fmt.Errorf("ledger: journal %s: %w", f.Name(), err)
		}
		f.Close()
	}
	return rows, nil
}

// WithPending returns a view of store whose ScanLedger also yields rows
// (from ReadJournal) that match the filter, merged in (Time, ID) order, each
// ID once: a pending row already in the store is not counted twice.
func WithPending(store groundhog.LedgerStore, rows []groundhog.LedgerEntry) groundhog.LedgerStore {
	sorted := append([]groundhog.LedgerEntry(nil), rows...)
	sort.SliceStable(sorted, func(i, j int) bool { return before(&sorted[i], &sorted[j]) })
	return pendingStore{LedgerStore: store, rows: sorted}
}

type pendingStore struct {
	groundhog.LedgerStore
	rows []groundhog.LedgerEntry // sorted by (Time, ID)
}

// LedgerRollup passes the pending rows of the day and tenant on to the
// store's rollup, which counts those it does not hold (each ID once).
func (s pendingStore) LedgerRollup(ctx context.Context, day time.Time, tenant string, pending []groundhog.LedgerEntry) (*Rollup, error) {
	agg, ok := s.LedgerStore.(Aggregator)
	if !ok {
		return nil, ErrNoRollup
	}
	f := groundhog.LedgerFilter{Tenant: tenant, From: day, To: day.Add(24 * time.Hour)}
	ids := map[string]bool{}
	for i := range pending {
		ids[pending[i].ID] = true
	}
	rows := append([]groundhog.LedgerEntry(nil), pending...)
	for i := range s.rows {
		if e := &s.rows[i]; matches(f, e) && !ids[e.ID] {
			rows = append(rows, *e)
			ids[e.ID] = true
		}
	}
	return agg.LedgerRollup(ctx, day, tenant, rows)
}

func before(a, b *groundhog.LedgerEntry) bool {
	at, bt := a.Time.UnixNano(), b.Time.UnixNano()
	if at != bt {
		return at < bt
	}
	return a.ID < b.ID
}

func matches(f groundhog.LedgerFilter, e *groundhog.LedgerEntry) bool {
	return (f.Tenant == "" || e.Tenant == f.Tenant) && (f.Operation == "" || e.Operation == f.Operation) &&
		(f.From.IsZero() || !e.Time.Before(f.From)) && (f.To.IsZero() || e.Time.Before(f.To))
}

func (s pendingStore) ScanLedger(ctx context.Context, f groundhog.LedgerFilter, fn func(*groundhog.LedgerEntry) error) error {
	var mine []*groundhog.LedgerEntry
	ids := map[string]bool{}
	for i := range s.rows {
		if e := &s.rows[i]; matches(f, e) && !ids[e.ID] {
			mine = append(mine, e)
			ids[e.ID] = true
		}
	}
	stored := map[string]bool{} // pending IDs the store already has
	next := 0
	emit := func(upTo *groundhog.LedgerEntry) error {
		for ; next < len(mine) && (upTo == nil || before(mine[next], upTo)); next++ {
			if stored[mine[next].ID] {
				continue
			}
			if err := fn(mine[next]); err != nil {
				return err
			}
		}
		return nil
	}
	err := s.LedgerStore.ScanLedger(ctx, f, func(e *groundhog.LedgerEntry) error {
		if ids[e.ID] {
			stored[e.ID] = true
		}
		if err := emit(e); err != nil {
			return err
		}
		return fn(e)
	})
	if err != nil {
		return err
	}
	return emit(nil)
}
