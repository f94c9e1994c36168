// Package httpguard bounds how long a slow client can hold a request's
// goroutine: a minimum request-body rate, and a deadline on every response
// write, without a whole-response WriteTimeout (which would cut a long
// stream) or a ReadTimeout (whose expiry, once the body is read, cancels the
// request's context in net/http's background read).
package httpguard

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// Options bound a request. Zero values take the defaults.
type Options struct {
	// BodyGrace is how long the body may take before MinBodyRate applies:
	// the body's deadline is arrival + BodyGrace + received/MinBodyRate.
	// Default 15s.
	BodyGrace time.Duration
	// MinBodyRate is the least average rate, in bytes per second, a client
	// must send its body at once BodyGrace is spent. Default 4096.
	MinBodyRate int64
	// WriteIdle bounds each response write (and flush): a client that stops
	// reading for that long loses the connection. A stream that keeps
	// writing is never cut. Default 60s.
	WriteIdle time.Duration
}

func (o Options) withDefaults() Options {
	if o.BodyGrace <= 0 {
		o.BodyGrace = 15 * time.Second
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = 4096
	}
	if o.WriteIdle <= 0 {
		o.WriteIdle = 60 * time.Second
	}
	return o
}

// Handler wraps h with the bounds of o. It relies on
// http.ResponseController read and write deadlines (HTTP/1 and HTTP/2
// servers of net/http support them); where they are unsupported it changes
// nothing.
func Handler(h http.Handler, o Options) http.Handler {
	o = o.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// This frame stays under every request for as long as it runs, a
		// waiting stream's included: what it takes to set the guard up is
		// done in start, whose frame is gone by then.
		g := &guard{} // one allocation a request
		defer g.finish(r, g.start(w, r, &o))
		h.ServeHTTP(&g.w, r)
	})
}

// finish gives the server's final flush its deadline and, for a request
// with a body, puts the server's body back (see restore) and clears the
// read deadline: the next request on the connection sets its own, so
// clearing ours only matters for a handler that returned without reading
// the body.
//
//go:noinline
func (g *guard) finish(r *http.Request, hasBody bool) {
	g.w.finalDeadline()
	if hasBody {
		g.body.restore(r)
		g.body.clear()
	}
}

// start sets the guard up for the request and puts its body reader in
// place, reporting whether the request has a body to guard.
//
//go:noinline
func (g *guard) start(w http.ResponseWriter, r *http.Request, o *Options) bool {
	rc := &g.rc
	rc.resolve(w)
	hasBody := r.Body != nil && r.Body != http.NoBody
	if hasBody {
		b := &g.body
		g.w.base = clock() // the request's one full clock reading (see writer.now)
		*b = rateBody{r: r.Body, rc: rc, start: g.w.base, o: *o, length: r.ContentLength,
			serverClears: r.ProtoMajor == 1 && reflect.TypeOf(r.Body) == serverBodyType}
		b.extend()
		r.Body = b
	}
	// A write deadline already on the stream (HTTP/2 starts a stream
	// with Server.WriteTimeout's, and resets the stream when it
	// passes, written to or not) must not cut this request while it
	// waits for its upstream. An HTTP/1 connection needs no clearing:
	// net/http clears its write deadline after every response, sets
	// one at a request's start only for Server.WriteTimeout, and that
	// one only bounds a write, which the guard's writer always
	// precedes with a deadline of its own. The server's final flush
	// after the handler gets a fresh one (finalDeadline).
	if r.ProtoMajor != 1 {
		_ = rc.SetWriteDeadline(time.Time{})
	}
	g.w = writer{ResponseWriter: w, rc: rc, idle: o.WriteIdle, base: g.w.base}
	return hasBody
}

// guard holds a request's controller, body and writer together.
type guard struct {
	rc   controller
	body rateBody
	w    writer
}

// controller is http.ResponseController's deadlines and flush with the
// target found once per request instead of on every call:
// ResponseController walks the writer's Unwrap chain on each call (and is
// one more allocation); the chain under the guard is the server's own and
// does not change during the request. A method the chain does not support
// returns http.ErrNotSupported, as ResponseController's does.
type controller struct {
	rd interface{ SetReadDeadline(time.Time) error }
	wd interface{ SetWriteDeadline(time.Time) error }
	fe interface{ FlushError() error }
	fl http.Flusher
}

type rwUnwrapper interface{ Unwrap() http.ResponseWriter }

// resolve finds in w's Unwrap chain what http.ResponseController's methods
// would call: for each method, the first writer of the chain that has it.
func (c *controller) resolve(w http.ResponseWriter) {
	readDone, writeDone, flushDone := false, false, false
	for rw := w; rw != nil && !(readDone && writeDone && flushDone); {
		if t, ok := rw.(interface{ SetReadDeadline(time.Time) error }); ok && !readDone {
			c.rd, readDone = t, true
		}
		if t, ok := rw.(interface{ SetWriteDeadline(time.Time) error }); ok && !writeDone {
			c.wd, writeDone = t, true
		}
		if !flushDone {
			if t, ok := rw.(interface{ FlushError() error }); ok {
				c.fe, flushDone = t, true
			} else if t, ok := rw.(http.Flusher); ok {
				c.fl, flushDone = t, true
			}
		}
		u, ok := rw.(rwUnwrapper)
		if !ok {
			break
		}
		rw = u.Unwrap()
	}
}

func (c *controller) SetReadDeadline(t time.Time) error {
	if c.rd == nil {
		return http.ErrNotSupported
	}
	return c.rd.SetReadDeadline(t)
}

func (c *controller) SetWriteDeadline(t time.Time) error {
	if c.wd == nil {
		return http.ErrNotSupported
	}
	return c.wd.SetWriteDeadline(t)
}

