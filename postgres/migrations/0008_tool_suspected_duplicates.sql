-- Tool-call figures of the report (docs/mcp.md): the rows of each
-- (day, tenant, operation) whose outcome is suspected_duplicate (an MCP
-- side-effect tool call made again without an idempotency key). The
-- rollups of the existing days are rebuilt right after this file
-- (postgres.go, migrationAfter), so the column holds their figures too.
ALTER TABLE ledger_rollup ADD COLUMN suspected_duplicates bigint NOT NULL DEFAULT 0;
