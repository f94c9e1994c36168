package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	groundhog "github.com/groundhog-ai/groundhog"
)

// readAll reads every event of r and the error that ended it.
func readAll(r *SSEReader) ([]groundhog.Event, error) {
	var evs []groundhog.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func ev(name, data string) groundhog.Event { return groundhog.Event{Name: name, Data: []byte(data)} }

// readers wraps input in the readers every parsing case must survive: whole,
// one byte at a time (every split point), halves, and data with io.EOF.
var readers = map[string]func(string) io.Reader{
	"plain":   func(s string) io.Reader { return strings.NewReader(s) },
	"onebyte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"half":    func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	"dataerr": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []groundhog.Event
		err  error
	}{
		{"empty", "", nil, io.EOF},
		{"one event", "data: hello\n\n", []groundhog.Event{ev("", "hello")}, io.EOF},
		{"named", "event: message_start\ndata: {}\n\n", []groundhog.Event{ev("message_start", "{}")}, io.EOF},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", []groundhog.Event{ev("", "a\nb\n\nc")}, io.EOF},
		{"no space after colon", "data:x\nevent:y\n\n", []groundhog.Event{ev("y", "x")}, io.EOF},
		{"only one space stripped", "data:  two\n\n", []groundhog.Event{ev("", " two")}, io.EOF},
		{"CRLF", "event: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata: [DONE]\r\n\r\n",
			[]groundhog.Event{ev("a", "1\n2"), ev("", "[DONE]")}, io.EOF},
		{"lone CR", "data: 1\rdata: 2\r\rdata: 3\r\r", []groundhog.Event{ev("", "1\n2"), ev("", "3")}, io.EOF},
		{"comments and keep-alives", ": keep-alive\n\n: OPENROUTER PROCESSING\ndata: x\n: mid-event comment\ndata: y\n\n: bye\n",
			[]groundhog.Event{ev("", "x\ny")}, io.EOF},
		{"id retry and unknown fields ignored", "id: 7\nretry: 1000\nfoo: bar\ndata: z\n\n", []groundhog.Event{ev("", "z")}, io.EOF},
		{"field without colon", "data\n\n", []groundhog.Event{ev("", "")}, io.EOF},
		{"event without data is dropped", "event: ping\n\ndata: after\n\n", []groundhog.Event{ev("", "after")}, io.EOF},
		{"name does not leak to next event", "event: a\n\ndata: b\n\n", []groundhog.Event{ev("", "b")}, io.EOF},
		{"last name wins", "event: a\nevent: b\ndata: c\n\n", []groundhog.Event{ev("b", "c")}, io.EOF},
		{"BOM", "\xEF\xBB\xBFdata: bom\n\n", []groundhog.Event{ev("", "bom")}, io.EOF},
		{"extra blank lines", "\n\n\ndata: a\n\n\n\ndata: b\n\n\n", []groundhog.Event{ev("", "a"), ev("", "b")}, io.EOF},
		{"colon in value", "data: {\"a\":\"b:c\"}\n\n", []groundhog.Event{ev("", `{"a":"b:c"}`)}, io.EOF},
		{"truncated: no blank line", "data: a\n\ndata: b\n", []groundhog.Event{ev("", "a")}, io.ErrUnexpectedEOF},
		{"truncated: mid line", "data: a\n\ndata: {\"par", []groundhog.Event{ev("", "a")}, io.ErrUnexpectedEOF},
		{"truncated: event name only", "event: message_stop\n", nil, io.ErrUnexpectedEOF},
		{"truncated: CR at end", "data: a\r", nil, io.ErrUnexpectedEOF},
		{"truncated: comment without newline", ": x", nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			for kind, newReader := range map[string]func(io.Reader) *SSEReader{"": NewSSEReader, "live/": NewLiveSSEReader} {
				t.Run(tt.name+"/"+kind+rname, func(t *testing.T) {
					got, err := readAll(newReader(mk(tt.in)))
					if !errors.Is(err, tt.err) {
						t.Fatalf("error = %v, want %v", err, tt.err)
					}
					if !eventsEqual(got, tt.want) {
						t.Fatalf("events = %q, want %q", got, tt.want)
					}
				})
			}
		}
	}
}

