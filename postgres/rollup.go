package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// Daily rollups of the ledger (migrations 0005, 0006), kept by AppendLedger
// in the transaction that inserts the rows, so a day's report reads
// O(tenants × operations) rows instead of the day's rows
// (ledger.Aggregator). Four tables, list-partitioned by UTC day number
// (dayOf) like the ledger, created and dropped with the day's ledger
// partition:
//
//   - ledger_rollup_hash: per (day, tenant, request_hash, operation), the
//     first row of that hash in that operation in (time, id) order, with
//     what it contributes when it is the first row of its hash in the day
//     (its known full_cost, and that again if it is shadow-eligible: cache
//     off and not avoided). The first row of a hash in the day is the
//     earliest of its operations' first rows.
//   - ledger_rollup: per (day, tenant, operation), the columns of
//     ledger.RollupCounts (money and token sums as numeric: exact, never
//     overflowing).
//   - ledger_rollup_break: per (day, tenant, operation, prompt-cache break
//     cause), its calls, lost tokens and first row (time, id, hash).
//   - ledger_rollup_agreement (migration 0006): per (day, tenant,
//     operation, break cause or '', provider_cache_reason) of the rows that
//     carry the provider's verdict, their calls and lost tokens.
//
// Only rows actually inserted are rolled up (a replayed row is skipped by
// the insert's ON CONFLICT, so it counts once). A row earlier than the
// stored first row of its hash (a late journal replay, clocks of replicas
// apart) becomes the first: the operation of the former first loses a
// first row (its cost becomes repeat cost), so the figures follow the
// (time, id) order, not the arrival order.
//
// Concurrency: an append takes, in its transaction and in a fixed order,
// pg_advisory_xact_lock_shared(rollupDayLock, day) for each of its days,
// then pg_advisory_xact_lock(rollupTenantLock, hash(day, tenant)) for each
// of its (day, tenant): appends of one tenant and day are serialized
// across replicas (appends of other tenants are not), and a lock order
// that is the same for everyone cannot deadlock. A report (and a rebuild)
// takes the day lock exclusively, so it reads the day's tables at one
// point between appends. The partitions of a new day (of the ledger and of
// these tables) are attached (attachPartition), so creating them while
// other replicas append neither waits for those appends nor blocks them.

// Advisory lock classes (the two-int form: a key space apart from the
// single-bigint keys of migrations and partitions).
const (
	rollupDayLock    int32 = 0x67680001
	rollupTenantLock int32 = 0x67680002
)

// rollupSum is a column of ledger_rollup summed from the rows (r below).
type rollupSum struct{ col, agg string }

// rollupSums are the order-independent columns (ledger.RollupCounts); the
// order-dependent ones (distinct_hashes, firsts, first_full_cost,
// first_shadow) come from the hash table.
var rollupSums = []rollupSum{
	{"calls", "count(*) FILTER (WHERE outcome <> 'cache_rent')"},
	{"full_cost", "sum(fk)"},
	{"shadow", "sum(sh)"},
	{"in_flight", "count(*) FILTER (WHERE in_flight)"},
	{"cache_hits", "count(*) FILTER (WHERE outcome = 'cache_hit')"},
	{"coalesced", "count(*) FILTER (WHERE outcome = 'coalesced')"},
	{"replayed", "count(*) FILTER (WHERE outcome = 'replayed')"},
	{"upstream", "count(*) FILTER (WHERE outcome = 'upstream')"},
	{"suspected_duplicates", "count(*) FILTER (WHERE outcome = 'suspected_duplicate')"},
	{"spend", "sum(CASE WHEN cost >= 0 THEN cost ELSE 0 END)"},
	{"saved", "sum(CASE WHEN saved >= 0 THEN saved ELSE 0 END)"},
	{"unknown_cost_calls", "count(*) FILTER (WHERE outcome <> 'cache_rent' AND (cost < 0 OR saved < 0 OR full_cost < 0))"},
	{"retries", "count(*) FILTER (WHERE outcome = 'upstream' AND attempt > 1)"},
	{"retry_cost", "sum(CASE WHEN outcome = 'upstream' AND attempt > 1 AND cost >= 0 THEN cost ELSE 0 END)"},
	{"cache_rent", "sum(CASE WHEN outcome = 'cache_rent' AND cost >= 0 THEN cost ELSE 0 END)"},
	{"unknown_rent", "count(*) FILTER (WHERE outcome = 'cache_rent' AND cost < 0)"},
	{"cached_read_tokens", "sum(cached_input_tokens)"},
	{"cache_write_tokens", "sum(cache_write_tokens)"},
	{"cache_write_1h_tokens", "sum(cache_write_1h_tokens)"},
	{"uncached_input_tokens", "sum(GREATEST(input_tokens::numeric - cached_input_tokens - cache_write_tokens, 0))"},
	{"input_tokens", "sum(input_tokens)"},
	{"pc_known_calls", "count(*) FILTER (WHERE (cached_input_tokens <> 0 OR cache_write_tokens <> 0) AND prompt_cache_saved <> -1)"},
	{"pc_unknown_calls", "count(*) FILTER (WHERE (cached_input_tokens <> 0 OR cache_write_tokens <> 0) AND prompt_cache_saved = -1)"},
	{"pc_saved", "sum(CASE WHEN (cached_input_tokens <> 0 OR cache_write_tokens <> 0) AND prompt_cache_saved <> -1 THEN prompt_cache_saved ELSE 0 END)"},
	{"fan_out_held", "count(*) FILTER (WHERE fan_out_held)"},
	{"fan_out_write_tokens_avoided", "sum(CASE WHEN fan_out_held THEN cached_input_tokens ELSE 0 END)"},
}

