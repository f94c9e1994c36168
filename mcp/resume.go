package mcp

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Resumability (MCP Streamable HTTP, "Resumability and Redelivery"): when
// the gateway answers a client's tools/call with an SSE stream, every event
// carries an id of the gateway's own, "gh-STREAM-N" — STREAM random per
// stream (so ids are unique within the MCP session and name their stream),
// N the event's index, 0 being the priming event sent first with no data.
// The gateway keeps each stream's events (streamStore) until a retention
// after its last event, within a byte bound for all streams. A client whose
// connection broke sends GET with its Mcp-Session-Id and Last-Event-ID and
// gets the events after that id — the call's result among them once the
// call ended, which it does even when the client went away — then the rest
// of the stream live if it is still running; the answer ends with the
// stream's last event.
//
// The streams live in the gateway's memory: a resume must reach the
// replica that answered the POST.

// eventIDPrefix starts the ids of the gateway's own events; a Last-Event-ID
// without it belongs to an HTTP server's stream and is relayed to it.
const eventIDPrefix = "gh-"

// Resume errors, answered 400 with a JSON-RPC error body.
var (
	errEventMalformed = errors.New("Last-Event-ID is not an event id of this gateway")
	errEventUnknown   = errors.New("no stream of this MCP session has that Last-Event-ID: it expired (see mcp.resume.retention), was dropped past mcp.resume.max_bytes, or belongs to another session")
	errEventPurged    = errors.New("the events after that Last-Event-ID were dropped past mcp.resume.max_bytes: the stream cannot be resumed")
)

// streamStore keeps the events of the gateway's answer streams. A stream
// is kept while it runs and until retain after it ended; past maxBytes
// (the data of every kept event) the oldest streams are dropped first, a
// running one included (it keeps answering its own client, but cannot be
// resumed). Expired streams are dropped as new ones open.
type streamStore struct {
	clock    groundhog.Clock
	retain   time.Duration
	maxBytes int64

	mu    sync.Mutex
	byID  map[string]*list.Element // stream id → element of order (a *stream)
	order *list.List               // streams, oldest first
	bytes int64
}

func newStreamStore(clock groundhog.Clock, retain time.Duration, maxBytes int64) *streamStore {
	return &streamStore{clock: clock, retain: retain, maxBytes: maxBytes, byID: map[string]*list.Element{}, order: list.New()}
}

// stream is one answer stream: its owner and its events' data.
type stream struct {
	id      string
	tenant  string
	session string // the client's Mcp-Session-Id

	// guarded by the store's mu
	events  [][]byte      // data of events 1..len; event 0 is the priming event
	size    int64         // bytes of events
	done    bool          // the last event is in events
	endedAt time.Time     // when done became true
	purged  bool          // dropped from the store past maxBytes
	changed chan struct{} // closed (and replaced) on every append and at the end
}

