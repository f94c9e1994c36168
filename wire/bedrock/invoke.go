package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"

	groundhog "github.com/groundhog-ai/groundhog"
)

// InvokeModel with a provider's native body: POST /model/{modelId}/invoke
// answers the provider's response body as JSON, and
// /model/{modelId}/invoke-with-response-stream answers an eventstream of
// "chunk" events whose payload is {"bytes": base64 of one native event}.
// For Anthropic models the native body is the Messages API's, without
// "model" (the path carries it) and "stream" (the route decides it), with
// "anthropic_version": "bedrock-2023-05-31"; the native events are the
// Messages API's stream events (message_start … message_stop).

// EventChunk is the event type of an InvokeModelWithResponseStream event.
const EventChunk = "chunk"

// AnthropicVersion is the anthropic_version of a native Anthropic body on
// Bedrock.
const AnthropicVersion = "bedrock-2023-05-31"

// InvokePath returns the upstream path of an InvokeModel call.
func InvokePath(modelID string, stream bool) string {
	p := "/model/" + escapeSegment(modelID) + "/invoke"
	if stream {
		p += "-with-response-stream"
	}
	return p
}

// ParseInvokePath reads an escaped request path of InvokeModel
// ("/model/{modelId}/invoke") or InvokeModelWithResponseStream
// ("/model/{modelId}/invoke-with-response-stream"). ok is false for any
// other path.
func ParseInvokePath(escapedPath string) (modelID string, stream, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, "/model/")
	if !found {
		return "", false, false
	}
	seg, op, found := strings.Cut(rest, "/")
	if !found {
		return "", false, false
	}
	switch op {
	case "invoke":
	case "invoke-with-response-stream":
		stream = true
	default:
		return "", false, false
	}
	id, err := url.PathUnescape(seg)
	if err != nil || CheckModelID(id) != nil {
		return "", false, false
	}
	return id, stream, true
}

// IsAnthropicBody reports whether an InvokeModel body is Anthropic's
// native Messages body for Bedrock: a JSON object whose anthropic_version
// starts with "bedrock-".
func IsAnthropicBody(body []byte) bool {
	if !bytes.Contains(body, []byte(`"anthropic_version"`)) {
		return false
	}
	var b struct {
		AnthropicVersion string `json:"anthropic_version"`
	}
	return json.Unmarshal(body, &b) == nil && strings.HasPrefix(b.AnthropicVersion, "bedrock-")
}

// InvokeFingerprintBody returns a native Anthropic InvokeModel body as the
// fingerprint of the Messages shape reads it: the body with "model" set to
// the model id of the path. anthropic_version stays (it keeps the hash
// apart from a first-party Messages call); cache_control markers and
// "stream" leave the hash by the Messages rules, so the streamed and the
// plain invoke of one body share one hash.
//
// The usual body takes one pass (spliceInvoke); the rest are decoded and
// encoded again by encoding/json.
func InvokeFingerprintBody(modelID string, body []byte) ([]byte, error) {
	if out, ok := spliceInvoke(modelID, body); ok {
		return out, nil
	}
	return decodeInvokeFingerprintBody(modelID, body)
}

// decodeInvokeFingerprintBody is InvokeFingerprintBody by encoding/json.
func decodeInvokeFingerprintBody(modelID string, body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := decodeStrict(body, &top); err != nil || top == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
	}
	if err := checkInvokeTypes(body); err != nil {
		return nil, err
	}
	top["model"] = mustMarshal(modelID)
	return mustMarshal(top), nil
}

