package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// The ledger is stored in blocks (migration 0003): one row of
// ledger_blocks per (AppendLedger call, tenant, time slice) holds that
// call's rows sorted by (time, id). A per-row table cost one B-tree insert
// per index per row, about 5–6 µs of CPU in modernc (docs/design/0004-sqlite-ledger-blocks.md);
// a block costs that once per batch, and the rows only their packing.
//
// Dedupe by id without a per-row index. A time-keyed id (keyTime: 32
// lowercase hex digits whose first 16 are the row's own Time, as
// groundhog.NewTimeID and the gateway's attempt keys make) can only be
// stored in a block that covers that time, so an append reads the few
// blocks covering its rows' key times and looks their ids up. Every other
// id goes into ledger_ids, whose primary key dedupes it exactly, one insert
// a row: arbitrary ids stay correct, at the old price.
//
// A stored row X and a new row Y with the same id: if the id is time-keyed
// (its key time k), X is either time-keyed itself (then X.Time = k, X lies
// in a block covering k) or not (then its id is in ledger_ids, with the
// prefix of k). Y checks the blocks covering k, and ledger_ids for ids of
// that prefix: both cases are found. If the id is not time-keyed, neither
// row is, and ledger_ids holds X's id.

// blockSpan bounds the time a block covers: max_time - min_time <
// blockSpan (the CHECK of 0003), so the blocks that can hold time t have
// min_time in (t - blockSpan, t] and max_time in [t, t + blockSpan).
const blockSpan = int64(60 * time.Second)

// maxBlockRows bounds the rows of one block, and so the memory a scan
// holds per open block.
const maxBlockRows = 4096

