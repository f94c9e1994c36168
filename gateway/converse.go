package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
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
//
// Only the first max_body_bytes are read to tell the two apart: a body
// that fits and is not JSON is refused here (InvokeModel takes JSON), and
// a native Anthropic body past the limit is a 413 as on /v1/messages (a
// gzip bomb included: the limit counts decompressed bytes). A longer body
// of another provider streams through, bounded by
// passthrough_max_body_bytes, never held in memory whole.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		s.passthrough(w, r)
		return
	}
	if _, err := s.authenticate(r); err != nil {
		s.writeError(w, r, groundhog.ShapeConverse, err)
		return
	}
	limit := s.cfg.MaxBodyBytes
	head, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		s.writeError(w, r, groundhog.ShapeConverse, httpguard.BodyError(err))
		return
	}
	if int64(len(head)) > limit {
		if looksAnthropic(head) {
			s.writeError(w, r, groundhog.ShapeConverse, groundhog.Errorf(groundhog.ETOOLARGE, "request body is over the limit of %d bytes", limit))
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		s.passthrough(w, r)
		return
	}
	if !json.Valid(head) {
		s.writeError(w, r, groundhog.ShapeConverse, groundhog.Errorf(groundhog.EINVALID, "request body is not valid JSON"))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(head))
	if bedrock.IsAnthropicBody(head) {
		s.provider(groundhog.ShapeMessages)(w, r)
		return
	}
	s.passthrough(w, r)
}

// looksAnthropic reports whether the first bytes of a body too long to
// parse carry a native Anthropic anthropic_version ("bedrock-…").
func looksAnthropic(head []byte) bool {
	i := bytes.Index(head, []byte(`"anthropic_version"`))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(head[i+len(`"anthropic_version"`):], " \t\r\n")
	rest, ok := bytes.CutPrefix(rest, []byte(":"))
	return ok && bytes.HasPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte(`"bedrock-`))
}

// fingerprintBody returns the bytes the fingerprint reads for a call of
// shape, and whether the route itself asks for a stream. For every shape
// but Converse that is the body as sent. A Converse call takes its model
// id from the path (/model/{modelId}/converse[-stream], the id one escaped
// segment) and its stream mode from the route; its cachePoint blocks leave
// the fingerprint (wire/bedrock.FingerprintBody), so Converse and
// ConverseStream with the same inputs, with or without cachePoints, share
// one hash and one cache entry.
//
// For a Gemini body, gk (when not nil) gets which of its keys may name a
// cache or a resource (gemini.RefKeys).
func fingerprintBody(r *http.Request, shape groundhog.Shape, body []byte, gk *gemini.RefKeys) ([]byte, bool, error) {
	if isInvoke(r, shape) {
		modelID, stream, ok := bedrock.ParseInvokePath(r.URL.EscapedPath())
		if !ok {
			return nil, false, groundhog.Errorf(groundhog.EINVALID, "invalid InvokeModel path %s", r.URL.Path)
		}
		fp, err := bedrock.InvokeFingerprintBody(modelID, body)
		return fp, stream, err
	}
	if shape == groundhog.ShapeGemini {
		return geminiFingerprintBody(r, body, gk) // gemini.go
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
