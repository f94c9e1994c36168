package postgres

import (
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// preSessionInsert is qAppendLedger without the agent-run columns and with
// no conflict clause, and its arguments: the insert of a ledger as it was
// before migration 0007, for tests that fill a ledger at an older schema.
func preSessionInsert(rows []groundhog.LedgerEntry) (string, []any) {
	q := strings.Replace(qAppendLedger, "ON CONFLICT (time, id) DO NOTHING", "", 1)
	q = strings.Replace(q, ",\n\tsession, parent_session, result_bytes", "", 1)
	q = strings.Replace(q, ",\n\t\t$30::text[], $31::text[], $32::bigint[]", "", 1)
	return q, ledgerArrays(rows)[:29]
}
