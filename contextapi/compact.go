package contextapi

import (
	"encoding/json"
	"net/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/compaction"
)

// CompactRequest is the body of POST …/sessions/{id}/compact (may be {}).
// Model is the agent's model (prices the carried tokens; the default
// summarizer when compaction.model is unset); SummaryModel overrides the
// summarizer. Proposal, when given, is a compacted state the client made
// itself: groundhog checks and writes it instead of asking a model.
// Breakpoints "auto" says the agent's requests carry cache markers (the
// compaction then also pays for the state's cache re-write). An optional
// If-Match header pins the version the compaction must start from.
type CompactRequest struct {
	Model             string          `json:"model,omitempty"`
	SummaryModel      string          `json:"summary_model,omitempty"`
	ExpectedStepsLeft *int64          `json:"expected_steps_left,omitempty"`
	Proposal          json.RawMessage `json:"proposal,omitempty"`
	Breakpoints       string          `json:"breakpoints,omitempty"`
}

// CompactResponse is its answer (200, ETag of the new version).
type CompactResponse struct {
	Version int64                  `json:"version"`
	State   groundhog.WorkingState `json:"state"`
	*compaction.Result
}

func (h *handler) compact(w http.ResponseWriter, r *http.Request, tenant, session string, body []byte) {
	var req CompactRequest
	if err := decodeStrict(body, &req); err != nil {
		h.writeError(w, r, err)
		return
	}
	ifMatch, err := h.parseIfMatch(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if req.Breakpoints != "" && req.Breakpoints != "auto" && req.Breakpoints != "off" {
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `breakpoints: must be "auto" or "off", not %q`, req.Breakpoints))
		return
	}
	steps := int64(-1)
	if req.ExpectedStepsLeft != nil {
		if steps = *req.ExpectedStepsLeft; steps < 0 || steps > compaction.MaxStepsLeft {
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, "expected_steps_left: must be between 0 and %d", compaction.MaxStepsLeft))
			return
		}
	}
	if string(req.Proposal) == "null" {
		req.Proposal = nil // absent
	}
	if p := req.Proposal; len(p) > 0 && p[0] != '{' {
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, "proposal: must be a JSON object"))
		return
	}
	res, err := h.o.Compactor.Compact(r.Context(), compaction.Request{
		Tenant: tenant, Session: session, Model: req.Model, SummaryModel: req.SummaryModel,
		IfMatch: ifMatch, Proposal: req.Proposal, StepsLeft: steps, PromptCache: req.Breakpoints == "auto",
		Credentials: r.Header,
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(res.Version.Version))
	writeJSON(w, http.StatusOK, CompactResponse{Version: res.Version.Version, State: res.Version.State, Result: res})
}
