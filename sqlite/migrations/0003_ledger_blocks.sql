-- 0003: the ledger stored in blocks (sqlite/ledgerblock.go).
--
-- One row per (commit batch, tenant, time slice): the batch's rows of one
-- tenant, sorted by (time, id), packed one after the other in rows (each a
-- uvarint length and the packed row of ledgerpack.go). A block is one
-- B-tree insert per index instead of one per row: recording a call costs a
-- fraction of the per-row table of 0001. ScanLedger merges the blocks
-- overlapping its range by (time, id).
--
-- Invariant relied on by every query: a block spans less than one minute
-- (max_time - min_time < 60 s), so the blocks that can hold a time t all
-- have min_time in (t - 60 s, t].
CREATE TABLE ledger_blocks (
    seq      INTEGER PRIMARY KEY,
    tenant   TEXT    NOT NULL,
    min_time INTEGER NOT NULL,
    max_time INTEGER NOT NULL,
    n        INTEGER NOT NULL,
    rows     BLOB    NOT NULL,
    CHECK (max_time >= min_time AND max_time - min_time < 60000000000)
);
-- Scans: blocks in min_time order, for all tenants or one.
CREATE INDEX ledger_blocks_time ON ledger_blocks (min_time, max_time);
CREATE INDEX ledger_blocks_tenant ON ledger_blocks (tenant, min_time, max_time);
-- Dedupe on append: the blocks that can hold a recent time are the few
-- whose max_time reaches it.
CREATE INDEX ledger_blocks_max ON ledger_blocks (max_time, min_time);

-- Ids of the rows whose id does not name their time. A time-keyed id (32
-- lowercase hex digits, the first 16 the row's Time in unix nanoseconds,
-- as groundhog.NewTimeID makes) is deduplicated against the blocks that
-- hold its time; any other id is deduplicated here, one B-tree entry each.
CREATE TABLE ledger_ids (
    id TEXT NOT NULL PRIMARY KEY
) WITHOUT ROWID;

-- The table of 0001 stays: rows stored there by an earlier version are
-- moved into blocks when the store opens (ledgerblock_move.go), and scans
-- still read it, so a row that an older process writes there meanwhile is
-- never hidden.
