package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// MaxEventSize bounds one SSE line and the joined data of one event. A
// provider stream never comes near it; the bound keeps a broken or hostile
// upstream from growing the gateway's memory without limit.
const MaxEventSize = 16 << 20

// ErrEventTooLarge is returned by SSEReader.Next when a line or an event's
// data exceeds MaxEventSize.
var ErrEventTooLarge = errors.New("wire: SSE line or event exceeds 16 MiB")

// ErrNotData is returned by a data-only SSEReader (NewDataSSEReader) for a
// line that is neither blank, a comment nor a data field.
var ErrNotData = errors.New("wire: SSE line is not a data line")

// emptyReadLimit is how many consecutive (0, nil) reads are tolerated before
// giving up, as bufio does.
const emptyReadLimit = 100

// SSEReader parses a text/event-stream (the WHATWG server-sent events
// format) into groundhog.Events. It is not safe for concurrent use.
//
// Lines may end in LF, CRLF or a lone CR. Comment lines (":…") and the "id"
// and "retry" fields are ignored, as are unknown fields. Several "data" lines
// of one event are joined with "\n". A leading UTF-8 byte-order mark is
// skipped. As the specification says, an event without any data line is not
// dispatched (its "event" name is dropped with it).
type SSEReader struct {
	r   io.Reader
	max int

	buf        []byte // read buffer; buf[start:end] is unread input
	start, end int
	eof        bool
	err        error // sticky: once set, Next returns it forever
	first      bool  // no line read yet (BOM check pending)

	data     []byte // data lines of the event being read, joined by '\n'
	hasData  bool   // at least one data line seen (data may still be empty)
	name     []byte
	pending  bool   // a field line was seen since the last dispatch
	lastName string // previous event name, reused to avoid an allocation
	dataOnly bool   // any field but data is an error (NewDataSSEReader)
	live     bool   // the buffer starts small and grows with the stream's pace (NewLiveSSEReader)
}

// NewSSEReader returns a reader of the event stream r. It reads from r in
// chunks of its own (4 KB, more for a longer line); r need not be buffered.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: r, max: MaxEventSize, buf: make([]byte, sseBulkBuf), first: true}
}

// NewLiveSSEReader is NewSSEReader for a stream that arrives as it is made,
// a provider's tokens: it starts with a read buffer of sseLiveBuf, which
// the reader holds for as long as it waits for the next event (thousands of
// streams may wait at once) and which a token's event fits in. A read that
// fills the buffer doubles it, up to the 4 KB chunks of NewSSEReader: a
// stream that comes faster than it is read (a burst, a long answer sent at
// once) is read as NewSSEReader reads it, after a few doublings.
func NewLiveSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: r, max: MaxEventSize, buf: make([]byte, sseLiveBuf), first: true, live: true}
}

// The read buffer's sizes: NewSSEReader's, and NewLiveSSEReader's at first.
const (
	sseBulkBuf = 4096
	sseLiveBuf = 512
)

// NewDataSSEReader is NewSSEReader for a provider whose streams carry data
// lines only (Gemini: its SDKs fail on any other line): a line that is
// neither blank, a comment nor a data field is an error wrapping
// ErrNotData, not an unknown field to ignore.
func NewDataSSEReader(r io.Reader) *SSEReader {
	rd := NewSSEReader(r)
	rd.dataOnly = true
	return rd
}

// NewLiveDataSSEReader is NewDataSSEReader's live form (NewLiveSSEReader).
func NewLiveDataSSEReader(r io.Reader) *SSEReader {
	rd := NewLiveSSEReader(r)
	rd.dataOnly = true
	return rd
}

// Next returns the next event. Its Data is a fresh slice the caller may keep;
// Name is the last "event" field of the event ("" when absent).
//
// At a clean end of input (after a blank line, or with only comments or
// blank lines since the last event) Next returns io.EOF. If the input ends
// in the middle of an event or of a line it returns io.ErrUnexpectedEOF: the
// stream was truncated. A line or event larger than MaxEventSize yields an
// error wrapping ErrEventTooLarge; a read error is returned wrapped. Every
// error is final: later calls return it again.
func (r *SSEReader) Next() (groundhog.Event, error) {
	if r.err != nil {
		return groundhog.Event{}, r.err
	}
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.pending {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return groundhog.Event{}, err
		}
		if r.first {
			r.first = false
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			r.name = r.name[:0]
			r.pending = false
			continue
		}
		if line[0] == ':' {
			continue // comment, e.g. a keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if r.hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > r.max {
				r.err = errEventTooLarge()
				return groundhog.Event{}, r.err
			}
			r.data = append(r.data, value...)
			r.hasData = true
			r.pending = true
		case "event":
			r.name = append(r.name[:0], value...)
			r.pending = true
		case "id", "retry":
			r.pending = true
		}
		if r.dataOnly && string(field) != "data" {
			r.err = errNotData(line)
			return groundhog.Event{}, r.err
		}
	}
}

// errEventTooLarge and errNotData are Next's errors, built outside its
// frame: a stream's reader waits for each event under it (design record
// 0021).
//
//go:noinline
func errEventTooLarge() error { return fmt.Errorf("event data: %w", ErrEventTooLarge) }

//go:noinline
func errNotData(line []byte) error { return fmt.Errorf("%w: %.64q", ErrNotData, line) }

// dispatch returns the event being read and resets the per-event state.
func (r *SSEReader) dispatch() groundhog.Event {
	ev := groundhog.Event{Name: r.internName(), Data: bytes.Clone(r.data)}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	r.data = r.data[:0]
	r.hasData = false
	r.name = r.name[:0]
	r.pending = false
	return ev
}

