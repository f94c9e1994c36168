// Package statecodec is the stored encoding of a groundhog.WorkingState,
// shared by the SQLite and PostgreSQL stores so both keep the same bytes:
// the fixed fields as one JSON object, Ext apart and exactly as given.
package statecodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// fixed is WorkingState without Ext. Field order and names are the stored
// format; they must not change.
type fixed struct {
	Objective        string   `json:"objective"`
	Constraints      []string `json:"constraints"`
	Findings         []string `json:"findings"`
	FailedApproaches []string `json:"failed_approaches"`
	Evidence         []string `json:"evidence"`
	NextStep         string   `json:"next_step"`
}

// Encode returns the stored form of s: the fixed fields as JSON (strings
// kept byte for byte: no HTML escaping) and Ext unchanged (nil when empty).
// A nil slice stays distinct from an empty one (null vs []).
func Encode(s groundhog.WorkingState) (state, ext []byte, err error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fixed{s.Objective, s.Constraints, s.Findings, s.FailedApproaches, s.Evidence, s.NextStep}); err != nil {
		return nil, nil, fmt.Errorf("encode state: %w", err)
	}
	if len(s.Ext) > 0 {
		ext = append([]byte(nil), s.Ext...)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), ext, nil
}

// Decode is the inverse of Encode.
func Decode(state, ext []byte) (groundhog.WorkingState, error) {
	var f fixed
	if err := json.Unmarshal(state, &f); err != nil {
		return groundhog.WorkingState{}, fmt.Errorf("decode state: %w", err)
	}
	s := groundhog.WorkingState{
		Objective: f.Objective, Constraints: f.Constraints, Findings: f.Findings,
		FailedApproaches: f.FailedApproaches, Evidence: f.Evidence, NextStep: f.NextStep,
	}
	if len(ext) > 0 {
		s.Ext = json.RawMessage(append([]byte(nil), ext...))
	}
	return s, nil
}

// Prepare readies v for storing as version expect+1, the same way on every
// backend: a negative expect is EINVALID, a tombstone carries no state, the
// state is encoded (EINVALID when it cannot be), CreatedAt defaults to now
// and is UTC, and Version is set. It returns the columns to store.
func Prepare(v *groundhog.StateVersion, expect int64, now time.Time) (state, ext []byte, err error) {
	if expect < 0 {
		return nil, nil, groundhog.Errorf(groundhog.EINVALID, "expected version %d is negative", expect)
	}
	if v.Deleted {
		v.State = groundhog.WorkingState{}
	} else if state, ext, err = Encode(v.State); err != nil {
		return nil, nil, groundhog.WrapError(groundhog.EINVALID, "state cannot be encoded", err)
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt = now
	}
	v.CreatedAt = v.CreatedAt.UTC()
	v.Version = expect + 1
	return state, ext, nil
}
