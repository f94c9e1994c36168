package wire

import (
	"bytes"

	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// decodeUsageFields fills f from the usage object raw as
// json.Unmarshal(raw, f) does, without reflection (json.Unmarshal of the
// usage object was 6 % of the gateway's CPU on a 1 KB miss:
// docs/design/0010-miss-path.md). It reports false, having left f untouched,
// whenever it cannot promise json.Unmarshal's result: raw not valid JSON
// or not an object, a key with an escape or a non-ASCII byte (where
// encoding/json's case folding goes beyond ASCII), a details value that is
// neither an object nor null (json.Unmarshal's type error), nesting it does
// not know. The caller then takes the json.Unmarshal way. Keys match as
// encoding/json matches the struct's field names (ASCII case folded; no two
// names here fold together), the last duplicate winning, a repeated details
// object decoded into the same struct (so its fields merge, as
// json.Unmarshal's do), null into a pointer leaving it nil, null into a
// RawMessage giving "null". Pinned by TestDecodeUsageFieldsMatchesUnmarshal.
func decodeUsageFields(raw []byte, f *usageFields) bool { return decodeUsage(raw, f, false) }

// decodeUsage is decodeUsageFields; valid says raw is already known to be
// valid JSON (a value cut from a body json.Valid accepted:
// UsageFromValidBody), which spares its json.Valid.
func decodeUsage(raw []byte, f *usageFields, valid bool) bool {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || b[0] != '{' || !valid && !jsonwalk.Valid(b) {
		return false
	}
	var out usageFields
	ok := validMembers(b, func(key, val []byte) bool {
		switch {
		case asciiFoldEqual(key, "prompt_tokens"):
			out.PromptTokens = val
		case asciiFoldEqual(key, "completion_tokens"):
			out.CompletionTokens = val
		case asciiFoldEqual(key, "input_tokens"):
			out.InputTokens = val
		case asciiFoldEqual(key, "output_tokens"):
			out.OutputTokens = val
		case asciiFoldEqual(key, "cache_read_input_tokens"):
			out.CacheReadInputTokens = val
		case asciiFoldEqual(key, "cache_creation_input_tokens"):
			out.CacheCreationInputTokens = val
		case asciiFoldEqual(key, "inputtokens"):
			out.BedrockInput = val
		case asciiFoldEqual(key, "outputtokens"):
			out.BedrockOutput = val
		case asciiFoldEqual(key, "cachereadinputtokens"):
			out.BedrockCacheRead = val
		case asciiFoldEqual(key, "cachewriteinputtokens"):
			out.BedrockCacheWrite = val
		case asciiFoldEqual(key, "iterations"):
			out.Iterations = val
		case asciiFoldEqual(key, "prompt_tokens_details"):
			return decodeDetails(val, &out.PromptTokensDetails)
		case asciiFoldEqual(key, "input_tokens_details"):
			return decodeDetails(val, &out.InputTokensDetails)
		case asciiFoldEqual(key, "cache_creation"):
			if isNull(val) {
				out.CacheCreation = nil
				return true
			}
			if val[0] != '{' {
				return false
			}
			if out.CacheCreation == nil {
				out.CacheCreation = new(cacheCreation)
			}
			cc := out.CacheCreation
			return validMembers(val, func(k, v []byte) bool {
				switch {
				case asciiFoldEqual(k, "ephemeral_5m_input_tokens"):
					cc.Ephemeral5m = v
				case asciiFoldEqual(k, "ephemeral_1h_input_tokens"):
					cc.Ephemeral1h = v
				}
				return true
			})
		}
		return true
	})
	if !ok {
		return false
	}
	*f = out
	return true
}

// decodeDetails is decodeUsageFields for a cacheDetails value.
func decodeDetails(val []byte, p **cacheDetails) bool {
	if isNull(val) {
		*p = nil
		return true
	}
	if val[0] != '{' {
		return false
	}
	if *p == nil {
		*p = new(cacheDetails)
	}
	d := *p
	return validMembers(val, func(k, v []byte) bool {
		switch {
		case asciiFoldEqual(k, "cached_tokens"):
			d.CachedTokens = v
		case asciiFoldEqual(k, "cache_write_tokens"):
			d.CacheWriteTokens = v
		}
		return true
	})
}
