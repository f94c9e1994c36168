package promptcache

import (
	"encoding/json"

	"github.com/groundhog-ai/groundhog"
)

// PrewarmBody returns an Anthropic Messages body that only writes body's
// prompt to the provider's cache: the same members, with max_tokens 0 and
// no stream. The provider answers it without generating anything — no
// content, stop_reason max_tokens, its usage the prompt's cache write (or
// read) — as soon as the prompt is processed, which is what
// warm-then-fan-out waits for when the request writing a prefix does not
// stream. Member values are kept byte for byte; their order is not (the
// provider's prompt does not depend on it).
// Errors are *groundhog.Error with code EINVALID (body is not an object).
func PrewarmBody(body []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "pre-warm: the request body is not a JSON object")
	}
	delete(m, "stream")
	delete(m, "diagnostics")
	m["max_tokens"] = json.RawMessage("0")
	return json.Marshal(m)
}
