package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// isInvoke reports whether a call of shape arrived on Bedrock's
// InvokeModel routes: a native Anthropic body (Messages shape) on
// /model/{modelId}/invoke[-with-response-stream]. Such a call runs the
// Messages pipeline, is sent to the Bedrock upstream and is answered in
// Bedrock's framing (chunk events, exceptions).
func isInvoke(r *http.Request, shape groundhog.Shape) bool {
	return shape == groundhog.ShapeMessages && strings.HasPrefix(r.URL.Path, "/model/")
}

// bedrockFramed reports whether a call is answered in Bedrock's framing:
// Converse, or a native InvokeModel body.
func (c *call) bedrockFramed() bool { return c.shape == groundhog.ShapeConverse || c.invoke }

// appendEvent appends ev to dst in the framing of c's route: SSE, a
// ConverseStream event, or an InvokeModelWithResponseStream chunk.
func appendEvent(c *call, dst []byte, ev groundhog.Event) []byte {
	if c.invoke {
		return bedrock.AppendChunk(dst, ev)
	}
	return wire.AppendEventFor(c.shape, dst, ev)
}

// streamContentType is the media type of c's streamed answer.
func streamContentType(c *call) string {
	if c.invoke {
		return bedrock.ContentType
	}
	return wire.StreamContentType(c.shape)
}

// invoke serves /model/{modelId}/invoke and /invoke-with-response-stream:
// a native Anthropic body (anthropic_version "bedrock-…") goes through the
// pipeline as a Messages call; any other provider's body passes through.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		s.passthrough(w, r)
		return
	}
	if _, err := s.authenticate(r); err != nil {
		s.writeError(w, r, groundhog.ShapeConverse, err)
		return
	}
	limit := max(s.cfg.MaxBodyBytes, s.cfg.PassthroughMaxBodyBytes)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		s.writeError(w, r, groundhog.ShapeConverse, groundhog.Errorf(groundhog.ETOOLARGE, "request body is over the limit of %d bytes", limit))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bedrock.IsAnthropicBody(body) {
		s.provider(groundhog.ShapeMessages)(w, r)
		return
	}
	s.passthrough(w, r)
}

// fingerprintBody returns the bytes the fingerprint reads for a call of
// shape, and whether the route itself asks for a stream. For every shape
// but Converse that is the body as sent. A Converse call takes its model
// id from the path (/model/{modelId}/converse[-stream], the id one escaped
// segment) and its stream mode from the route; its cachePoint blocks leave
// the fingerprint (wire/bedrock.FingerprintBody), so Converse and
// ConverseStream with the same inputs, with or without cachePoints, share
// one hash and one cache entry.
func fingerprintBody(r *http.Request, shape groundhog.Shape, body []byte) ([]byte, bool, error) {
	if isInvoke(r, shape) {
		modelID, stream, ok := bedrock.ParseInvokePath(r.URL.EscapedPath())
		if !ok {
			return nil, false, groundhog.Errorf(groundhog.EINVALID, "invalid InvokeModel path %s", r.URL.Path)
		}
		fp, err := bedrock.InvokeFingerprintBody(modelID, body)
		return fp, stream, err
	}
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
