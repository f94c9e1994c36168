// Package bedrock holds the Amazon Bedrock runtime wire format of the
// Converse shape: the routes POST /model/{modelId}/converse and
// /model/{modelId}/converse-stream, the request as the fingerprint reads it
// (model id from the path, cachePoint blocks left out), the response body,
// the ConverseStream events in the AWS eventstream binary framing (encoded
// and decoded with the AWS SDK's eventstream package), usage and the
// exceptions (x-amzn-errortype).
//
// A ConverseStream event is held as a groundhog.Event whose Name is the
// event type (":event-type": messageStart, contentBlockStart,
// contentBlockDelta, contentBlockStop, messageStop, metadata) and whose Data
// is the JSON payload, so the cache, coalescing and the ledger treat it like
// any server-sent event; an exception in the stream has the Name
// "exception:" + its type (":exception-type", e.g. throttlingException).
package bedrock

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"

	groundhog "github.com/groundhog-ai/groundhog"
)

// ContentType is the media type of a ConverseStream response.
const ContentType = "application/vnd.amazon.eventstream"

// ExceptionPrefix starts the Name of an event that carries an exception
// (":message-type" exception or error) instead of an event.
const ExceptionPrefix = "exception:"

// Event names of a ConverseStream, in the order Bedrock sends them.
const (
	EventMessageStart      = "messageStart"
	EventContentBlockStart = "contentBlockStart"
	EventContentBlockDelta = "contentBlockDelta"
	EventContentBlockStop  = "contentBlockStop"
	EventMessageStop       = "messageStop"
	EventMetadata          = "metadata"
)

// encoders are reused: an eventstream.Encoder keeps two buffers between
// messages and is not safe for concurrent use.
var encoders = sync.Pool{New: func() any { return eventstream.NewEncoder() }}

// appendWriter is an io.Writer that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// AppendEvent appends ev to dst as one eventstream message: an event with
// headers :message-type event, :event-type ev.Name and :content-type
// application/json, or, for an exception event, :message-type exception
// and :exception-type.
func AppendEvent(dst []byte, ev groundhog.Event) []byte {
	msg := eventstream.Message{Headers: headersFor(ev.Name), Payload: ev.Data}
	enc := encoders.Get().(*eventstream.Encoder)
	w := appendWriter{b: dst}
	if err := enc.Encode(&w, msg); err != nil {
		// Encode fails only on a header it cannot represent (a name or
		// value over its length limit), never for the names written here.
		panic(fmt.Sprintf("bedrock: encode event %q: %v", ev.Name, err))
	}
	encoders.Put(enc)
	return w.b
}

// headerSets remembers the headers of each ConverseStream event name: a
// stream has six names, and building the headers is most of an event's
// allocations. The encoder only reads them.
var headerSets sync.Map // event name → eventstream.Headers

func headersFor(name string) eventstream.Headers {
	if hs, ok := headerSets.Load(name); ok {
		return hs.(eventstream.Headers)
	}
	var hs eventstream.Headers
	if typ, ok := cutException(name); ok {
		hs.Set(eventstreamapi.MessageTypeHeader, eventstream.StringValue(eventstreamapi.ExceptionMessageType))
		hs.Set(eventstreamapi.ExceptionTypeHeader, eventstream.StringValue(typ))
	} else {
		hs.Set(eventstreamapi.MessageTypeHeader, eventstream.StringValue(eventstreamapi.EventMessageType))
		hs.Set(eventstreamapi.EventTypeHeader, eventstream.StringValue(name))
	}
	hs.Set(eventstreamapi.ContentTypeHeader, eventstream.StringValue("application/json"))
	switch name { // only the known names: the map stays bounded whatever a provider sends
	case EventMessageStart, EventContentBlockStart, EventContentBlockDelta, EventContentBlockStop, EventMessageStop, EventMetadata:
		headerSets.Store(name, hs)
	}
	return hs
}

func cutException(name string) (string, bool) {
	if len(name) > len(ExceptionPrefix) && name[:len(ExceptionPrefix)] == ExceptionPrefix {
		return name[len(ExceptionPrefix):], true
	}
	return "", false
}

// IsException reports whether ev carries an exception.
func IsException(ev groundhog.Event) bool {
	_, ok := cutException(ev.Name)
	return ok
}

// ErrMalformedStream reports eventstream bytes that do not decode: a bad
// prelude or checksum, a message without its type headers, or a stream cut
// inside a message.
var ErrMalformedStream = errors.New("bedrock: malformed eventstream")

// Reader reads the events of a ConverseStream response.
type Reader struct {
	r   countingReader
	dec *eventstream.Decoder
}

// countingReader counts the bytes read, so that an end of input inside a
// message (the decoder may report it as a bare io.EOF) is told apart from
// the clean end between two messages.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// NewReader returns a Reader of the eventstream messages of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: countingReader{r: r}, dec: eventstream.NewDecoder()}
}

// Next returns the next event. It returns io.EOF at a clean end (between
// two messages); a stream cut inside a message, or bytes that do not
// decode, give an error wrapping ErrMalformedStream, and an error of the
// underlying reader is returned wrapped. An ":message-type" error message
// becomes an exception event whose type is its :error-code and whose
// payload is {"message": :error-message}.
//
// A stream's flight waits for each event under Next: its frame is kept
// small, the errors and the event built by functions of their own
// (gateway: design record 0021).
func (r *Reader) Next() (groundhog.Event, error) {
	start := r.r.n
	msg, err := r.dec.Decode(&r.r, nil)
	if err != nil {
		return groundhog.Event{}, r.decodeError(err, start)
	}
	return eventOf(msg)
}

// decodeError is Next's error for the decoder's err, the stream read from
// offset start.
//
//go:noinline
func (r *Reader) decodeError(err error, start int64) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if r.r.n == start && err == io.EOF {
			return io.EOF
		}
		return fmt.Errorf("%w: stream ends inside a message", ErrMalformedStream)
	}
	return fmt.Errorf("%w: %w", ErrMalformedStream, err)
}

//go:noinline
func eventOf(msg eventstream.Message) (groundhog.Event, error) {
	str := func(name string) string {
		if v := msg.Headers.Get(name); v != nil {
			if s, ok := v.(eventstream.StringValue); ok {
				return string(s)
			}
			return v.String()
		}
		return ""
	}
	switch mt := str(eventstreamapi.MessageTypeHeader); mt {
	case eventstreamapi.EventMessageType:
		name := str(eventstreamapi.EventTypeHeader)
		if name == "" {
			return groundhog.Event{}, fmt.Errorf("%w: event without %s", ErrMalformedStream, eventstreamapi.EventTypeHeader)
		}
		return groundhog.Event{Name: name, Data: msg.Payload}, nil
	case eventstreamapi.ExceptionMessageType:
		typ := str(eventstreamapi.ExceptionTypeHeader)
		if typ == "" {
			return groundhog.Event{}, fmt.Errorf("%w: exception without %s", ErrMalformedStream, eventstreamapi.ExceptionTypeHeader)
		}
		return groundhog.Event{Name: ExceptionPrefix + typ, Data: msg.Payload}, nil
	case eventstreamapi.ErrorMessageType:
		code := str(eventstreamapi.ErrorCodeHeader)
		if code == "" {
			code = "InternalServerException"
		}
		return groundhog.Event{Name: ExceptionPrefix + code, Data: messageBody(str(eventstreamapi.ErrorMessageHeader))}, nil
	default:
		return groundhog.Event{}, fmt.Errorf("%w: unknown %s %q", ErrMalformedStream, eventstreamapi.MessageTypeHeader, mt)
	}
}
