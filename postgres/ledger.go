package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/groundhog-ai/groundhog"
)

const ledgerColumns = `id, time, tenant, operation, request_hash, shape, model, provider, outcome, status,
	input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost, saved, full_cost,
	latency, attempt, in_flight, cache_on, idempotent, stream,
	cache_write_1h_tokens, prompt_cache_saved, prompt_cache_break, prompt_cache_lost_tokens, fan_out_held,
	provider_cache_reason,
	session, parent_session, result_bytes`

// qAppendLedger inserts a whole chunk of rows as one statement: each column
// arrives as one array parameter and unnest turns them back into rows, so
// 1,000 rows cost one round trip and one statement. ON CONFLICT DO NOTHING
// skips stored rows and repeats inside the chunk (the first one wins). The
// key is (time, id), as a partitioned table's key must hold the partition
// key: a replayed row carries its own time, so it is still skipped.
const qAppendLedger = `INSERT INTO ledger (` + ledgerColumns + `)
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::integer[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[],
		$15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[], $19::integer[], $20::boolean[],
		$21::boolean[], $22::boolean[], $23::boolean[],
		$24::bigint[], $25::bigint[], $26::text[], $27::bigint[], $28::boolean[], $29::text[],
		$30::text[], $31::text[], $32::bigint[])
	ON CONFLICT (time, id) DO NOTHING`

// ledgerChunk bounds the rows of one statement (and the memory of its
// parameters).
const ledgerChunk = 5000

// AppendLedger stores rows in one transaction; rows whose ID is already
// stored (or repeated within rows) are skipped, so a journal can be
// replayed after a crash. The day partitions the rows need are created
// first (in their own transaction) when this DB has not seen them yet.
func (db *DB) AppendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	if err := db.check(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	days := rowDays(rows)
	if err := db.ensureLedgerDays(ctx, days); err != nil {
		return err
	}
	err := db.appendLedger(ctx, rows)
	if isNoPartition(err) {
		// Another replica dropped a day this DB thought present (retention):
		// forget the days, re-create them, and try once more.
		for _, d := range days {
			db.ledgerDays.Delete(d)
		}
		if err := db.ensureLedgerDays(ctx, days); err != nil {
			return err
		}
		err = db.appendLedger(ctx, rows)
	}
	return err
}

// isNoPartition reports an insert whose row has no partition.
func isNoPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.Contains(pgErr.Message, "no partition")
}

func (db *DB) appendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return mapErr(fmt.Errorf("postgres: append ledger: %w", err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// One round trip: the rollup locks (see rollup.go), then each chunk's
	// insert and rollup.
	b := &pgx.Batch{}
	rollupLocks(b, rows)
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), ledgerChunk)]
		rows = rows[len(chunk):]
		b.Queue(qAppendRollup, appendRollupArgs(chunk)...)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return mapErr(fmt.Errorf("postgres: append ledger: %w", err))
	}
	if err := tx.Commit(ctx); err != nil {
		return mapErr(fmt.Errorf("postgres: append ledger: commit: %w", err))
	}
	return nil
}

