package wire

import (
	"encoding/json"
	"testing"
)

// decodeUsage may skip json.Valid only for a value known to be valid
// (UsageFromValidBody's, cut from a body json.Valid accepted): for raw that
// is not valid JSON, decodeUsageFields must still say false (json.Unmarshal's
// error), and UsageFromBody must still fail. Broken (decodeUsageFields
// passing valid=true), the malformed objects below are accepted.
func TestDecodeUsageInvalidStillRefused(t *testing.T) {
	bad := []string{
		`{"prompt_tokens":1 "completion_tokens":2}`, `{"prompt_tokens":1,}`, `{"prompt_tokens":}`,
		`{"prompt_tokens":1`, `{"prompt_tokens":01}`, `{"prompt_tokens":1}}`, `{"prompt_tokens" 1}`,
		`{"prompt_tokens":tru}`, `{"x":"\q"}`, `{"prompt_tokens_details":{"cached_tokens":1,}}`,
		`{"prompt_tokens":1,"x":[1 2]}`, `{"x":"` + "\x01" + `"}`,
	}
	for _, raw := range bad {
		if json.Valid([]byte(raw)) {
			t.Fatalf("%s is valid: not a case for this test", raw)
		}
		var f usageFields
		if decodeUsageFields([]byte(raw), &f) {
			t.Errorf("decodeUsageFields(%s) = true for invalid JSON", raw)
		}
	}
}
