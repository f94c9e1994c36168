package sim

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStructuredOutputFollowsSchema(t *testing.T) {
	body := `{"model":"sim-small","messages":[{"role":"user","content":"compact"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","strict":true,"schema":` +
		`{"type":"object","properties":{"objective":{"const":"Fix  it"},"constraints":{"const":["No duplicate charges","Rollback required "]},"findings":{"type":"array","items":{"type":"string"}}},"required":["objective","constraints","findings"],"additionalProperties":false}}}}`
	answer := func() string {
		t.Helper()
		rec := httptest.NewRecorder()
		New(Config{}).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
		x := rec.Body.Bytes()
		var resp struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(x, &resp); err != nil || len(resp.Choices) != 1 {
			t.Fatalf("answer %s: %v", x, err)
		}
		return resp.Choices[0].Message.Content
	}
	got := answer()
	var doc struct {
		Objective   string   `json:"objective"`
		Constraints []string `json:"constraints"`
		Findings    []string `json:"findings"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatalf("content is not JSON: %q", got)
	}
	if doc.Objective != "Fix  it" || len(doc.Constraints) != 2 || doc.Constraints[1] != "Rollback required " || len(doc.Findings) == 0 {
		t.Errorf("document %q does not follow the schema", got)
	}
	if again := answer(); again != got {
		t.Errorf("not deterministic: %q then %q", got, again)
	}
}
