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

// Header names of the agent run of a call.
const (
	HeaderSession       = "Groundhog-Session"
	HeaderParentSession = "Groundhog-Parent-Session"
)

// SessionHeaders validates the values of the Groundhog-Session and
// Groundhog-Parent-Session headers (each absent or one valid session id; a
// parent needs a session, and differs from it) and returns them. The error
// (EINVALID) names the header at fault.
func SessionHeaders(session, parent []string) (string, string, error) {
	one := func(name string, vals []string) (string, error) {
		if len(vals) == 0 {
			return "", nil
		}
		if len(vals) > 1 || !ValidSessionID(vals[0]) {
			return "", Errorf(EINVALID, "%s must be one value of 1–%d characters of A-Z a-z 0-9 . _ : -", name, MaxSessionIDLen)
		}
		return vals[0], nil
	}
	s, err := one(HeaderSession, session)
	if err != nil {
		return "", "", err
	}
	p, err := one(HeaderParentSession, parent)
	if err != nil {
		return "", "", err
	}
	if p != "" && s == "" {
		return "", "", Errorf(EINVALID, "%s needs a %s (the subagent's own run)", HeaderParentSession, HeaderSession)
	}
	if p != "" && p == s {
		return "", "", Errorf(EINVALID, "%s must differ from %s", HeaderParentSession, HeaderSession)
	}
	return s, p, nil
}
