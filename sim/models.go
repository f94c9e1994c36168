package sim

import (
	"net/http"
	"time"
)

// Models lists the sim's own models, as GET /v1/models returns them. Any
// other model name is accepted too (and priced as sim-small when the price
// table does not know it).
var Models = []string{"sim-small", "sim-large", "sim-embed"}

// modelEpoch is the fixed creation time the model objects report.
var modelEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func modelObject(fam family, id string) any {
	if fam == familyAnthropic {
		return anthropicModel{Type: "model", ID: id, DisplayName: id, CreatedAt: modelEpoch.Format(time.RFC3339)}
	}
	return openAIModel{ID: id, Object: "model", Created: modelEpoch.Unix(), OwnedBy: "groundhog-sim"}
}

// listModels answers GET /v1/models in the caller's format (Anthropic when
// the anthropic-version header is present).
func (s *Server) listModels(w http.ResponseWriter, _ *http.Request, fam family) {
	data := make([]any, len(Models))
	for i, m := range Models {
		data[i] = modelObject(fam, m)
	}
	if fam == familyAnthropic {
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false,
			"first_id": Models[0], "last_id": Models[len(Models)-1]})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// getModel answers GET /v1/models/{id}: every id exists, as every model name
// is accepted.
func (s *Server) getModel(w http.ResponseWriter, _ *http.Request, fam family, id string) {
	writeJSON(w, http.StatusOK, modelObject(fam, id))
}
