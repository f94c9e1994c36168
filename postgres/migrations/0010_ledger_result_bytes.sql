-- The size of the answer relayed to the client of an MCP tool call (the
-- JSON-RPC result or error object, in bytes); 0 on other rows and on rows
-- booked before it.
ALTER TABLE ledger ADD COLUMN result_bytes bigint NOT NULL DEFAULT 0;