// internName returns r.name as a string without allocating for the names
// providers send over and over.
func (r *SSEReader) internName() string {
	if len(r.name) == 0 {
		return ""
	}
	if string(r.name) == r.lastName {
		return r.lastName
	}
	var s string
	switch string(r.name) {
	case "message_start":
		s = "message_start"
	case "content_block_start":
		s = "content_block_start"
	case "content_block_delta":
		s = "content_block_delta"
	case "content_block_stop":
		s = "content_block_stop"
	case "message_delta":
		s = "message_delta"
	case "message_stop":
		s = "message_stop"
	case "ping":
		s = "ping"
	case "error":
		s = "error"
	case "response.output_text.delta":
		s = "response.output_text.delta"
	case "response.function_call_arguments.delta":
		s = "response.function_call_arguments.delta"
	default:
		s = string(r.name)
	}
	r.lastName = s
	return s
}

// readLine returns the next line without its terminator. The slice aliases
// the read buffer and is valid until the next call. At end of input it
// returns io.EOF, or io.ErrUnexpectedEOF when a partial line is left.
func (r *SSEReader) readLine() ([]byte, error) {
	scanned := 0 // bytes of buf[start:end] known to hold no line terminator
	for {
		avail := r.buf[r.start:r.end]
		if i := indexEOL(avail[scanned:]); i >= 0 {
			i += scanned
			n := 1
			if avail[i] == '\r' {
				if i+1 == len(avail) && !r.eof {
					// A CR at the end of what we have: it may be the first
					// half of a CRLF. Read more before deciding.
					scanned = i
					if err := r.fill(); err != nil {
						return nil, err
					}
					continue
				}
				if i+1 < len(avail) && avail[i+1] == '\n' {
					n = 2
				}
			}
			if i > r.max {
				return nil, fmt.Errorf("line: %w", ErrEventTooLarge)
			}
			r.start += i + n
			return avail[:i], nil
		}
		scanned = len(avail)
		if r.eof {
			if len(avail) > 0 {
				r.start = r.end
				return nil, io.ErrUnexpectedEOF
			}
			return nil, io.EOF
		}
		if len(avail) > r.max {
			return nil, fmt.Errorf("line: %w", ErrEventTooLarge)
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	limit := b
	if i >= 0 {
		limit = b[:i]
	}
	if j := bytes.IndexByte(limit, '\r'); j >= 0 {
		return j
	}
	return i
}

// fill reads more input into the buffer, compacting or growing it first.
func (r *SSEReader) fill() error {
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	if r.end == len(r.buf) {
		size := 2 * len(r.buf)
		if limit := r.max + 2; size > limit {
			size = limit // room for a maximal line and its CRLF
		}
		if size <= len(r.buf) {
			return fmt.Errorf("line: %w", ErrEventTooLarge)
		}
		r.grow(size)
	}
	for range emptyReadLimit {
		n, err := r.r.Read(r.buf[r.end:])
		r.end += n
		if err == io.EOF {
			r.eof = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("wire: reading event stream: %w", err)
		}
		if n > 0 {
			if r.live && r.end == len(r.buf) && len(r.buf) < sseBulkBuf {
				r.grow(2 * len(r.buf)) // more may be waiting: read it in larger chunks
			}
			return nil
		}
	}
	return fmt.Errorf("wire: reading event stream: %w", io.ErrNoProgress)
}

// grow replaces the read buffer with one of size bytes holding its input.
func (r *SSEReader) grow(size int) {
	nb := make([]byte, size)
	copy(nb, r.buf[:r.end])
	r.buf = nb
}

// WriteEvent writes ev to w in SSE format: "event: <Name>\n" when Name is
// not empty, one "data: <line>\n" per line of Data, then a blank line. Line
// breaks inside Data (LF, CRLF or CR) become separate data lines, so a
// reader rejoins them with "\n"; CR and LF in Name are dropped because they
// would break the framing.
func WriteEvent(w io.Writer, ev groundhog.Event) error {
	bp := writeBufs.Get().(*[]byte)
	b := AppendEvent((*bp)[:0], ev)
	_, err := w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		writeBufs.Put(bp)
	}
	return err
}

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// AppendEventFor appends ev in the stream framing of shape: the AWS
// eventstream binary framing for Converse, SSE (AppendEvent) for every
// other shape.
func AppendEventFor(shape groundhog.Shape, dst []byte, ev groundhog.Event) []byte {
	if shape == groundhog.ShapeConverse {
		return bedrock.AppendEvent(dst, ev)
	}
	return AppendEvent(dst, ev)
}

// StreamContentType is the Content-Type of a stream of shape.
func StreamContentType(shape groundhog.Shape) string {
	if shape == groundhog.ShapeConverse {
		return bedrock.ContentType
	}
	return "text/event-stream"
}

// AppendEvent appends ev in SSE format, exactly as WriteEvent writes it, to
// dst and returns the extended slice. It allocates only when dst must grow.
func AppendEvent(dst []byte, ev groundhog.Event) []byte {
	if ev.Name != "" {
		dst = append(dst, "event: "...)
		for i := 0; i < len(ev.Name); i++ {
			if c := ev.Name[i]; c != '\r' && c != '\n' {
				dst = append(dst, c)
			}
		}
		dst = append(dst, '\n')
	}
	data := ev.Data
	for {
		i := indexEOL(data)
		line := data
		if i >= 0 {
			line = data[:i]
		}
		if len(line) == 0 {
			dst = append(dst, "data:\n"...)
		} else {
			dst = append(dst, "data: "...)
			dst = append(dst, line...)
			dst = append(dst, '\n')
		}
		if i < 0 {
			break
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n')
}
