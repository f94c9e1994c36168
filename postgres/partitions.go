package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
)

// The ledger is partitioned by UTC day on its time column (unix
// nanoseconds; migration 0004). Partition ledger_pYYYYMMDD holds the rows
// of [day, day + 1): a day's report reads one partition (two when the
// report's day is not a UTC day), and retention drops whole partitions.

// dayNS is one UTC day in nanoseconds.
const dayNS int64 = 24 * 60 * 60 * 1e9

// ledgerPartitionLock is the pg_advisory_xact_lock key that serializes the
// creation and dropping of ledger partitions across replicas.
const ledgerPartitionLock int64 = migrationLock + 1

// LedgerDaysAhead is how many UTC days after today MaintainLedger (and
// Open) create partitions for.
const LedgerDaysAhead = 3

// dayOf returns the UTC day number (days since 1970-01-01, floored) of a
// time column value.
func dayOf(ns int64) int64 {
	d := ns / dayNS
	if ns%dayNS < 0 {
		d--
	}
	return d
}

// rowDays returns the distinct days of rows.
func rowDays(rows []groundhog.LedgerEntry) []int64 {
	var days []int64
	for i := range rows {
		d := dayOf(rows[i].Time.UnixNano())
		if len(days) == 0 || days[len(days)-1] != d { // rows mostly come in time order
			days = append(days, d)
		}
	}
	slices.Sort(days)
	return slices.Compact(days)
}

// partitionName is the table of day d, as migration 0004 names it.
func partitionName(d int64) string {
	return "ledger_p" + time.Unix(d*86400, 0).UTC().Format("20060102")
}

// partitionBounds returns the FOR VALUES bounds of day d; the first and last
// days of the int64 range get MINVALUE and MAXVALUE.
func partitionBounds(d int64) (lo, hi string) {
	lo, hi = "MINVALUE", "MAXVALUE"
	if d > math.MinInt64/dayNS {
		lo = strconv.FormatInt(d*dayNS, 10)
	}
	if d < math.MaxInt64/dayNS {
		hi = strconv.FormatInt((d+1)*dayNS, 10)
	}
	return lo, hi
}

// ensureLedgerDays creates the partitions of days that this DB has not seen
// yet, in one transaction under ledgerPartitionLock (so replicas creating
// the same day never race). Partitions are recognized by their names
// (ledger_pYYYYMMDD): one created by hand under another name for a day makes
// that day's appends fail (its range overlaps), so do not.
func (db *DB) ensureLedgerDays(ctx context.Context, days []int64) error {
	var missing []int64
	for _, d := range days {
		if _, ok := db.ledgerDays.Load(d); !ok {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", ledgerPartitionLock); err != nil {
			return err
		}
		have, err := ledgerPartitionDays(ctx, tx)
		if err != nil {
			return err
		}
		for _, d := range missing {
			if err := createRollupPartitions(ctx, tx, d); err != nil {
				return err
			}
			if _, ok := have[d]; ok {
				continue
			}
			lo, hi := partitionBounds(d)
			if err := attachPartition(ctx, tx, "ledger", partitionName(d), fmt.Sprintf("FROM (%s) TO (%s)", lo, hi)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return mapErr(fmt.Errorf("postgres: create ledger partitions: %w", err))
	}
	for _, d := range missing {
		db.ledgerDays.Store(d, struct{}{})
	}
	return nil
}

// attachPartition creates table name like parent and attaches it as the
// partition of parent for the values bound (FOR VALUES bound).
//
// Not CREATE TABLE … PARTITION OF: that takes an ACCESS EXCLUSIVE lock on
// parent, and an append locks the ledger and the rollup tables one after
// the other (its statement names them all), so a transaction creating the
// partitions of a day while other replicas append would hold one parent
// exclusively while waiting for another that an append holds, as that
// append waits for the first: a deadlock, which PostgreSQL breaks by
// failing one of them. ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on
// parent, which neither waits for appends and reports nor blocks them (the
// exclusive lock is on the new table, which nobody else uses yet). The new
// table is empty, so checking its rows against bound costs nothing; the
// parent's indexes and constraints are created on it by the attach.
func attachPartition(ctx context.Context, tx pgx.Tx, parent, name, bound string) error {
	p, t := pgx.Identifier{parent}.Sanitize(), pgx.Identifier{name}.Sanitize()
	if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)", t, p)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES %s", p, t, bound))
	return err
}

// ledgerPartitionDays returns the days of the ledger's partitions by their
// names (ledger_pYYYYMMDD); partitions named otherwise are left out.
func ledgerPartitionDays(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[int64]string, error) {
	rows, err := q.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'ledger'::regclass`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	days := make(map[int64]string, len(names))
	for _, name := range names {
		day, ok := strings.CutPrefix(name, "ledger_p")
		if !ok {
			continue
		}
		t, err := time.Parse("20060102", day)
		if err != nil {
			continue
		}
		days[dayOf(t.UnixNano())] = name
	}
	return days, nil
}

// MaintainLedger creates the ledger partitions of the UTC days from the day
// before now through LedgerDaysAhead days after it, and, when retention is
// positive, drops every partition whose whole day ended at or before
// now - retention (rows are kept at least retention, at most one day
// longer). It returns the names of the dropped partitions. Replicas may
// call it concurrently: the work is serialized by an advisory lock.
//
// Dropping a partition takes a brief exclusive lock on the ledger (scans
// and appends wait for it); call it once an hour or so, not per request.
func (db *DB) MaintainLedger(ctx context.Context, now time.Time, retention time.Duration) ([]string, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	today := dayOf(now.UnixNano())
	days := make([]int64, 0, LedgerDaysAhead+2)
	for d := today - 1; d <= today+LedgerDaysAhead; d++ {
		days = append(days, d)
	}
	if err := db.ensureLedgerDays(ctx, days); err != nil {
		return nil, err
	}
	if retention <= 0 {
		return nil, nil
	}
	cutoff := now.Add(-retention).UnixNano()
	var dropped []string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		dropped = dropped[:0]
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", ledgerPartitionLock); err != nil {
			return err
		}
		have, err := ledgerPartitionDays(ctx, tx)
		if err != nil {
			return err
		}
		for d, name := range have {
			if d >= math.MaxInt64/dayNS || (d+1)*dayNS > cutoff {
				continue
			}
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
			if err := dropRollupPartitions(ctx, tx, d); err != nil {
				return err
			}
			dropped = append(dropped, name)
			// A late journal replay may append to the day again: forget it,
			// so that append re-creates the partition.
			db.ledgerDays.Delete(d)
		}
		return nil
	})
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: drop ledger partitions: %w", err))
	}
	slices.Sort(dropped)
	return dropped, nil
}
