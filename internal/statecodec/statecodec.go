// Package statecodec is the stored encoding of a groundhog.WorkingState,
// shared by the SQLite and PostgreSQL stores so both keep the same bytes:
// the fixed fields as one JSON object, Ext apart and exactly as given.
package statecodec

import (
	"bytes"
	"encoding/json"
	"fmt"

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