// rollupOrdered are the columns from the hash table.
var rollupOrdered = []string{"distinct_hashes", "firsts", "first_full_cost", "first_shadow"}

// rollupStatement returns the statement that rolls up the rows of source
// (a query of ledger columns: the INSERT … RETURNING of an append, or the
// day's rows for a rebuild) into the rollup tables; days is the parameter
// holding the days of those rows (it lets the server prune the hash
// table's partitions). It is the one definition of the rollup columns.
func rollupStatement(source, days string) string {
	var b strings.Builder
	b.WriteString(`WITH src AS (` + source + `),
r AS (
	SELECT CASE WHEN time >= 0 OR time % 86400000000000 = 0 THEN time / 86400000000000
		ELSE time / 86400000000000 - 1 END AS day,
		id COLLATE "C" AS id, time, tenant, operation, request_hash, outcome, cost, attempt, cache_on,
		-- A row of outcome cache_rent is no call (ledger.Row): only its
		-- cost counts, in spend, cache_rent and unknown_rent; the other
		-- columns see it as nothing: 0, false, no cause (and bop: no hash).
		` + notRent("saved", "0") + `, ` + notRent("full_cost", "0") + `, ` + notRent("in_flight", "false") + `,
		` + notRent("input_tokens", "0") + `, ` + notRent("cached_input_tokens", "0") + `,
		` + notRent("cache_write_tokens", "0") + `, ` + notRent("cache_write_1h_tokens", "0") + `,
		` + notRent("prompt_cache_saved", "0") + `, ` + notRent("prompt_cache_break", "''") + `,
		` + notRent("prompt_cache_lost_tokens", "0") + `, ` + notRent("fan_out_held", "false") + `,
		` + notRent("provider_cache_reason", "''") + `,
		CASE WHEN full_cost >= 0 AND outcome <> 'cache_rent' THEN full_cost ELSE 0 END AS fk,
		CASE WHEN full_cost >= 0 AND NOT cache_on AND outcome NOT IN ('cache_hit', 'coalesced', 'replayed', 'cache_rent')
			THEN full_cost ELSE 0 END AS sh
	FROM src
),
bop AS (
	SELECT DISTINCT ON (day, tenant, request_hash, operation) day, tenant, request_hash, operation, time, id, fk, sh
	FROM r WHERE outcome <> 'cache_rent' -- no call: no hash of the repeat rule (ledger.Row)
	ORDER BY day, tenant, request_hash, operation, time, id
),
old AS (
	SELECT k.day, k.tenant, k.request_hash, h.operation, h.first_time AS time, h.first_id AS id, h.full_cost AS fk, h.shadow AS sh
	FROM (SELECT DISTINCT day, tenant, request_hash FROM bop) k
	CROSS JOIN LATERAL (SELECT * FROM ledger_rollup_hash h
		WHERE h.day = ANY(` + days + `) AND h.day = k.day AND h.tenant = k.tenant AND h.request_hash = k.request_hash
		OFFSET 0) h -- not flattened: one index probe per hash, never a scan of the day's hashes
),
oldfirst AS (
	SELECT DISTINCT ON (day, tenant, request_hash) * FROM old ORDER BY day, tenant, request_hash, time, id
),
newfirst AS (
	SELECT DISTINCT ON (day, tenant, request_hash) * FROM bop ORDER BY day, tenant, request_hash, time, id
),
moved AS (
	SELECT n.day, n.tenant, n.operation, n.fk, n.sh, o.operation AS old_op, o.fk AS old_fk, o.sh AS old_sh,
		o.time IS NOT NULL AS had_old
	FROM newfirst n LEFT JOIN oldfirst o ON o.day = n.day AND o.tenant = n.tenant AND o.request_hash = n.request_hash
	WHERE o.time IS NULL OR (n.time, n.id) < (o.time, o.id)
),
upd_hash AS (
	INSERT INTO ledger_rollup_hash AS h (day, tenant, request_hash, operation, first_time, first_id, full_cost, shadow)
	SELECT b.day, b.tenant, b.request_hash, b.operation, b.time, b.id, b.fk, b.sh FROM bop b
	LEFT JOIN old o ON o.day = b.day AND o.tenant = b.tenant AND o.request_hash = b.request_hash AND o.operation = b.operation
	-- Only new hashes of an operation and earlier first rows: a stored row
	-- left as it is is not even locked (the append holds the (day, tenant)
	-- lock, so old is current).
	WHERE o.time IS NULL OR (b.time, b.id) < (o.time, o.id)
	ON CONFLICT (day, tenant, request_hash, operation) DO UPDATE SET first_time = excluded.first_time,
		first_id = excluded.first_id, full_cost = excluded.full_cost, shadow = excluded.shadow
	WHERE (excluded.first_time, excluded.first_id) < (h.first_time, h.first_id)
),
od AS (
	SELECT day, tenant, operation, sum(d)::bigint AS distinct_hashes, sum(f)::bigint AS firsts,
		sum(ff) AS first_full_cost, sum(fs) AS first_shadow
	FROM (
		SELECT b.day, b.tenant, b.operation, 1 AS d, 0 AS f, 0::numeric AS ff, 0::numeric AS fs FROM bop b
		WHERE NOT EXISTS (SELECT 1 FROM old o WHERE o.day = b.day AND o.tenant = b.tenant
			AND o.request_hash = b.request_hash AND o.operation = b.operation)
		UNION ALL SELECT day, tenant, operation, 0, 1, fk, sh FROM moved
		UNION ALL SELECT day, tenant, old_op, 0, -1, -old_fk, -old_sh FROM moved WHERE had_old
	) x GROUP BY 1, 2, 3
),
ops AS (
	SELECT day, tenant, operation`)
	for _, s := range rollupSums {
		b.WriteString(",\n\t\t" + s.agg + " AS " + s.col)
	}
	b.WriteString(`
	FROM r GROUP BY 1, 2, 3
),
upd_counts AS (
	INSERT INTO ledger_rollup AS c (day, tenant, operation`)
	for _, c := range rollupOrdered {
		b.WriteString(", " + c)
	}
	for _, s := range rollupSums {
		b.WriteString(", " + s.col)
	}
	b.WriteString(`)
	SELECT day, tenant, operation`)
	for _, c := range rollupOrdered {
		b.WriteString(", COALESCE(od." + c + ", 0)")
	}
	for _, s := range rollupSums {
		b.WriteString(", COALESCE(ops." + s.col + ", 0)")
	}
	b.WriteString(`
	FROM ops FULL JOIN od USING (day, tenant, operation)
	ON CONFLICT (day, tenant, operation) DO UPDATE SET `)
	for i, c := range append(slices.Clone(rollupOrdered), rollupCols()...) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = c." + c + " + excluded." + c)
	}
	b.WriteString(`
),
upd_agree AS (
	INSERT INTO ledger_rollup_agreement AS a (day, tenant, operation, cause, provider_reason, calls, lost_tokens)
	SELECT day, tenant, operation, prompt_cache_break, provider_cache_reason, count(*), sum(prompt_cache_lost_tokens)
	FROM r WHERE provider_cache_reason <> '' GROUP BY 1, 2, 3, 4, 5
	ON CONFLICT (day, tenant, operation, cause, provider_reason) DO UPDATE SET calls = a.calls + excluded.calls,
		lost_tokens = a.lost_tokens + excluded.lost_tokens
),
brk AS (
	SELECT day, tenant, operation, cause, n.calls, n.lost, f.time, f.id, f.request_hash
	FROM (SELECT day, tenant, operation, prompt_cache_break AS cause, count(*) AS calls,
			sum(prompt_cache_lost_tokens) AS lost
		FROM r WHERE prompt_cache_break <> '' GROUP BY 1, 2, 3, 4) n
	JOIN (SELECT DISTINCT ON (day, tenant, operation, prompt_cache_break) day, tenant, operation,
			prompt_cache_break AS cause, time, id, request_hash
		FROM r WHERE prompt_cache_break <> '' ORDER BY day, tenant, operation, prompt_cache_break, time, id) f
	USING (day, tenant, operation, cause)
)
INSERT INTO ledger_rollup_break AS k (day, tenant, operation, cause, calls, uncached_tokens, first_time, first_id, first_request_hash)
SELECT day, tenant, operation, cause, calls, lost, time, id, request_hash FROM brk
ON CONFLICT (day, tenant, operation, cause) DO UPDATE SET calls = k.calls + excluded.calls,
	uncached_tokens = k.uncached_tokens + excluded.uncached_tokens,
	first_time = CASE WHEN (excluded.first_time, excluded.first_id) < (k.first_time, k.first_id) THEN excluded.first_time ELSE k.first_time END,
	first_id = CASE WHEN (excluded.first_time, excluded.first_id) < (k.first_time, k.first_id) THEN excluded.first_id ELSE k.first_id END,
	first_request_hash = CASE WHEN (excluded.first_time, excluded.first_id) < (k.first_time, k.first_id)
		THEN excluded.first_request_hash ELSE k.first_request_hash END`)
	return b.String()
}