func (c *controller) Flush() error {
	switch {
	case c.fe != nil:
		return c.fe.FlushError()
	case c.fl != nil:
		c.fl.Flush()
		return nil
	}
	return http.ErrNotSupported
}

// rateBody moves the connection's read deadline forward as bytes arrive,
// and clears it once the body is read (or sees that net/http's HTTP/1
// server just did: serverClears), so net/http's background read (which
// detects a client that goes away) never hits it. TestLongStreamIsNotCut
// fails if it does.
type rateBody struct {
	r      io.ReadCloser
	rc     *controller
	start  time.Time
	o      Options
	length int64 // Content-Length, or -1
	n      int64
	done   bool
	eof    bool // r returned io.EOF: the body was read to its end
	// serverClears: r is the body net/http's HTTP/1 server made for a
	// Content-Length. When its end is read, the server itself clears the
	// read deadline (before it starts its background read of the
	// connection), within that same Read.
	serverClears bool
}

// serverBodyType is the type of the body net/http gives a request with a
// Content-Length (unexported: learnt from http.ReadRequest, which the
// server's own reading shares).
var serverBodyType = func() reflect.Type {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")))
	if err != nil {
		return nil
	}
	return reflect.TypeOf(r.Body)
}()

// restore puts the server's own body back in r once the handler has
// returned, closed when it was read to its end. net/http looks at the
// request's Body before it writes the response head (after the handler,
// for a response that fits its buffer): a body of its own type, closed
// after EOF, needs nothing more, while any other type — ours — makes it
// "discard the rest" with io.CopyN, which allocates and reads an
// exhausted body once more on every request. A body not read to its end
// is left in place and unclosed, so net/http discards (or, over its
// limit, gives up on) the rest exactly as before. Closing a body that
// returned EOF is what net/http does after the handler anyway.
func (b *rateBody) restore(r *http.Request) {
	if b.eof && r.Body == io.ReadCloser(b) {
		r.Body = b.r
		_ = b.r.Close()
	}
}

func (b *rateBody) extend() {
	d := b.o.BodyGrace + time.Duration(b.n*int64(time.Second)/b.o.MinBodyRate)
	_ = b.rc.SetReadDeadline(b.start.Add(d))
}

func (b *rateBody) clear() {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

func (b *rateBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF { // the common end of a body, and no timeout: isTimeout allocates
		b.eof = true
		if b.serverClears && b.n == b.length {
			// The whole body came through this reader, so this Read is
			// the one that reached its end: the server has just cleared
			// the deadline (one deadline call fewer per request).
			b.done = true
		} else {
			b.clear()
		}
		return n, err
	}
	switch {
	case err != nil && isTimeout(err):
		// Cut off: the expired deadline stays, so net/http's discard of
		// the unread rest of the body (before it writes the answer, to
		// keep the connection) fails at once instead of waiting forever
		// for a stalled client; the connection is then closed.
		b.done = true
	case err != nil || (b.length >= 0 && b.n >= b.length):
		b.clear()
	case n > 0:
		b.extend()
	}
	return n, err
}

func (b *rateBody) Close() error { return b.r.Close() }

// isTimeout reports whether err is a net.Error timeout. A function of its
// own: the target errors.As needs escapes, and Read would otherwise pay
// that allocation on every call, error or not.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writer sets a write deadline before every write and flush (renew).
type writer struct {
	http.ResponseWriter
	rc    *controller
	idle  time.Duration
	setAt time.Time // when the last deadline was set (now + idle), zero before
	base  time.Time // the request's first clock reading, zero before one
}

// deadlineReuse is how recent a write's deadline must be for the server's
// final flush to keep it instead of getting a fresh one.
const deadlineReuse = time.Millisecond

// clock and since are the guard's time source (tests replace both).
var (
	clock = time.Now
	since = time.Since
)

// now returns the time: the request's first reading of clock, then that
// reading moved on by the time since it. time.Since reads only the
// monotonic clock where time.Now reads the wall clock as well, and on some
// virtual machines each read costs a tenth of a microsecond or more; a
// deadline is kept on the monotonic clock anyway.
func (w *writer) now() time.Time {
	if w.base.IsZero() {
		w.base = clock()
		return w.base
	}
	return w.base.Add(since(w.base))
}

func (w *writer) setDeadline(now time.Time) {
	w.setAt = now
	_ = w.rc.SetWriteDeadline(now.Add(w.idle))
}

// renew gives the writes that follow a deadline of WriteIdle, unless one
// was set less than deadlineReuse ago, which then stands (as at the final
// flush: a bound tighter by under a millisecond, never looser). A stream
// relayed as its events come writes and flushes each one: a burst of them
// shares one deadline instead of setting two per event (each a timer reset
// in the runtime).
func (w *writer) renew() {
	now := w.now()
	if !w.setAt.IsZero() && now.Sub(w.setAt) < deadlineReuse {
		return
	}
	w.setDeadline(now)
}

func (w *writer) Write(p []byte) (int, error) {
	w.renew()
	return w.ResponseWriter.Write(p)
}

// FlushError flushes through to the connection under the write deadline;
// http.ResponseController finds it.
func (w *writer) FlushError() error {
	w.renew()
	return w.rc.Flush()
}

// finalDeadline gives the server's flush after the handler a deadline of
// WriteIdle — unless the handler's last write set one less than
// deadlineReuse ago, which then stands (at least WriteIdle − 1 ms from
// now: a bound tighter by under a millisecond, never looser). A cache hit
// writes its answer once and returns at once: the second deadline on the
// socket (a timer reset, about a third of a microsecond) bought nothing.
func (w *writer) finalDeadline() { w.renew() }

// Flush implements http.Flusher for handlers that assert it.
func (w *writer) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