// eventReads gives one event per Read, as a provider's tokens arrive.
type eventReads struct{ events []string }

func (r *eventReads) Read(p []byte) (int, error) {
	if len(r.events) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.events[0])
	if r.events[0] = r.events[0][n:]; r.events[0] == "" {
		r.events = r.events[1:]
	}
	return n, nil
}

// A live reader waits for each token with a small buffer, and reads a
// stream that comes faster than it is read in 4 KB chunks, as NewSSEReader
// does; either way its events are NewSSEReader's.
func TestLiveSSEReaderBuffer(t *testing.T) {
	var tokens []string
	for i := range 200 {
		tokens = append(tokens, fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token %d\"}}]}\n\n", i))
	}
	whole := strings.Join(tokens, "")
	want, _ := readAll(NewSSEReader(strings.NewReader(whole)))

	trickle := NewLiveSSEReader(&eventReads{events: tokens})
	got, err := readAll(trickle)
	if err != io.EOF || !eventsEqual(got, want) {
		t.Fatalf("events one per read: %d, %v; want %d", len(got), err, len(want))
	}
	if len(trickle.buf) != sseLiveBuf {
		t.Errorf("a stream read one token at a time grew the buffer to %d bytes, want %d", len(trickle.buf), sseLiveBuf)
	}

	burst := NewLiveSSEReader(strings.NewReader(whole))
	got, err = readAll(burst)
	if err != io.EOF || !eventsEqual(got, want) {
		t.Fatalf("events read at once: %d, %v; want %d", len(got), err, len(want))
	}
	if len(burst.buf) != sseBulkBuf {
		t.Errorf("a stream read as fast as it comes left the buffer at %d bytes, want %d", len(burst.buf), sseBulkBuf)
	}
}

func eventsEqual(a, b []groundhog.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

func TestSSEReaderErrorsAreSticky(t *testing.T) {
	r := NewSSEReader(strings.NewReader("data: a\n\ndata: b"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != io.ErrUnexpectedEOF {
			t.Fatalf("err = %v, want io.ErrUnexpectedEOF every time", err)
		}
	}
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)))
	got, err := readAll(r)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping %v", err, boom)
	}
	if len(got) != 1 {
		t.Fatalf("got %d events before the error, want 1", len(got))
	}
}

func TestSSEReaderNoProgress(t *testing.T) {
	r := NewSSEReader(zeroReader{})
	if _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestSSEReaderTooLarge(t *testing.T) {
	tests := []struct {
		name string
		max  int
		in   string
		want int // events read before the error
	}{
		{"long line", 16, "data: ok\n\ndata: 0123456789abcdefXYZ\n\n", 1},
		{"long line without newline", 16, "data: 0123456789abcdefXYZ", 0},
		{"many data lines", 16, "data: 0123456789\ndata: 0123456789\n\n", 0},
		{"exact limit is fine", 16, "data: 0123456789\n\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(iotest.HalfReader(strings.NewReader(tt.in)))
			r.max = tt.max
			got, err := readAll(r)
			if len(got) != tt.want {
				t.Fatalf("read %d events, want %d", len(got), tt.want)
			}
			if tt.name == "exact limit is fine" {
				if err != io.EOF {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				return
			}
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err = %v, want ErrEventTooLarge", err)
			}
		})
	}
}