// notRent is column col of a ledger row, or zero when the row is one of
// outcome cache_rent (no call: see rollupStatement).
func notRent(col, zero string) string {
	return "CASE WHEN outcome = 'cache_rent' THEN " + zero + " ELSE " + col + " END AS " + col
}

func rollupCols() []string {
	cols := make([]string, len(rollupSums))
	for i, s := range rollupSums {
		cols[i] = s.col
	}
	return cols
}

// qAppendRollup inserts a chunk of rows (qAppendLedger's parameters, $33:
// their days) and rolls up those actually inserted.
var qAppendRollup = rollupStatement(strings.Replace(qAppendLedger, "DO NOTHING", "DO NOTHING RETURNING *", 1), "$33::bigint[]")

// qRebuildRollup rolls up the stored rows of day [$1, $2) ($3: that day).
var qRebuildRollup = rollupStatement("SELECT * FROM ledger WHERE time >= $1 AND time < $2", "$3::bigint[]")

// appendRollupArgs are qAppendRollup's parameters for chunk.
func appendRollupArgs(chunk []groundhog.LedgerEntry) []any {
	return append(ledgerArrays(chunk), rowDays(chunk))
}

// rollupLocks queues, in b, the advisory locks an append of rows takes
// (see the package comment on rollups): the days shared, then the (day,
// tenant) pairs, each in ascending key order.
func rollupLocks(b *pgx.Batch, rows []groundhog.LedgerEntry) {
	days := rowDays(rows)
	dayKeys := make([]int32, len(days))
	for i, d := range days {
		dayKeys[i] = int32(d)
	}
	slices.Sort(dayKeys)
	dayKeys = slices.Compact(dayKeys)
	var tenantKeys []int32
	lastDay, lastTenant := int64(0), "\x00none"
	for i := range rows {
		d, t := dayOf(rows[i].Time.UnixNano()), rows[i].Tenant
		if d == lastDay && t == lastTenant {
			continue
		}
		lastDay, lastTenant = d, t
		tenantKeys = append(tenantKeys, tenantLockKey(d, t))
	}
	slices.Sort(tenantKeys)
	tenantKeys = slices.Compact(tenantKeys)
	b.Queue("SELECT pg_advisory_xact_lock_shared($1::int4, k) FROM unnest($2::int4[]) AS k", rollupDayLock, dayKeys)
	b.Queue("SELECT pg_advisory_xact_lock($1::int4, k) FROM unnest($2::int4[]) AS k", rollupTenantLock, tenantKeys)
}

