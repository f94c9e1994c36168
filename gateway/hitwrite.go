package gateway

import (
	"net/http"
	"sync"

	"github.com/groundhog-ai/groundhog"
)

// eventBufs holds the buffers stored SSE answers are encoded into. A buffer
// is handed to one ResponseWriter.Write and back: Write copies or sends what
// it is given before it returns, so nothing references the buffer after.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledEventBuf keeps one huge stored stream from pinning its buffer.
const maxPooledEventBuf = 1 << 20

// writeEvents writes the head and the events of a stored stream (except
// the usage chunk the client did not ask for) with one Write, from a buffer
// sized once. The whole stream is known, so its head carries its
// Content-Length: net/http then sends it as it is, with no chunk framing
// and no closing chunk of its own (a write to the connection fewer per
// answer); an SSE reader reads the same events to the end of the body.
func writeEvents(w http.ResponseWriter, status int, state string, c *call, events []groundhog.Event) {
	n := 0
	for _, ev := range events {
		n += len(ev.Name) + len(ev.Data) + 16 // "event: \n", "data: \n", "\n" and a line break or two
	}
	bp := eventBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for _, ev := range events {
		if !hiddenUsageChunk(c, ev) {
			buf = appendEvent(c, buf, ev)
		}
	}
	c.hv.set(w.Header(), "Content-Length", lengthFor(state, len(buf)))
	w.WriteHeader(status)
	_, _ = w.Write(buf)
	if cap(buf) <= maxPooledEventBuf {
		*bp = buf[:0]
		eventBufs.Put(bp)
	}
}