// keyTime returns the time (unix nanoseconds) a time-keyed id names, and
// whether id is one: 32 lowercase hex digits whose first 16 read as a
// non-negative int64. It runs once a row of every append: the digits go
// through lowerHex without a branch each (a digit-or-letter switch
// mispredicted on about every other digit of a random id, ≈ 100 ns a row),
// any non-digit leaving its 0xff in bad.
func keyTime(id string) (int64, bool) {
	if len(id) != 32 {
		return 0, false
	}
	_ = id[31]
	var v uint64
	var bad byte
	for i := range 16 {
		d := lowerHex[id[i]]
		bad |= d
		v = v<<4 | uint64(d)
	}
	for i := 16; i < 32; i++ {
		bad |= lowerHex[id[i]]
	}
	if bad > 0xf || v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// keyPrefix is the id prefix naming key time k: 16 lowercase hex digits.
func keyPrefix(k int64) string {
	s := strconv.FormatUint(uint64(k), 16)
	return "0000000000000000"[len(s):] + s
}

const (
	qBlocksCovering = `SELECT rows FROM ledger_blocks INDEXED BY ledger_blocks_max
		WHERE max_time >= ? AND max_time <= ? AND min_time <= ?`
	qIDsWithPrefix = `SELECT id FROM ledger_ids WHERE id >= ? AND id < ?`
	qInsertID      = `INSERT OR IGNORE INTO ledger_ids (id) VALUES (?)`
	qInsertBlock   = `INSERT INTO ledger_blocks (tenant, min_time, max_time, n, rows) VALUES (?, ?, ?, ?, ?)`
)

// blockStmts are the writer's prepared statements of an append.
type blockStmts struct {
	covering, prefix, insertID, insertBlock *sql.Stmt
}

// prepareBlockStmts prepares (once) the statements of appendBlocks. Call
// it before the transaction takes the writer's only connection.
func (db *DB) prepareBlockStmts(ctx context.Context) (blockStmts, error) {
	var s blockStmts
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{{&s.covering, qBlocksCovering}, {&s.prefix, qIDsWithPrefix}, {&s.insertID, qInsertID}, {&s.insertBlock, qInsertBlock}} {
		st, err := db.wstmts.get(ctx, db.w, p.q)
		if err != nil {
			return s, err
		}
		*p.st = st
	}
	return s, nil
}

// appendRow is one row of an append with what dedupe needs of it.
type appendRow struct {
	e     *groundhog.LedgerEntry
	t     int64 // e.Time in unix nanoseconds
	key   int64 // key time of e.ID, when keyed
	keyed bool  // e.ID is time-keyed (it may still name another time than e.Time)
	dup   bool  // already stored
}

// timed: e.ID names e.Time, so e is deduplicated by the blocks alone.
func (r *appendRow) timed() bool { return r.keyed && r.key == r.t }

// appender is the scratch of an append, kept warm in DB.ledger.
type appender struct {
	rows    []appendRow
	index   map[string]int // id → index in rows
	keys    []int64
	enc     blockEncoder
	order   []blockKey
	tenants []string
}

// appenderSlot is a DB's appender: appends run one at a time (each holds
// the writer's only connection), so one appender, kept warm, serves them
// all; a sync.Pool would lose it to every GC between two commits.
type appenderSlot struct {
	mu sync.Mutex
	a  appender
}

// appendBlocks stores rows in tx as blocks, skipping the ids already stored
// or repeated within rows (the first wins).
func (db *DB) appendBlocks(ctx context.Context, tx *sql.Tx, st blockStmts, rows []groundhog.LedgerEntry) error {
	db.ledger.mu.Lock()
	defer db.ledger.mu.Unlock()
	a := &db.ledger.a
	if a.index == nil {
		a.index = make(map[string]int)
	}
	defer func() {
		if len(a.index) > 4*maxBlockRows { // a map never shrinks: drop a big one
			*a = appender{}
			return
		}
		clear(a.index)
		clear(a.rows) // no pointers into the caller's rows kept
		clear(a.tenants)
		a.rows, a.keys = a.rows[:0], a.keys[:0]
		a.enc.prev = nil
		if cap(a.enc.out) > maxPooledArena {
			a.enc.out = nil
		}
	}()
	for i := range rows {
		e := &rows[i]
		if _, ok := a.index[e.ID]; ok {
			continue
		}
		a.index[e.ID] = len(a.rows)
		r := appendRow{e: e, t: e.Time.UnixNano()}
		r.key, r.keyed = keyTime(e.ID)
		a.rows = append(a.rows, r)
	}
	if err := a.dedupe(ctx, tx, st); err != nil {
		return err
	}
	return a.store(ctx, tx, st)
}

// dedupe marks the rows whose id is already stored.
func (a *appender) dedupe(ctx context.Context, tx *sql.Tx, st blockStmts) error {
	for i := range a.rows {
		if a.rows[i].keyed {
			a.keys = append(a.keys, a.rows[i].key)
		}
	}
	slices.Sort(a.keys)
	// The key times in clusters: one query for the blocks covering each.
	covering := tx.StmtContext(ctx, st.covering)
	defer covering.Close()
	prefix := tx.StmtContext(ctx, st.prefix)
	defer prefix.Close()
	for i := 0; i < len(a.keys); {
		lo, hi := a.keys[i], a.keys[i]
		for i++; i < len(a.keys) && a.keys[i]-hi < blockSpan; i++ {
			hi = a.keys[i]
		}
		if err := a.markInBlocks(ctx, covering, lo, hi); err != nil {
			return err
		}
		if err := a.markInIDs(ctx, prefix, keyPrefix(lo), keyPrefix(hi)+"g"); err != nil {
			return err
		}
	}
	// Ids that do not name their time: exactly, through ledger_ids.
	var insertID *sql.Stmt
	for i := range a.rows {
		r := &a.rows[i]
		if r.timed() || r.dup {
			continue
		}
		if insertID == nil {
			insertID = tx.StmtContext(ctx, st.insertID)
			defer insertID.Close()
		}
		res, err := insertID.ExecContext(ctx, r.e.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			r.dup = true
		}
	}
	return nil
}

// markInBlocks marks the rows whose id is in a block covering a time of
// [lo, hi].
func (a *appender) markInBlocks(ctx context.Context, covering *sql.Stmt, lo, hi int64) error {
	res, err := covering.QueryContext(ctx, lo, satAdd(hi, blockSpan-1), hi)
	if err != nil {
		return err
	}
	defer res.Close()
	var blob sql.RawBytes
	for res.Next() {
		if err := res.Scan(&blob); err != nil {
			return err
		}
		if err := a.markIDs(blob); err != nil {
			return err
		}
	}
	return res.Err()
}

// markIDs marks the rows whose id is among those of block. An id is the
// first field of a row, never the same as the previous row's (ids are
// unique in a block), so it reads without decoding the rest.
func (a *appender) markIDs(block []byte) error {
	var hexID [64]byte
	for rest := block; len(rest) > 0; {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) || l < 2 {
			return errBadPack
		}
		r := rest[k : k+int(l)]
		rest = rest[k+int(l):]
		if r[0] != tagText && r[0] != tagHex {
			return a.markIDsDecoded(block)
		}
		n, m := binary.Uvarint(r[1:])
		if m <= 0 || n > uint64(len(r)-1-m) {
			return errBadPack
		}
		id := r[1+m : 1+m+int(n)]
		switch r[0] {
		case tagText:
		case tagHex:
			if 2*len(id) > len(hexID) {
				return a.markIDsDecoded(block) // a long hex id: rare
			}
			id = hex.AppendEncode(hexID[:0], id)
		}
		if i, ok := a.index[string(id)]; ok {
			a.rows[i].dup = true
		}
	}
	return nil
}