// ledgerArrays turns rows into the 32 column arrays of qAppendLedger.
func ledgerArrays(rows []groundhog.LedgerEntry) []any {
	n := len(rows)
	strs := func() []string { return make([]string, n) }
	ints := func() []int64 { return make([]int64, n) }
	i32s := func() []int32 { return make([]int32, n) }
	bools := func() []bool { return make([]bool, n) }
	id, tenant, op, hash, shape, model, provider, outcome := strs(), strs(), strs(), strs(), strs(), strs(), strs(), strs()
	t, in, cached, write, out, cost, saved, full, lat := ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints(), ints()
	status, attempt := i32s(), i32s()
	inFlight, cacheOn, idem, stream := bools(), bools(), bools(), bools()
	write1h, pcSaved, pcBreak, pcLost, held, reason := ints(), ints(), strs(), ints(), bools(), strs()
	session, parent, resultBytes := strs(), strs(), ints()
	for i := range rows {
		e := &rows[i]
		id[i], t[i], tenant[i], op[i], hash[i] = e.ID, e.Time.UnixNano(), e.Tenant, e.Operation, e.RequestHash
		shape[i], model[i], provider[i], outcome[i] = string(e.Shape), e.Model, e.Provider, string(e.Outcome)
		status[i], attempt[i] = int32(e.Status), int32(e.Attempt)
		in[i], cached[i], write[i], out[i] = e.Usage.InputTokens, e.Usage.CachedInputTokens, e.Usage.CacheWriteTokens, e.Usage.OutputTokens
		cost[i], saved[i], full[i], lat[i] = int64(e.Cost), int64(e.Saved), int64(e.FullCost), int64(e.Latency)
		inFlight[i], cacheOn[i], idem[i], stream[i] = e.InFlight, e.CacheOn, e.Idempotent, e.Stream
		write1h[i], pcSaved[i], pcBreak[i] = e.Usage.CacheWrite1hTokens, int64(e.PromptCacheSaved), e.PromptCacheBreak
		pcLost[i], held[i], reason[i] = e.PromptCacheLostTokens, e.FanOutHeld, e.ProviderCacheReason
		session[i], parent[i], resultBytes[i] = e.Session, e.ParentSession, e.ResultBytes
	}
	return []any{id, t, tenant, op, hash, shape, model, provider, outcome, status,
		in, cached, write, out, cost, saved, full, lat, attempt, inFlight, cacheOn, idem, stream,
		write1h, pcSaved, pcBreak, pcLost, held, reason, session, parent, resultBytes}
}

// ScanLedger calls fn for every row matching f in (Time, ID) order and
// stops at fn's first error, returning it. A zero f.From or f.To leaves
// that end of the range open. Rows are streamed from the server as fn
// consumes them, never loaded all at once; each row is a fresh
// *LedgerEntry that fn may keep. fn may call other methods of db (the
// scan holds one pooled connection).
func (db *DB) ScanLedger(ctx context.Context, f groundhog.LedgerFilter, fn func(*groundhog.LedgerEntry) error) error {
	if err := db.check(); err != nil {
		return err
	}
	q, args := ledgerQuery(f)
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return mapErr(fmt.Errorf("postgres: scan ledger: %w", err))
	}
	defer rows.Close()
	var (
		t, latency      int64
		shape, outcome  string
		cost, saved     int64
		full, pcSaved   int64
		status, attempt int32
	)
	for rows.Next() {
		e := new(groundhog.LedgerEntry)
		if err := rows.Scan(&e.ID, &t, &e.Tenant, &e.Operation, &e.RequestHash, &shape, &e.Model, &e.Provider, &outcome, &status,
			&e.Usage.InputTokens, &e.Usage.CachedInputTokens, &e.Usage.CacheWriteTokens, &e.Usage.OutputTokens,
			&cost, &saved, &full, &latency, &attempt, &e.InFlight, &e.CacheOn, &e.Idempotent, &e.Stream,
			&e.Usage.CacheWrite1hTokens, &pcSaved, &e.PromptCacheBreak, &e.PromptCacheLostTokens, &e.FanOutHeld,
			&e.ProviderCacheReason, &e.Session, &e.ParentSession, &e.ResultBytes); err != nil {
			return mapErr(fmt.Errorf("postgres: scan ledger: %w", err))
		}
		e.Time = time.Unix(0, t).UTC()
		e.Shape = groundhog.Shape(shape)
		e.Outcome = groundhog.Outcome(outcome)
		e.Status, e.Attempt = int(status), int(attempt)
		e.Cost, e.Saved, e.FullCost = groundhog.Money(cost), groundhog.Money(saved), groundhog.Money(full)
		e.Latency = time.Duration(latency)
		e.PromptCacheSaved = groundhog.Money(pcSaved)
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return mapErr(fmt.Errorf("postgres: scan ledger: %w", err))
	}
	return nil
}

// ledgerQuery is ScanLedger's query for f. The time range is what lets the
// server prune the ledger to the partitions of the filter's days.
func ledgerQuery(f groundhog.LedgerFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if f.Tenant != "" {
		add("tenant =", f.Tenant)
	}
	if f.Operation != "" {
		add("operation =", f.Operation)
	}
	if !f.From.IsZero() {
		add("time >=", f.From.UnixNano())
	}
	if !f.To.IsZero() {
		add("time <", f.To.UnixNano())
	}
	q := "SELECT " + ledgerColumns + " FROM ledger"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY time, id"

	return q, args
}