// open starts a stream for a client of tenant in session.
func (s *streamStore) open(tenant, session string) *stream {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	st := &stream{id: hex.EncodeToString(b), tenant: tenant, session: session, changed: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	s.byID[st.id] = s.order.PushBack(st)
	return st
}

// eventID is the id of a stream's event n.
func (st *stream) eventID(n int) string {
	return eventIDPrefix + st.id + "-" + strconv.Itoa(n)
}

// append keeps data as the stream's next event and returns its index; last
// ends the stream.
func (s *streamStore) append(st *stream, data []byte, last bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.events = append(st.events, data)
	n := len(st.events)
	if !st.purged {
		st.size += int64(len(data))
		s.bytes += int64(len(data))
	}
	if last {
		st.done, st.endedAt = true, s.clock.Now()
	}
	close(st.changed)
	st.changed = make(chan struct{})
	for s.bytes > s.maxBytes && s.order.Len() > 0 {
		s.drop(s.order.Front())
	}
	if st.purged {
		// Dropped: keep nothing more for a stream no one can resume.
		st.events = st.events[:0:0]
	}
	return n
}

// drop removes a stream's element; s.mu held.
func (s *streamStore) drop(e *list.Element) {
	st := s.order.Remove(e).(*stream)
	delete(s.byID, st.id)
	s.bytes -= st.size
	st.size, st.purged = 0, true
}

// expire drops the streams that ended more than retain ago; s.mu held.
func (s *streamStore) expire() {
	now := s.clock.Now()
	for e := s.order.Front(); e != nil; {
		next := e.Next()
		if st := e.Value.(*stream); st.done && now.Sub(st.endedAt) >= s.retain {
			s.drop(e)
		}
		e = next
	}
}

// dropSession forgets the streams of a session its client deleted.
func (s *streamStore) dropSession(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.order.Front(); e != nil; {
		next := e.Next()
		if e.Value.(*stream).session == session {
			s.drop(e)
		}
		e = next
	}
}

// after returns the events of the stream named by lastEventID that follow
// it, their first index, whether the stream has ended, and a channel
// closed at its next change. The stream must belong to tenant and session.
func (s *streamStore) after(tenant, session, lastEventID string) (st *stream, evs [][]byte, first int, done bool, changed <-chan struct{}, err error) {
	id, n, ok := parseEventID(lastEventID)
	if !ok {
		return nil, nil, 0, false, nil, errEventMalformed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	e, ok := s.byID[id]
	if !ok {
		return nil, nil, 0, false, nil, errEventUnknown
	}
	st = e.Value.(*stream)
	if st.tenant != tenant || st.session != session || n > len(st.events) {
		return nil, nil, 0, false, nil, errEventUnknown
	}
	if st.purged {
		return nil, nil, 0, false, nil, errEventPurged
	}
	return st, append([][]byte(nil), st.events[n:]...), n + 1, st.done, st.changed, nil
}

// next returns the events of st from index from on, as after does.
func (s *streamStore) next(st *stream, from int) (evs [][]byte, done bool, changed <-chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.purged {
		return nil, false, nil, errEventPurged
	}
	return append([][]byte(nil), st.events[from-1:]...), st.done, st.changed, nil
}

// parseEventID splits "gh-STREAM-N".
func parseEventID(v string) (id string, n int, ok bool) {
	rest, ok := strings.CutPrefix(v, eventIDPrefix)
	if !ok {
		return "", 0, false
	}
	id, num, ok := strings.Cut(rest, "-")
	if !ok || len(id) != 24 {
		return "", 0, false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return id, n, true
}

// writeEvent writes one SSE event; data nil is the priming event.
func writeEvent(w http.ResponseWriter, id string, data []byte) error {
	var err error
	if data == nil {
		_, err = fmt.Fprintf(w, "id: %s\ndata:\n\n", id)
	} else {
		_, err = fmt.Fprintf(w, "id: %s\nevent: message\ndata: %s\n\n", id, data)
	}
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	return err
}

// resume answers a client's GET with Last-Event-ID naming one of the
// gateway's streams: the events after it, then the stream's later events
// as they come, until its last event or the client goes away.
func (g *Gateway) resume(w http.ResponseWriter, r *http.Request, tenant string) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, "resuming a stream (Last-Event-ID) needs the stream's Mcp-Session-Id")
		return
	}
	if g.streams == nil {
		writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, "stream resumption is disabled (mcp.resume.disabled)")
		return
	}
	st, evs, n, done, changed, err := g.streams.after(tenant, sid, r.Header.Get("Last-Event-ID"))
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	for {
		for _, d := range evs {
			if writeEvent(w, st.eventID(n), d) != nil {
				return
			}
			n++
		}
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
		if evs, done, changed, err = g.streams.next(st, n); err != nil {
			// The stream was dropped while this client followed it: end
			// the answer; a later resume is refused with the reason.
			return
		}
	}
}

// detach is ctx without its cancellation once the answer is resumable: the
// call then runs to its end even if the client goes away, since its result
// is kept for a resume.
func (c *call) detach(ctx context.Context) context.Context {
	if c.out.st == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