// MessagesBody returns a native Anthropic InvokeModel body as a Messages
// API request: "model" from the path, "stream" from the route, without
// anthropic_version (which must be present and start with "bedrock-").
func MessagesBody(modelID string, stream bool, body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := decodeStrict(body, &top); err != nil || top == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
	}
	var v string
	if raw, ok := top["anthropic_version"]; !ok || json.Unmarshal(raw, &v) != nil || !strings.HasPrefix(v, "bedrock-") {
		return nil, groundhog.Errorf(groundhog.EINVALID, "anthropic_version: required, e.g. %q", AnthropicVersion)
	}
	if _, ok := top["model"]; ok {
		return nil, groundhog.Errorf(groundhog.EINVALID, "model: extraneous key [model] is not permitted")
	}
	delete(top, "anthropic_version")
	top["model"] = mustMarshal(modelID)
	top["stream"] = mustMarshal(stream)
	return mustMarshal(top), nil
}

// chunkPayload is the payload of a chunk event.
type chunkPayload struct {
	Bytes []byte `json:"bytes"` // base64 in JSON
}

// AppendChunk appends ev, a native Anthropic stream event (Name its type,
// Data its JSON), to dst as one InvokeModelWithResponseStream message: a
// chunk event carrying the event's JSON. An exception event is written as
// an exception message, and an Anthropic "error" event as an
// internalServerException (Bedrock ends a broken invoke stream with an
// exception, never with a chunk).
func AppendChunk(dst []byte, ev groundhog.Event) []byte {
	if IsException(ev) {
		return AppendEvent(dst, ev)
	}
	if ev.Name == "error" {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &e)
		return AppendEvent(dst, groundhog.Event{Name: ExceptionPrefix + "internalServerException", Data: messageBody(e.Error.Message)})
	}
	payload := make([]byte, 0, len(`{"bytes":""}`)+base64.StdEncoding.EncodedLen(len(ev.Data)))
	payload = append(payload, `{"bytes":"`...)
	payload = base64.StdEncoding.AppendEncode(payload, ev.Data)
	payload = append(payload, `"}`...)
	msg := eventstream.Message{Headers: chunkHeaders, Payload: payload}
	enc := encoders.Get().(*eventstream.Encoder)
	w := appendWriter{b: dst}
	if err := enc.Encode(&w, msg); err != nil {
		panic(fmt.Sprintf("bedrock: encode chunk: %v", err))
	}
	encoders.Put(enc)
	return w.b
}

var chunkHeaders = func() eventstream.Headers {
	var hs eventstream.Headers
	hs.Set(eventstreamapi.MessageTypeHeader, eventstream.StringValue(eventstreamapi.EventMessageType))
	hs.Set(eventstreamapi.EventTypeHeader, eventstream.StringValue(EventChunk))
	hs.Set(eventstreamapi.ContentTypeHeader, eventstream.StringValue("application/json"))
	return hs
}()

// ChunkReader reads an InvokeModelWithResponseStream response as the
// native events its chunks carry: each chunk's bytes decoded, the event's
// Name its JSON "type". Exception messages come as exception events, as
// from Reader.
type ChunkReader struct{ r *Reader }

// NewChunkReader returns a ChunkReader of the eventstream messages of r.
func NewChunkReader(r io.Reader) *ChunkReader { return &ChunkReader{r: NewReader(r)} }

// Next returns the next native event, io.EOF at a clean end, or an error
// wrapping ErrMalformedStream for a chunk that does not decode.
func (c *ChunkReader) Next() (groundhog.Event, error) {
	ev, err := c.r.Next()
	if err != nil || IsException(ev) {
		return ev, err
	}
	return ChunkEvent(ev)
}

// ChunkEvent decodes one chunk event into the native event it carries.
func ChunkEvent(ev groundhog.Event) (groundhog.Event, error) {
	if ev.Name != EventChunk {
		return groundhog.Event{}, fmt.Errorf("%w: event %q in an invoke stream", ErrMalformedStream, ev.Name)
	}
	var p chunkPayload
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return groundhog.Event{}, fmt.Errorf("%w: chunk payload: %w", ErrMalformedStream, err)
	}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(p.Bytes, &t); err != nil || t.Type == "" {
		return groundhog.Event{}, fmt.Errorf("%w: chunk bytes are not a typed JSON event", ErrMalformedStream)
	}
	return groundhog.Event{Name: t.Type, Data: p.Bytes}, nil
}
