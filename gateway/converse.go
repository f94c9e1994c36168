package gateway

import (
	"net/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// fingerprintBody returns the bytes the fingerprint reads for a call of
// shape, and whether the route itself asks for a stream. For every shape
// but Converse that is the body as sent. A Converse call takes its model
// id from the path (/model/{modelId}/converse[-stream], the id one escaped
// segment) and its stream mode from the route; its cachePoint blocks leave
// the fingerprint (wire/bedrock.FingerprintBody), so Converse and
// ConverseStream with the same inputs, with or without cachePoints, share
// one hash and one cache entry.
func fingerprintBody(r *http.Request, shape groundhog.Shape, body []byte) ([]byte, bool, error) {
	if shape == groundhog.ShapeGemini {
		return geminiFingerprintBody(r, body) // gemini.go
	}
	if shape != groundhog.ShapeConverse {
		return body, false, nil
	}
	modelID, stream, ok := bedrock.ParsePath(r.URL.EscapedPath())
	if !ok {
		if err := bedrock.CheckModelID(r.PathValue("modelId")); err != nil {
			return nil, false, err
		}
		return nil, false, groundhog.Errorf(groundhog.EINVALID, "invalid Converse path %s", r.URL.Path)
	}
	fp, err := bedrock.FingerprintBody(modelID, body)
	return fp, stream, err
}