// TestSSEReaderRealLimit checks the default 16 MiB bound itself once: a
// line just over it fails, one just under it is read.
func TestSSEReaderRealLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 2 x 16 MiB")
	}
	under := "data: " + strings.Repeat("a", MaxEventSize-len("data: ")) + "\n\n"
	got, err := readAll(NewSSEReader(strings.NewReader(under)))
	if err != io.EOF || len(got) != 1 || len(got[0].Data) != MaxEventSize-len("data: ") {
		t.Fatalf("line at the limit: %d events, err %v", len(got), err)
	}
	over := "data: " + strings.Repeat("a", MaxEventSize) + "\n\n"
	if _, err := readAll(NewSSEReader(strings.NewReader(over))); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("line over the limit: err = %v, want ErrEventTooLarge", err)
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		name string
		ev   groundhog.Event
		want string
	}{
		{"unnamed", ev("", `{"a":1}`), "data: {\"a\":1}\n\n"},
		{"named", ev("message_stop", `{"type":"message_stop"}`), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{"multi-line", ev("", "a\nb\n\nc"), "data: a\ndata: b\ndata:\ndata: c\n\n"},
		{"trailing newline", ev("", "a\n"), "data: a\ndata:\n\n"},
		{"empty data", ev("x", ""), "event: x\ndata:\n\n"},
		{"CR and CRLF split lines", ev("", "a\r\nb\rc"), "data: a\ndata: b\ndata: c\n\n"},
		{"newline in name dropped", ev("a\r\nb", "1"), "event: ab\ndata: 1\n\n"},
		{"done", ev("", "[DONE]"), "data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendEvent([]byte("prefix|"), tt.ev)); got != "prefix|"+tt.want {
				t.Fatalf("AppendEvent = %q, want %q", got, "prefix|"+tt.want)
			}
			var b bytes.Buffer
			if err := WriteEvent(&b, tt.ev); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("WriteEvent = %q, want %q", b.String(), tt.want)
			}
		})
	}
}

func TestWriteEventError(t *testing.T) {
	boom := errors.New("client went away")
	if err := WriteEvent(failWriter{boom}, ev("", "x")); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestAppendEventAllocationFree(t *testing.T) {
	e := ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() { buf = AppendEvent(buf[:0], e) })
	if allocs != 0 {
		t.Fatalf("AppendEvent allocates %v times per call, want 0", allocs)
	}
}

// TestSSERoundTripTestdata reads every provider stream in testdata, writes
// it back with WriteEvent and reads it again: same events.
func TestSSERoundTripTestdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) == 0 {
		t.Fatal("no testdata streams")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			evs := loadStream(t, f)
			var b bytes.Buffer
			for _, e := range evs {
				if err := WriteEvent(&b, e); err != nil {
					t.Fatal(err)
				}
			}
			again, err := readAll(NewSSEReader(iotest.OneByteReader(&b)))
			if err != io.EOF {
				t.Fatalf("re-read: %v", err)
			}
			if !reflect.DeepEqual(again, evs) {
				t.Fatal("events changed in a write/read round trip")
			}
		})
	}
}

// loadStream reads a testdata stream; it must end cleanly.
func loadStream(t testing.TB, path string) []groundhog.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := readAll(NewSSEReader(bytes.NewReader(b)))
	if err != io.EOF {
		t.Fatalf("%s: %v", path, err)
	}
	return evs
}

// A data-only reader (Gemini's streams) fails on a line that is not a data
// line, where the general reader ignores it as an unknown field; blank
// lines and comments pass.
func TestDataSSEReaderRefusesOtherLines(t *testing.T) {
	in := ": keep-alive\n\ndata: {\"a\":1}\n\nthis is not an event\n\ndata: {\"a\":2}\n\n"
	evs, err := readAll(NewSSEReader(strings.NewReader(in)))
	if err != io.EOF || len(evs) != 2 {
		t.Fatalf("general reader: %d events, %v", len(evs), err)
	}
	rd := NewDataSSEReader(strings.NewReader(in))
	ev, err := rd.Next()
	if err != nil || string(ev.Data) != `{"a":1}` {
		t.Fatalf("first event: %q %v", ev.Data, err)
	}
	if _, err := rd.Next(); !errors.Is(err, ErrNotData) {
		t.Fatalf("garbage line: %v, want ErrNotData", err)
	}
	if _, err := NewDataSSEReader(strings.NewReader("event: x\ndata: {}\n\n")).Next(); !errors.Is(err, ErrNotData) {
		t.Fatalf("event field: %v, want ErrNotData", err)
	}
}
