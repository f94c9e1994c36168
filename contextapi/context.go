package contextapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/assemble"
	"github.com/groundhog-ai/groundhog/compaction"
)

// ContextRequest is the body of POST …/sessions/{id}/context. Breakpoints
// is "auto" (place cache markers) or "" / "off". ExpectedStepsLeft feeds
// the compaction decision (nil: configured or estimated). SummaryModel
// names the model a compaction would use (default: compaction.model, else
// Model).
type ContextRequest struct {
	Shape             groundhog.Shape   `json:"shape"`
	Model             string            `json:"model"`
	Tools             []json.RawMessage `json:"tools,omitempty"`
	Instructions      string            `json:"instructions,omitempty"`
	LastStep          []json.RawMessage `json:"last_step"`
	EvidenceInline    []string          `json:"evidence_inline,omitempty"`
	Breakpoints       string            `json:"breakpoints,omitempty"`
	MaxTokens         int64             `json:"max_tokens,omitempty"`
	ExpectedStepsLeft *int64            `json:"expected_steps_left,omitempty"`
	SummaryModel      string            `json:"summary_model,omitempty"`
}

// ContextResponse is its answer.
type ContextResponse struct {
	Request      json.RawMessage     `json:"request"`
	Tokens       assemble.Tokens     `json:"tokens"`
	Compaction   compaction.Decision `json:"compaction"`
	StateVersion int64               `json:"state_version"`
}

// validate checks the fields Assemble does not: breakpoints, steps left,
// evidence_inline refs.
func (c *ContextRequest) validate() error {
	if c.Breakpoints != "" && c.Breakpoints != "auto" && c.Breakpoints != "off" {
		return groundhog.Errorf(groundhog.EINVALID, `breakpoints: must be "auto" or "off", not %q`, c.Breakpoints)
	}
	if c.ExpectedStepsLeft != nil && (*c.ExpectedStepsLeft < 0 || *c.ExpectedStepsLeft > compaction.MaxStepsLeft) {
		return groundhog.Errorf(groundhog.EINVALID, "expected_steps_left: must be between 0 and %d", compaction.MaxStepsLeft)
	}
	for i, ref := range c.EvidenceInline {
		if !groundhog.ValidEvidenceRef(ref) {
			return groundhog.Errorf(groundhog.EINVALID, "evidence_inline[%d]: %q is not an evidence ref (ev_ and 64 hex digits)", i, ref)
		}
	}
	return nil
}

func (h *handler) context(w http.ResponseWriter, r *http.Request, tenant, session string, body []byte) {
	var req ContextRequest
	if err := decodeStrict(body, &req); err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := req.validate(); err != nil {
		h.writeError(w, r, err)
		return
	}
	res, err := h.build(r, tenant, session, &req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(res.StateVersion))
	writeRaw(w, http.StatusOK, res.marshal())
}

// marshal is json.Marshal of r without re-validating the request body
// (Assemble built it as valid JSON; re-compacting it costs more than the
// rest of the answer).
func (r *ContextResponse) marshal() []byte {
	rest, err := json.Marshal(struct {
		Tokens       assemble.Tokens     `json:"tokens"`
		Compaction   compaction.Decision `json:"compaction"`
		StateVersion int64               `json:"state_version"`
	}{r.Tokens, r.Compaction, r.StateVersion})
	if err != nil {
		panic(fmt.Sprintf("contextapi: marshal response: %v", err)) // only our own types
	}
	b := make([]byte, 0, len(r.Request)+len(rest)+16)
	b = append(b, `{"request":`...)
	b = append(b, r.Request...)
	b = append(b, ',')
	return append(b, rest[1:]...)
}

// build answers one context request for (tenant, session).
func (h *handler) build(r *http.Request, tenant, session string, req *ContextRequest) (*ContextResponse, error) {
	ctx := r.Context()
	cur, err := h.currentState(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	var stat compaction.EvidenceStat
	if h.o.Evidence != nil {
		stat = h.o.Evidence
	}
	info, err := compaction.Describe(ctx, stat, tenant, cur.State.Evidence)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EUNAVAILABLE, "evidence store unavailable", err)
	}
	inline, err := h.inline(r, tenant, req.EvidenceInline)
	if err != nil {
		return nil, err
	}
	out, err := assemble.Assemble(assemble.Input{
		Shape: req.Shape, Model: req.Model, Tools: req.Tools, Instructions: req.Instructions,
		State: cur.State, Evidence: info, Inline: inline, LastStep: req.LastStep,
		MaxTokens: req.MaxTokens, Breakpoints: req.Breakpoints == "auto",
	})
	if err != nil {
		return nil, err
	}
	// The assembled text is the state's rendering unless evidence was
	// inlined (which no compaction shrinks): count it once.
	stateTokens, verbatim := out.StateTextTokens, compaction.MeasureVerbatim(cur.State, info)
	if len(inline) > 0 {
		stateTokens, verbatim = compaction.Measure(cur.State, info)
	}
	steps := int64(-1)
	if req.ExpectedStepsLeft != nil {
		steps = *req.ExpectedStepsLeft
	}
	cc := h.o.Compactor
	d := compaction.Decide(cc.Config, cc.Prices, compaction.Inputs{
		StateTokens: stateTokens, VerbatimTokens: verbatim, PromptTokens: compaction.PromptTokens(),
		StepsLeft: steps, StepsSoFar: cur.Version, Model: req.Model, SummaryModel: req.SummaryModel,
		PromptCache: req.Breakpoints == "auto",
	})
	return &ContextResponse{Request: out.Request, Tokens: out.Tokens, Compaction: d, StateVersion: cur.Version}, nil
}

// inline reads the evidence_inline blobs, at most MaxInlineBytes in all.
func (h *handler) inline(r *http.Request, tenant string, refs []string) ([]assemble.Inline, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if h.o.Evidence == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "evidence_inline: this gateway has no evidence store")
	}
	ctx := r.Context()
	var out []assemble.Inline
	total := int64(0)
	for _, ref := range refs {
		info, err := h.o.Evidence.StatEvidence(ctx, tenant, ref)
		if err != nil {
			return nil, err // ENOTFOUND: 404, another tenant's ref included
		}
		if total += info.Bytes; total > MaxInlineBytes {
			return nil, groundhog.Errorf(groundhog.ETOOLARGE, "evidence_inline: over %d bytes in all; reference the evidence instead", MaxInlineBytes)
		}
		rc, err := h.o.Evidence.ReadEvidence(ctx, tenant, ref, 0, -1)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, MaxInlineBytes+1))
		rc.Close()
		if err != nil {
			return nil, groundhog.WrapError(groundhog.EUNAVAILABLE, fmt.Sprintf("evidence_inline: reading %s failed", ref), err)
		}
		out = append(out, assemble.Inline{Ref: ref, Content: string(b)})
	}
	return out, nil
}
