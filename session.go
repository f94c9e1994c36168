package groundhog

// Agent runs. A client names the run a call belongs to with the
// Groundhog-Session header, and a subagent's run names the run that started
// it with Groundhog-Parent-Session; the ledger keeps both on every row
// (LedgerEntry.Session and ParentSession) so a report can total a run and
// its subagent tree (docs/agent-runs.md). The run id is the same notion as
// the session id of the agent working-state endpoints.

// MaxSessionIDLen bounds a session id.
const MaxSessionIDLen = 128

// ValidSessionID reports whether id is a valid session (run) id: 1–128
// characters of A-Z a-z 0-9 . _ : -.
func ValidSessionID(id string) bool {
	if len(id) == 0 || len(id) > MaxSessionIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