// tenantLockKey is the advisory lock key of (day, tenant); two pairs may
// share one (that only serializes them).
func tenantLockKey(day int64, tenant string) int32 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d\x00%s", day, tenant)
	return int32(h.Sum32())
}

// rollupPartitionTables are the rollup tables; partition of day d:
// <table>_pYYYYMMDD.
var rollupPartitionTables = []string{"ledger_rollup", "ledger_rollup_hash", "ledger_rollup_break", "ledger_rollup_agreement"}

// createRollupPartitions creates the rollup partitions of day d (those
// missing), with attachPartition: never waiting for appends nor blocking
// them.
func createRollupPartitions(ctx context.Context, tx pgx.Tx, d int64) error {
	suffix := strings.TrimPrefix(partitionName(d), "ledger")
	names := make([]string, len(rollupPartitionTables))
	for i, t := range rollupPartitionTables {
		names[i] = t + suffix
	}
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = ANY($1::text[]::regclass[]) AND c.relname = ANY($2::text[])`, rollupPartitionTables, names)
	if err != nil {
		return err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for i, t := range rollupPartitionTables {
		if slices.Contains(have, names[i]) {
			continue
		}
		if err := attachPartition(ctx, tx, t, names[i], fmt.Sprintf("IN (%d)", d)); err != nil {
			return err
		}
	}
	return nil
}

// dropRollupPartitions drops the rollup partitions of day d.
func dropRollupPartitions(ctx context.Context, tx pgx.Tx, d int64) error {
	suffix := strings.TrimPrefix(partitionName(d), "ledger")
	for _, t := range rollupPartitionTables {
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{t + suffix}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

// RebuildLedgerRollup recomputes the rollups of the UTC day of day from the
// day's ledger rows, under the day's exclusive lock (appends of that day
// wait). Migration 0005 does this for every existing day; use it after
// loading rows into the ledger table by other means than AppendLedger
// (COPY). It reads the whole day once: about as long as a scan of it.
func (db *DB) RebuildLedgerRollup(ctx context.Context, day time.Time) error {
	if err := db.check(); err != nil {
		return err
	}
	d := dayOf(day.UnixNano())
	if err := db.ensureLedgerDays(ctx, []int64{d}); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::int4, $2::int4)", rollupDayLock, int32(d)); err != nil {
			return err
		}
		return rebuildRollupDay(ctx, tx, d)
	})
	if err != nil {
		return mapErr(fmt.Errorf("postgres: rebuild ledger rollup: %w", err))
	}
	return nil
}

// rebuildRollupDay empties day d's rollups and rolls up its ledger rows.
func rebuildRollupDay(ctx context.Context, tx pgx.Tx, d int64) error {
	// One statement reads the whole day: no statement_timeout (the
	// gateway's default of 10 s would fail a migration over a day of more
	// than a few hundred thousand rows), and its sorts (first rows of each
	// hash) in memory rather than temporary files. For this transaction only.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0; SET LOCAL work_mem = '256MB'", pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	if err := createRollupPartitions(ctx, tx, d); err != nil {
		return err
	}
	for _, t := range rollupPartitionTables {
		if _, err := tx.Exec(ctx, "DELETE FROM "+t+" WHERE day = $1", d); err != nil {
			return err
		}
	}
	lo, hi := partitionBounds(d)
	if lo == "MINVALUE" || hi == "MAXVALUE" {
		// The first and last days of the int64 range: the outer bound is
		// the range's end itself.
		var from, to any
		if lo != "MINVALUE" {
			from = d * dayNS
		}
		if hi != "MAXVALUE" {
			to = (d + 1) * dayNS
		}
		_, err := tx.Exec(ctx, strings.Replace(qRebuildRollup, "time >= $1 AND time < $2",
			"($1::bigint IS NULL OR time >= $1) AND ($2::bigint IS NULL OR time < $2)", 1), from, to, []int64{d})
		return err
	}
	_, err := tx.Exec(ctx, qRebuildRollup, d*dayNS, (d+1)*dayNS, []int64{d})
	return err
}

// qLaterRollupColumns adds the rollup columns of migrations after 0008.
const qLaterRollupColumns = `ALTER TABLE ledger_rollup ADD COLUMN IF NOT EXISTS cache_rent numeric NOT NULL DEFAULT 0;
ALTER TABLE ledger_rollup ADD COLUMN IF NOT EXISTS unknown_rent bigint NOT NULL DEFAULT 0`

// migrateRollups is the rollups' backfill, in its migration's transaction:
// the rollup partitions of every ledger day, filled from the day's rows. It
// runs after migration 0006, whose column and table the rollups read and
// fill (postgres.go, migrationAfter).
//
// The rebuild fills every column the rollups have today, so the columns
// later migrations add (0011's cache_rent and unknown_rent) are added here first, as those
// migrations add them (IF NOT EXISTS: they then find them).
func migrateRollups(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, qLaterRollupColumns, pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	days, err := ledgerPartitionDays(ctx, tx)
	if err != nil {
		return err
	}
	sorted := make([]int64, 0, len(days))
	for d := range days {
		sorted = append(sorted, d)
	}
	slices.Sort(sorted)
	for _, d := range sorted {
		if err := rebuildRollupDay(ctx, tx, d); err != nil {
			return fmt.Errorf("day %s: %w", partitionName(d), err)
		}
	}
	return nil
}

var _ ledger.Aggregator = (*DB)(nil)

// LedgerRollup implements ledger.Aggregator: the rollup of the UTC day from
// day, of tenant (or all), counting the rows of pending the ledger does not
// hold as if they had been appended. Pending rows are rolled up by the
// append statement itself, in a transaction that is then rolled back, so
// they follow the very definitions of stored rows (a pending row earlier
// than a stored first row moves it, exactly as a late append does).
func (db *DB) LedgerRollup(ctx context.Context, day time.Time, tenant string, pending []groundhog.LedgerEntry) (*ledger.Rollup, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	d := dayOf(day.UnixNano())
	var rows []groundhog.LedgerEntry
	for i := range pending {
		if e := &pending[i]; dayOf(e.Time.UnixNano()) == d && (tenant == "" || e.Tenant == tenant) {
			rows = append(rows, *e)
		}
	}
	if len(rows) > 0 {
		if err := db.ensureLedgerDays(ctx, []int64{d}); err != nil {
			return nil, err
		}
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: ledger rollup: %w", err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // always: pending rows are never kept
	ru, err := readRollup(ctx, tx, d, tenant, rows)
	if err != nil {
		return nil, mapErr(fmt.Errorf("postgres: ledger rollup: %w", err))
	}
	return ru, nil
}

func readRollup(ctx context.Context, tx pgx.Tx, d int64, tenant string, pending []groundhog.LedgerEntry) (*ledger.Rollup, error) {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::int4, $2::int4)", rollupDayLock, int32(d)); err != nil {
		return nil, err
	}
	for len(pending) > 0 {
		chunk := pending[:min(len(pending), ledgerChunk)]
		pending = pending[len(chunk):]
		if _, err := tx.Exec(ctx, qAppendRollup, appendRollupArgs(chunk)...); err != nil {
			return nil, err
		}
	}
	cols := append(slices.Clone(rollupOrdered), rollupCols()...)
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = c + "::text"
	}
	rows, err := tx.Query(ctx, "SELECT tenant, operation, "+strings.Join(sel, ", ")+
		" FROM ledger_rollup WHERE day = $1 AND ($2 = '' OR tenant = $2)", d, tenant)
	if err != nil {
		return nil, err
	}
	ru := &ledger.Rollup{}
	vals := make([]string, len(cols))
	dest := make([]any, 2+len(cols))
	for i := range vals {
		dest[2+i] = &vals[i]
	}
	for rows.Next() {
		var c ledger.RollupCounts
		dest[0], dest[1] = &c.Tenant, &c.Operation
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, err
		}
		v := map[string]string{}
		for i, col := range cols {
			v[col] = vals[i]
		}
		if err := fillCounts(&c, v); err != nil {
			rows.Close()
			return nil, err
		}
		ru.Counts = append(ru.Counts, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `SELECT tenant, operation, cause, calls, uncached_tokens::text, first_time, first_id, first_request_hash
		FROM ledger_rollup_break WHERE day = $1 AND ($2 = '' OR tenant = $2)`, d, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			b    ledger.RollupBreak
			lost string
			t    int64
		)
		if err := rows.Scan(&b.Tenant, &b.Operation, &b.Cause, &b.Calls, &lost, &t, &b.FirstID, &b.FirstRequestHash); err != nil {
			return nil, err
		}
		n, err := parseNumeric(lost)
		if err != nil {
			return nil, err
		}
		b.UncachedTokens, b.FirstTime = wrapInt64(n), time.Unix(0, t).UTC()
		ru.Breaks = append(ru.Breaks, b)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	rows, err = tx.Query(ctx, `SELECT tenant, operation, cause, provider_reason, calls, lost_tokens::text
		FROM ledger_rollup_agreement WHERE day = $1 AND ($2 = '' OR tenant = $2)`, d, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a    ledger.RollupAgreement
			lost string
		)
		if err := rows.Scan(&a.Tenant, &a.Operation, &a.Cause, &a.ProviderReason, &a.Calls, &lost); err != nil {
			return nil, err
		}
		n, err := parseNumeric(lost)
		if err != nil {
			return nil, err
		}
		a.LostTokens = wrapInt64(n)
		ru.Agreement = append(ru.Agreement, a)
	}
	return ru, rows.Err()
}

// fillCounts sets c's fields from the ledger_rollup columns v (as text).
// Money columns become exact Totals; counts and token sums int64 (token
// sums wrap as the Accumulator's int64 sums do).
func fillCounts(c *ledger.RollupCounts, v map[string]string) error {
	ints := map[string]*int64{
		"calls": &c.Calls, "distinct_hashes": &c.Distinct, "firsts": &c.Firsts,
		"in_flight": &c.ConcurrentIdentical, "cache_hits": &c.CacheHits, "coalesced": &c.Coalesced,
		"replayed": &c.Replayed, "upstream": &c.UpstreamCalls, "suspected_duplicates": &c.SuspectedDuplicates, "unknown_cost_calls": &c.UnknownCostCalls,
		"retries": &c.Retries, "cached_read_tokens": &c.CachedReadTokens, "cache_write_tokens": &c.CacheWriteTokens,
		"cache_write_1h_tokens": &c.CacheWrite1hTokens, "uncached_input_tokens": &c.UncachedInputTokens,
		"input_tokens": &c.InputTokens, "pc_known_calls": &c.PromptCacheKnownCalls,
		"pc_unknown_calls": &c.PromptCacheUnknownCalls, "fan_out_held": &c.FanOutHeld,
		"fan_out_write_tokens_avoided": &c.FanOutWriteTokensAvoided, "unknown_rent": &c.UnknownRentDays,
	}
	totals := map[string]*groundhog.Total{
		"full_cost": &c.FullCost, "first_full_cost": &c.FirstFullCost, "shadow": &c.Shadow,
		"first_shadow": &c.FirstShadow, "spend": &c.Spend, "saved": &c.Saved, "retry_cost": &c.RetryCost,
		"cache_rent": &c.CacheRent,
		"pc_saved":   &c.PromptCacheSaved,
	}
	if len(ints)+len(totals) != len(v) {
		return fmt.Errorf("rollup: %d columns, %d fields", len(v), len(ints)+len(totals))
	}
	for col, s := range v {
		n, err := parseNumeric(s)
		if err != nil {
			return fmt.Errorf("rollup column %s: %w", col, err)
		}
		if p, ok := ints[col]; ok {
			*p = wrapInt64(n)
		} else if p, ok := totals[col]; ok {
			*p = totalOf(n)
		} else {
			return fmt.Errorf("rollup: unknown column %s", col)
		}
	}
	return nil
}

func parseNumeric(s string) (*big.Int, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("not an integer: %q", s)
	}
	return n, nil
}

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

// wrapInt64 is n modulo 2^64 as an int64, as an int64 sum wraps.
func wrapInt64(n *big.Int) int64 {
	if n.IsInt64() {
		return n.Int64()
	}
	m := new(big.Int).Mod(n, two64)
	return int64(m.Uint64())
}

// totalOf returns n picodollars as a groundhog.Total, overflowed when it
// leaves the Total's range (built with Total's own arithmetic, base 2^32).
func totalOf(n *big.Int) groundhog.Total {
	if n.IsInt64() {
		return groundhog.TotalOf(groundhog.Money(n.Int64()))
	}
	abs := new(big.Int).Abs(n)
	words := []uint32{}
	for abs.Sign() > 0 {
		words = append(words, uint32(new(big.Int).And(abs, big.NewInt(0xffffffff)).Uint64()))
		abs.Rsh(abs, 32)
	}
	var t groundhog.Total
	for i := len(words) - 1; i >= 0; i-- {
		t = t.Times(1 << 32).Add(groundhog.Money(words[i]))
	}
	if n.Sign() < 0 {
		t = t.Times(-1)
	}
	return t
}
