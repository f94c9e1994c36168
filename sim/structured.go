package sim

import (
	"encoding/json"
)

// Structured outputs (chat response_format {"type":"json_schema",…}): the
// sim answers with JSON generated from the schema by genValue, so a client
// asking for a schema gets a valid, deterministic document (const and enum
// values are honoured exactly, which is what groundhog's compaction relies
// on to carry verbatim fields).

// responseSchema returns the JSON schema of a chat response_format of type
// json_schema, or nil for any other (or no) response_format.
func responseSchema(raw json.RawMessage) json.RawMessage {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &rf) != nil || rf.Type != "json_schema" || len(rf.JSONSchema.Schema) == 0 {
		return nil
	}
	return rf.JSONSchema.Schema
}

// generateFor is generate for a request that may ask for structured output:
// with a schema and no tool call, the text is one JSON document satisfying
// it (never truncated: a cut document would be invalid).
func generateFor(s seed, index, limit int, call *toolSpec, schema json.RawMessage) *completion {
	if schema == nil || call != nil {
		return generate(s, index, limit, call)
	}
	rng := s.derive("choice", uint64(index)).rng()
	b, _ := json.Marshal(genValue(rng, decodeSchema(schema), 0))
	doc := string(b)
	return &completion{words: []string{doc}, tokens: CountTokens(doc)}
}
