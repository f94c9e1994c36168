package groundhog

import (
	"context"
	"encoding/json"
	"time"
)

// WorkingState is an agent's durable working state for one (tenant,
// session) (docs/agent-state.md): what the next step needs instead of the whole
// transcript. Constraints and Objective are the user's exact words and are
// stored verbatim; no summarizer may rewrite them. Evidence entries are
// either "ev_<sha256 hex>" references to stored evidence or external
// locators (a path, a ticket id), kept as given. Ext holds application
// fields as raw JSON.
type WorkingState struct {
	Objective        string          `json:"objective"`
	Constraints      []string        `json:"constraints"`
	Findings         []string        `json:"findings"`
	FailedApproaches []string        `json:"failed_approaches"`
	Evidence         []string        `json:"evidence"`
	NextStep         string          `json:"next_step"`
	Ext              json.RawMessage `json:"ext,omitempty"`
}

// StateVersion is one stored version of a session's working state. Every
// write makes a new version (1, 2, …); a delete is a tombstone version
// (Deleted true, State empty), and every earlier version stays readable.
type StateVersion struct {
	Tenant    string
	Session   string
	Version   int64
	State     WorkingState
	Deleted   bool
	Author    string // who wrote it: the gateway key id, or "local"
	CreatedAt time.Time
}

// StateVersionInfo is what a version listing shows of one version: its
// metadata, without the state.
type StateVersionInfo struct {
	Version   int64
	Deleted   bool
	Author    string
	CreatedAt time.Time
}

// EvidenceRefPrefix starts every evidence reference: "ev_" + hex SHA-256 of
// the content.
const EvidenceRefPrefix = "ev_"

// EvidenceInfo describes one stored evidence blob.
type EvidenceInfo struct {
	Tenant      string
	Ref         string // "ev_<sha256 hex>"
	Bytes       int64
	Lines       int64
	ContentType string
	CreatedAt   time.Time
}

// StateStore keeps every version of every session's working state.
//
// GetState returns the newest version of (tenant, session), tombstones
// included (Deleted true); ENOTFOUND when the session has no version.
// PutState appends v as version expect+1 if and only if the newest stored
// version is expect (0: the session has no version yet), atomically, and
// returns the stored version (Version and CreatedAt set; CreatedAt is
// v.CreatedAt when the caller set it, else the time of the write). When the newest
// version is not expect it stores nothing and returns an error with code
// EPRECONDITION. A delete is a PutState of a tombstone (Deleted true).
// ListStateVersions returns every version, newest first; GetStateVersion one,
// or ENOTFOUND. StateVersionInfos returns one page of the versions' metadata
// (no state is read), newest first: at most limit versions older than
// before (0: from the newest). Sessions of different tenants never see each
// other.
type StateStore interface {
	GetState(ctx context.Context, tenant, session string) (*StateVersion, error)
	PutState(ctx context.Context, v StateVersion, expect int64) (*StateVersion, error)
	ListStateVersions(ctx context.Context, tenant, session string) ([]StateVersion, error)
	StateVersionInfos(ctx context.Context, tenant, session string, before int64, limit int) ([]StateVersionInfo, error)
	GetStateVersion(ctx context.Context, tenant, session string, version int64) (*StateVersion, error)
}
