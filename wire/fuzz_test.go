package wire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	groundhog "github.com/groundhog-ai/groundhog"
)

// readAllLimited reads at most 10,000 events of input, so a fuzz input of
// many tiny events stays fast.
func readAllLimited(r *SSEReader) ([]groundhog.Event, error) {
	var evs []groundhog.Event
	for range 10_000 {
		e, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// FuzzSSEReader: the reader never panics; how the input is split into
// reads, and how large the reader's buffer starts (NewLiveSSEReader), never
// change what it returns; and what it returns, written back with
// AppendEvent, reads back identically and ends cleanly.
func FuzzSSEReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := readAllLimited(NewSSEReader(bytes.NewReader(data)))
		evs1, err1 := readAllLimited(NewSSEReader(iotest.OneByteReader(bytes.NewReader(data))))
		if !eventsEqual(evs, evs1) || !sameErr(err, err1) {
			t.Fatalf("read in one piece: %q, %v\nread byte by byte: %q, %v", evs, err, evs1, err1)
		}
		for name, rd := range map[string]io.Reader{"in one piece": bytes.NewReader(data), "in halves": iotest.HalfReader(bytes.NewReader(data))} {
			evs2, err2 := readAllLimited(NewLiveSSEReader(rd))
			if !eventsEqual(evs, evs2) || !sameErr(err, err2) {
				t.Fatalf("read in one piece: %q, %v\nread live %s: %q, %v", evs, err, name, evs2, err2)
			}
		}
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
		var out []byte
		for _, e := range evs {
			out = AppendEvent(out, e)
		}
		again, err := readAllLimited(NewSSEReader(bytes.NewReader(out)))
		if len(evs) < 10_000 && (err != io.EOF || !eventsEqual(again, evs)) {
			t.Fatalf("re-read %q, %v\nwant %q", again, err, evs)
		}
	})
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b) || errors.Is(b, a) || a.Error() == b.Error()
}

var fuzzShapes = []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages, groundhog.ShapeEmbeddings}

// FuzzBodyFromEvents: no stream, however malformed, makes BodyFromEvents,
// StreamComplete or UsageFromEvents panic. And whenever a body comes out,
// the round trip body → events → body reproduces it exactly, and a
// complete stream converts into a complete stream.
func FuzzBodyFromEvents(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i, s := range fuzzShapes {
			if s == shapeOf(f, file) {
				f.Add(uint8(i), data)
			}
		}
	}
	f.Add(uint8(0), []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add(uint8(2), []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(func(t *testing.T, shapeIdx uint8, stream []byte) {
		shape := fuzzShapes[int(shapeIdx)%len(fuzzShapes)]
		evs, _ := readAllLimited(NewSSEReader(bytes.NewReader(stream)))
		complete := StreamComplete(shape, evs)
		UsageFromEvents(shape, evs)
		body, err := BodyFromEvents(shape, evs)
		if err != nil {
			return
		}
		UsageFromBody(shape, body)
		evs2, err := EventsFromBody(shape, body, true)
		if err != nil {
			t.Fatalf("EventsFromBody of our own body %s: %v", body, err)
		}
		if complete && !StreamComplete(shape, evs2) {
			t.Fatalf("complete stream converted into an incomplete one\nbody %s", body)
		}
		body2, err := BodyFromEvents(shape, evs2)
		if err != nil {
			t.Fatalf("BodyFromEvents(EventsFromBody(%s)): %v", body, err)
		}
		if !bytes.Equal(body, body2) {
			t.Fatalf("not a fixed point:\n%s\n%s", body, body2)
		}
	})
}