// markIDsDecoded is markIDs decoding every row.
func (a *appender) markIDsDecoded(block []byte) error {
	c := blockCursor{dec: blockDecoder{rest: block}}
	for {
		ok, err := c.next()
		if err != nil || !ok {
			return err
		}
		if i, ok := a.index[string(c.id)]; ok {
			a.rows[i].dup = true
		}
	}
}

// markInIDs marks the rows whose id is in ledger_ids within [from, to).
func (a *appender) markInIDs(ctx context.Context, prefix *sql.Stmt, from, to string) error {
	res, err := prefix.QueryContext(ctx, from, to)
	if err != nil {
		return err
	}
	defer res.Close()
	var id sql.RawBytes
	for res.Next() {
		if err := res.Scan(&id); err != nil {
			return err
		}
		if i, ok := a.index[string(id)]; ok {
			a.rows[i].dup = true
		}
	}
	return res.Err()
}

// store inserts the rows not marked as duplicates, as blocks: sorted by
// (tenant, time, id), cut at each tenant, at blockSpan and at maxBlockRows.
func (a *appender) store(ctx context.Context, tx *sql.Tx, st blockStmts) error {
	// Sort keys without pointers (cheap to swap), tenants numbered in
	// order of appearance: a batch has few.
	a.order, a.tenants = a.order[:0], a.tenants[:0]
	for i := range a.rows {
		r := &a.rows[i]
		if r.dup {
			continue
		}
		g := slices.Index(a.tenants, r.e.Tenant)
		if g < 0 {
			g = len(a.tenants)
			a.tenants = append(a.tenants, r.e.Tenant)
		}
		a.order = append(a.order, blockKey{t: r.t, g: int32(g), i: int32(i)})
	}
	if len(a.order) == 0 {
		return nil
	}
	byKey := func(x, y blockKey) int {
		if x.g != y.g {
			return cmp.Compare(x.g, y.g)
		}
		if x.t != y.t {
			return cmp.Compare(x.t, y.t)
		}
		return cmp.Compare(a.rows[x.i].e.ID, a.rows[y.i].e.ID)
	}
	if !slices.IsSortedFunc(a.order, byKey) {
		slices.SortFunc(a.order, byKey)
	}
	insert := tx.StmtContext(ctx, st.insertBlock)
	defer insert.Close()
	for keys := a.order; len(keys) > 0; {
		first := keys[0]
		n := 1
		// keys are sorted: the difference is ≥ 0 and, taken unsigned, exact
		// even where t - first.t overflows int64.
		for n < len(keys) && n < maxBlockRows && keys[n].g == first.g && uint64(keys[n].t-first.t) < uint64(blockSpan) {
			n++
		}
		a.enc.reset()
		for _, k := range keys[:n] {
			a.enc.add(a.rows[k.i].e)
		}
		// The driver copies the blob when it binds it: the encoder's
		// buffer is free again once the statement has run.
		if _, err := insert.ExecContext(ctx, a.tenants[first.g], first.t, keys[n-1].t, n, a.enc.out); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// blockKey sorts a row of an append: tenant number, time, index in rows.
type blockKey struct {
	t    int64
	g, i int32
}

// satAdd is x+y for y ≥ 0, saturating at math.MaxInt64.
func satAdd(x, y int64) int64 {
	if x > math.MaxInt64-y {
		return math.MaxInt64
	}
	return x + y
}

// satSub is x-y for y ≥ 0, saturating at math.MinInt64.
func satSub(x, y int64) int64 {
	if x < math.MinInt64+y {
		return math.MinInt64
	}
	return x - y
}

// blockCursor walks the packed rows of a block (or of another source of
// packed rows sorted by (time, id)), reading of each the fields a merge
// and a filter need without unpacking it.
type blockCursor struct {
	dec blockDecoder
	cur []byte // the current packed row
	t   int64
	id  []byte
	op  []byte
	// legacy, when set, feeds the cursor from the per-row table of 0001
	// instead of rest.
	legacy *sql.Rows
	buf    []byte
}

// next moves to the next row; false at the end.
func (c *blockCursor) next() (bool, error) {
	if c.legacy != nil {
		if !c.legacy.Next() {
			return false, c.legacy.Err()
		}
		var raw sql.RawBytes
		if err := c.legacy.Scan(&raw); err != nil {
			return false, err
		}
		c.buf = append(c.buf[:0], raw...)
		c.cur = c.buf
	} else {
		cur, err := c.dec.next()
		if err != nil || cur == nil {
			return false, err
		}
		c.cur = cur
	}
	u := ledgerUnpacker{b: c.cur}
	c.id = u.bytes()
	c.t = u.int()
	u.bytes() // tenant
	c.op = u.bytes()
	return u.err == nil, u.err
}

// less orders cursors by their current row's (time, id).
func (c *blockCursor) less(d *blockCursor) bool {
	if c.t != d.t {
		return c.t < d.t
	}
	return bytes.Compare(c.id, d.id) < 0
}

// cursorHeap is a min-heap of cursors by (time, id).
type cursorHeap []*blockCursor

func (h cursorHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h cursorHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *cursorHeap) push(c *blockCursor) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

// popTop removes the top cursor.
func (h *cursorHeap) popTop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	old[n] = nil
	*h = old[:n]
	h.down(0)
}

// scanBlocks calls fn for every row matching f, in (time, id) order, from
// the blocks and from the per-row table of 0001, read in tx. It reads the
// blocks overlapping f's range in min_time order and merges them: a row is
// emitted once no block still unread can hold a smaller one, so memory is
// bounded by the blocks that overlap at one time, never the ledger.
func scanBlocks(ctx context.Context, tx *sql.Tx, f groundhog.LedgerFilter, fn func(*groundhog.LedgerEntry) error) error {
	// Inclusive bounds of the blocks' min_time (an open end constrains
	// nothing, even a row at the very end of the int64 range).
	hasFrom, hasTo := !f.From.IsZero(), !f.To.IsZero()
	var from, to int64
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if hasFrom {
		from = f.From.UnixNano()
		// A block holding a time ≥ from has max_time ≥ from, so min_time >
		// from - blockSpan.
		lo = satSub(from, blockSpan-1)
	}
	if hasTo {
		to = f.To.UnixNano()
		if hasFrom && from >= to {
			return nil
		}
		if to == math.MinInt64 {
			return nil
		}
		hi = to - 1
	}
	maxFrom := int64(math.MinInt64) // max_time >= maxFrom
	if hasFrom {
		maxFrom = from
	}
	q := "SELECT min_time, rows FROM ledger_blocks INDEXED BY ledger_blocks_time WHERE min_time >= ? AND min_time <= ? AND max_time >= ?"
	args := []any{lo, hi, maxFrom}
	if f.Tenant != "" {
		q = "SELECT min_time, rows FROM ledger_blocks INDEXED BY ledger_blocks_tenant WHERE tenant = ? AND min_time >= ? AND min_time <= ? AND max_time >= ?"
		args = append([]any{f.Tenant}, args...)
	}
	q += " ORDER BY min_time"
	blocks, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer blocks.Close()
	legacy, err := scanLegacy(ctx, tx, f)
	if err != nil {
		return err
	}
	defer legacy.Close()

	var h cursorHeap
	lc := &blockCursor{legacy: legacy}
	if ok, err := lc.next(); err != nil {
		return err
	} else if ok {
		h.push(lc)
	}
	var (
		nextMin  int64
		nextBlob []byte
		haveNext bool
	)
	readBlock := func() error {
		haveNext = blocks.Next()
		if !haveNext {
			return blocks.Err()
		}
		nextBlob = nil // a fresh slice: the cursor keeps it
		return blocks.Scan(&nextMin, &nextBlob)
	}
	if err := readBlock(); err != nil {
		return err
	}
	var (
		u       ledgerUnpacker
		lastT   int64
		lastID  []byte
		emitted bool
		op      = []byte(f.Operation)
	)
	for {
		for haveNext && (len(h) == 0 || nextMin <= h[0].t) {
			c := &blockCursor{dec: blockDecoder{rest: nextBlob}}
			if ok, err := c.next(); err != nil {
				return err
			} else if ok {
				h.push(c)
			}
			if err := readBlock(); err != nil {
				return err
			}
		}
		if len(h) == 0 {
			return nil
		}
		c := h[0]
		if (!hasFrom || c.t >= from) && (!hasTo || c.t < to) && (len(op) == 0 || bytes.Equal(c.op, op)) &&
			!(emitted && c.t == lastT && bytes.Equal(c.id, lastID)) { // a row an older process wrote to both tables
			e := new(groundhog.LedgerEntry)
			if err := u.unpack(c.cur, e); err != nil {
				return err
			}
			emitted, lastT, lastID = true, c.t, append(lastID[:0], c.id...)
			if err := fn(e); err != nil {
				return callbackError{err}
			}
		}
		if ok, err := c.next(); err != nil {
			return err
		} else if ok {
			h.down(0)
		} else {
			h.popTop()
		}
	}
}

// callbackError carries fn's error out of scanBlocks unwrapped and
// unmapped.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// scanLegacy queries the per-row table of 0001 for f, in (time, id) order.
func scanLegacy(ctx context.Context, tx *sql.Tx, f groundhog.LedgerFilter) (*sql.Rows, error) {
	var (
		where []string
		args  []any
	)
	if f.Tenant != "" {
		where = append(where, "tenant = ?")
		args = append(args, f.Tenant)
	}
	if f.Operation != "" {
		where = append(where, "operation = ?")
		args = append(args, f.Operation)
	}
	if !f.From.IsZero() {
		where = append(where, "time >= ?")
		args = append(args, f.From.UnixNano())
	}
	if !f.To.IsZero() {
		where = append(where, "time < ?")
		args = append(args, f.To.UnixNano())
	}
	q := "SELECT row FROM ledger"
	for i, w := range where {
		if i == 0 {
			q += " WHERE " + w
		} else {
			q += " AND " + w
		}
	}
	rows, err := tx.QueryContext(ctx, q+" ORDER BY time, id", args...)
	if err != nil {
		return nil, fmt.Errorf("legacy rows: %w", err)
	}
	return rows, nil
}
