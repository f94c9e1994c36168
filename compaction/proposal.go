package compaction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/assemble"
	"github.com/groundhog-ai/groundhog/sim"
)

// Instructions is the system prompt of the summarizing call.
const Instructions = `You compact an agent's working state. Return the JSON object the schema asks for.
Merge duplicate or superseded findings into fewer, precise ones; keep every failed approach that still matters, merged where they repeat; keep the next step concrete.
Copy the objective, the constraints and the evidence exactly as given: they are not yours to change.`

// Proposal is a compacted state as a model (or a client) proposes it.
// Objective and Constraints may be left out (groundhog carries them); when
// present they must equal the current ones byte for byte.
type Proposal struct {
	Objective        *string   `json:"objective"`
	Constraints      *[]string `json:"constraints"`
	Findings         []string  `json:"findings"`
	FailedApproaches []string  `json:"failed_approaches"`
	Evidence         []string  `json:"evidence"`
	NextStep         *string   `json:"next_step"`
}

// Schema returns the JSON schema of the structured-output request for
// compacting cur: objective, constraints and evidence are "const" (the
// current values exactly), the rest free strings.
func Schema(cur groundhog.WorkingState) json.RawMessage {
	strs := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	list := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"objective":         map[string]any{"type": "string", "const": cur.Objective},
			"constraints":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "const": strs(cur.Constraints)},
			"findings":          list,
			"failed_approaches": list,
			"evidence":          map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "const": strs(cur.Evidence)},
			"next_step":         map[string]any{"type": "string"},
		},
		"required":             []string{"objective", "constraints", "findings", "failed_approaches", "evidence", "next_step"},
		"additionalProperties": false,
	}
	return marshal(schema)
}

// SummaryRequest returns the chat completions body of the summarizing call for
// cur with model: the Instructions, the state rendered as in every
// context, and a strict json_schema response_format (Schema).
func SummaryRequest(model string, maxOutput int64, cur groundhog.WorkingState, info map[string]*groundhog.EvidenceInfo) json.RawMessage {
	body := map[string]any{
		"model": model,
		"messages": []any{
			map[string]any{"role": "system", "content": Instructions},
			map[string]any{"role": "user", "content": assemble.RenderState(cur, info, nil)},
		},
		"max_completion_tokens": maxOutput,
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": "working_state", "strict": true, "schema": json.RawMessage(Schema(cur)),
		}},
	}
	return marshal(body)
}

// PromptTokens is the sim's count of the summarizing call's instructions.
func PromptTokens() int64 { return int64(sim.CountTokens(Instructions)) }

// Measure returns the token count of cur rendered with info, and of its
// verbatim part alone (objective, constraints, evidence, headings), as
// Decide wants them.
func Measure(cur groundhog.WorkingState, info map[string]*groundhog.EvidenceInfo) (state, verbatim int64) {
	return int64(sim.CountTokens(assemble.RenderState(cur, info, nil))), MeasureVerbatim(cur, info)
}

// MeasureVerbatim is Measure's verbatim count alone, for a caller that has
// already counted the rendered state.
func MeasureVerbatim(cur groundhog.WorkingState, info map[string]*groundhog.EvidenceInfo) int64 {
	v := groundhog.WorkingState{Objective: cur.Objective, Constraints: cur.Constraints, Evidence: cur.Evidence, Ext: cur.Ext}
	return int64(sim.CountTokens(assemble.RenderState(v, info, nil)))
}

// Apply checks the proposal raw (a JSON object) against cur and returns the
// compacted state. It is rejected with code EMISMATCH (422) when it drops,
// reorders or alters a constraint or the objective (whitespace included),
// or drops an evidence entry; with EINVALID (400) when it is not a JSON
// object of the Proposal fields (unknown fields included). Findings and
// failed approaches may be merged freely; a missing next step keeps the
// current one; Ext is kept as it is.
func Apply(cur groundhog.WorkingState, raw []byte) (groundhog.WorkingState, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Proposal
	if err := dec.Decode(&p); err != nil {
		return cur, groundhog.WrapError(groundhog.EINVALID, fmt.Sprintf("proposal: not a working-state object: %v", err), err)
	}
	if dec.More() {
		return cur, groundhog.Errorf(groundhog.EINVALID, "proposal: trailing data after the object")
	}
	if p.Objective != nil && *p.Objective != cur.Objective {
		return cur, groundhog.Errorf(groundhog.EMISMATCH, "proposal alters the objective: %q is not %q", *p.Objective, cur.Objective)
	}
	if p.Constraints != nil {
		if err := sameConstraints(cur.Constraints, *p.Constraints); err != nil {
			return cur, err
		}
	}
	for _, e := range cur.Evidence {
		if !slices.Contains(p.Evidence, e) {
			return cur, groundhog.Errorf(groundhog.EMISMATCH, "proposal drops the evidence entry %q", e)
		}
	}
	next := cur
	next.Findings, next.FailedApproaches = p.Findings, p.FailedApproaches
	if next.Findings == nil {
		next.Findings = []string{}
	}
	if next.FailedApproaches == nil {
		next.FailedApproaches = []string{}
	}
	next.Evidence = p.Evidence
	if next.Evidence == nil {
		next.Evidence = cur.Evidence
	}
	if p.NextStep != nil {
		next.NextStep = *p.NextStep
	}
	return next, nil
}

// sameConstraints names the first way got differs from want.
func sameConstraints(want, got []string) error {
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			return groundhog.Errorf(groundhog.EMISMATCH, "proposal drops constraint %d %q", i+1, want[i])
		case i >= len(want):
			return groundhog.Errorf(groundhog.EMISMATCH, "proposal adds constraint %d %q", i+1, got[i])
		case got[i] != want[i]:
			if j := slices.Index(want, got[i]); j >= 0 {
				return groundhog.Errorf(groundhog.EMISMATCH, "proposal reorders the constraints: %d is %q, which is constraint %d", i+1, got[i], j+1)
			}
			return groundhog.Errorf(groundhog.EMISMATCH, "proposal alters constraint %d: %q is not %q", i+1, got[i], want[i])
		}
	}
	return nil
}

func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only maps, slices and strings: cannot fail
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
