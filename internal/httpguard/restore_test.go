package httpguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// After the handler, a body read to its end is the server's own again, and
// closed (so net/http skips its discard of the rest, docs/design/0009-hit-path.md); a
// body the handler left unread stays in place, and net/http discards the
// rest so the next request on the connection is read intact. Requests of
// both kinds alternate on one keep-alive connection.
func TestBodyHandedBackAfterHandler(t *testing.T) {
	type seen struct {
		guarded  bool  // r.Body after the handler is still the guard's
		readErr  error // a read of r.Body after the handler
		bodyRead string
	}
	got := make(chan seen, 1)
	guarded := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.ContentLength
		if r.URL.Path == "/half" {
			n /= 2
		}
		buf := make([]byte, n)
		_, _ = io.ReadFull(r.Body, buf)
		if r.URL.Path == "/all" {
			// net/http's body returns EOF with its last bytes; a reader
			// that does not is read once more, as io.ReadAll would.
			_, _ = r.Body.Read(make([]byte, 1))
		}
		w.Header().Set("X-Body", string(buf))
		_, _ = w.Write([]byte("ok"))
	}), Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guarded.ServeHTTP(w, r)
		_, isGuard := r.Body.(*rateBody)
		_, err := r.Body.Read(make([]byte, 1))
		got <- seen{guarded: isGuard, readErr: err}
	}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience))
	br := bufio.NewReader(c)
	for i, path := range []string{"/all", "/half", "/all", "/half", "/all"} {
		body := fmt.Sprintf("body-%d-%s", i, strings.Repeat("x", 40+i))
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d (%s): %v", i, path, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		want := body
		if path == "/half" {
			want = body[:len(body)/2]
		}
		if res.StatusCode != http.StatusOK || res.Header.Get("X-Body") != want || res.Close {
			t.Fatalf("request %d (%s): status %d, body read %q (want %q), close %v", i, path, res.StatusCode, res.Header.Get("X-Body"), want, res.Close)
		}
		s := <-got
		switch path {
		case "/all":
			if s.guarded || !errors.Is(s.readErr, http.ErrBodyReadAfterClose) {
				t.Fatalf("request %d: after the handler r.Body is the guard's: %v, a read gives %v: want net/http's body, closed", i, s.guarded, s.readErr)
			}
		case "/half":
			if !s.guarded || s.readErr != nil {
				t.Fatalf("request %d: after the handler r.Body is the guard's: %v, a read gives %v: want the guard's, unclosed", i, s.guarded, s.readErr)
			}
		}
	}
}

// eofReader returns its bytes, the last of them with io.EOF, as net/http's
// body does; then EOF.
type eofReader struct{ s string }

func (r *eofReader) Read(p []byte) (int, error) {
	n := copy(p, r.s)
	r.s = r.s[n:]
	if r.s == "" {
		return n, io.EOF
	}
	return n, nil
}

// errReader fails with err after its bytes.
type errReader struct {
	s   string
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, r.err
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// The body's end (io.EOF) takes a fast path: deadline cleared, no
// allocation. Other errors take the same paths as before: a timeout keeps
// the expired deadline, any other error clears it.
func TestBodyEndAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		r         io.Reader
		length    int64
		wantClear bool // the read deadline is cleared at the end
		wantEOF   bool
	}{
		{"eof with data", &eofReader{"hello"}, 5, true, true},
		{"eof with data, unknown length", &eofReader{"hello"}, -1, true, true},
		{"eof after data", &errReader{"hello", io.EOF}, -1, true, true},
		{"timeout", &errReader{"he", timeoutErr{}}, 5, false, false},
		{"wrapped timeout", &errReader{"he", fmt.Errorf("read: %w", timeoutErr{})}, 5, false, false},
		{"other error", &errReader{"he", io.ErrUnexpectedEOF}, 5, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dw := &deadlineWriter{h: http.Header{}}
			var rc controller
			rc.resolve(dw)
			b := &rateBody{r: io.NopCloser(tc.r), rc: &rc, start: time.Now(), o: Options{}.withDefaults(), length: tc.length}
			b.extend()
			if dw.read.IsZero() {
				t.Fatal("no read deadline set")
			}
			data, err := io.ReadAll(b)
			if tc.wantEOF != (err == nil) { // ReadAll turns EOF into nil
				t.Fatalf("ReadAll: %q, %v", data, err)
			}
			if cleared := dw.read.IsZero(); cleared != tc.wantClear {
				t.Fatalf("read deadline cleared %v, want %v (deadline %v)", cleared, tc.wantClear, dw.read)
			}
			if b.eof != tc.wantEOF {
				t.Fatalf("eof %v, want %v", b.eof, tc.wantEOF)
			}
		})
	}
	// Reading a body to its end allocates nothing in the guard.
	dw := &deadlineWriter{h: http.Header{}}
	var rc controller
	rc.resolve(dw)
	er := &eofReader{}
	b := &rateBody{r: io.NopCloser(er), rc: &rc, o: Options{}.withDefaults(), length: 5}
	buf := make([]byte, 8)
	if a := testing.AllocsPerRun(100, func() {
		er.s, b.n, b.done, b.eof = "hello", 0, false, false
		_, _ = b.Read(buf)
	}); a != 0 {
		t.Errorf("%v allocations a body read to its end, want 0", a)
	}
}

// countingWriter records every write deadline set.
type countingWriter struct {
	deadlineWriter
	set []time.Time
}

func (w *countingWriter) SetWriteDeadline(t time.Time) error {
	w.set = append(w.set, t)
	return w.deadlineWriter.SetWriteDeadline(t)
}

// fakeClock makes *now the guard's clock until the test ends.
func fakeClock(t *testing.T, now *time.Time) {
	clock = func() time.Time { return *now }
	since = func(t time.Time) time.Duration { return now.Sub(t) }
	t.Cleanup(func() { clock, since = time.Now, time.Since })
}

// The server's flush after the handler gets a write deadline of WriteIdle:
// a fresh one, unless the handler's last write set one less than
// deadlineReuse before it returned. Never none, never an older one. An
// HTTP/2 stream's deadline is cleared first; an HTTP/1 connection's is
// left as net/http leaves it (none after the previous response). The
// writer's clock is a fake one the handlers move.
func TestFinalWriteDeadline(t *testing.T) {
	const idle = time.Minute
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := t0
	fakeClock(t, &fake)
	write := func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }
	for _, proto := range []int{1, 2} {
		for _, tc := range []struct {
			name      string
			handler   func(w http.ResponseWriter)
			wantFresh bool // the last deadline is set after the handler, not by its write
		}{
			{"no write", func(w http.ResponseWriter) {}, true},
			{"one write", write, false},
			{"write, 0.999 ms", func(w http.ResponseWriter) { write(w); fake = fake.Add(deadlineReuse - time.Microsecond) }, false},
			{"write, 1 ms", func(w http.ResponseWriter) { write(w); fake = fake.Add(deadlineReuse) }, true},
			{"write, 1 s", func(w http.ResponseWriter) { write(w); fake = fake.Add(time.Second) }, true},
			{"write then flush", func(w http.ResponseWriter) {
				write(w)
				fake = fake.Add(time.Second)
				_ = http.NewResponseController(w).Flush()
			}, false},
		} {
			t.Run(fmt.Sprintf("HTTP/%d/%s", proto, tc.name), func(t *testing.T) {
				fake = t0
				cw := &countingWriter{deadlineWriter: deadlineWriter{h: http.Header{}}}
				var inHandler []time.Time
				h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					tc.handler(w)
					inHandler = append([]time.Time(nil), cw.set...)
				}), Options{WriteIdle: idle})
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.ProtoMajor, r.ProtoMinor = proto, 0
				h.ServeHTTP(cw, r)
				if len(cw.set) == 0 {
					t.Fatal("no write deadline set")
				}
				if cleared := cw.set[0].IsZero(); cleared != (proto == 2) {
					t.Fatalf("deadlines %v: previous one cleared first %v, want %v", cw.set, cleared, proto == 2)
				}
				for _, d := range cw.set[1:] {
					if d.IsZero() {
						t.Fatalf("deadlines %v: a deadline cleared after the first", cw.set)
					}
				}
				last := cw.set[len(cw.set)-1]
				if last.Before(fake.Add(idle - deadlineReuse)) {
					t.Fatalf("final write deadline %v, want at least %v", last, fake.Add(idle-deadlineReuse))
				}
				fresh := len(cw.set) > len(inHandler)
				if fresh != tc.wantFresh {
					t.Fatalf("deadlines in the handler %v, after %v: fresh final deadline %v, want %v", inHandler, cw.set, fresh, tc.wantFresh)
				}
				if fresh && !last.Equal(fake.Add(idle)) {
					t.Fatalf("final write deadline %v, want %v", last, fake.Add(idle))
				}
			})
		}
	}
}

// The end of a body net/http's HTTP/1 server made is left to the server,
// which clears the read deadline itself in the Read that reaches it (over a
// real server, TestLongStreamIsNotCut shows the background read is not cut).
// Here no server clears it: the deadline the guard set stays. A body not
// read whole through the guard, or of another type, is cleared as before.
func TestServerBodyEndLeftToServer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		readFirst int  // bytes read before the guard wraps the body
		server    bool // the body is of net/http's own type
		wantClear bool
	}{
		{"server body read whole", 0, true, false},
		{"server body read in part before", 1, true, true},
		{"other body", 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(r.Body, make([]byte, tc.readFirst)); err != nil {
				t.Fatal(err)
			}
			if !tc.server {
				r.Body = io.NopCloser(r.Body)
			}
			dw := &deadlineWriter{h: http.Header{}}
			var read time.Time
			Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					t.Fatal(err)
				}
				read = dw.read
			}), Options{}).ServeHTTP(dw, r)
			if cleared := read.IsZero(); cleared != tc.wantClear {
				t.Fatalf("read deadline after the body %v: cleared %v, want %v", read, cleared, tc.wantClear)
			}
		})
	}
}

// A burst of writes and flushes shares one write deadline: each is under a
// deadline of at least WriteIdle − deadlineReuse from its own time, a fresh
// one (WriteIdle from its time) whenever the last was set deadlineReuse ago
// or more. A stream relayed event by event sets one deadline per burst,
// not two per event.
func TestWriteDeadlineRenewed(t *testing.T) {
	const idle = time.Minute
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := t0
	fakeClock(t, &fake)
	steps := []struct {
		at    time.Duration
		flush bool
		fresh bool
	}{
		{0, false, true},
		{0, true, false},
		{500 * time.Microsecond, false, false},
		{999 * time.Microsecond, true, false},
		{time.Millisecond, false, true},
		{1500 * time.Microsecond, true, false},
		{5 * time.Second, false, true},
		{5 * time.Second, true, false},
		{5*time.Second + 2*time.Millisecond, true, true},
	}
	cw := &countingWriter{deadlineWriter: deadlineWriter{h: http.Header{}}}
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for i, st := range steps {
			fake = t0.Add(st.at)
			before := len(cw.set)
			if st.flush {
				_ = rc.Flush()
			} else {
				_, _ = w.Write([]byte("data: x\n\n"))
			}
			if fresh := len(cw.set) > before; fresh != st.fresh {
				t.Fatalf("step %d at %v: fresh deadline %v, want %v (deadlines %v)", i, st.at, fresh, st.fresh, cw.set)
			}
			if last := cw.set[len(cw.set)-1]; last.Before(fake.Add(idle - deadlineReuse)) {
				t.Fatalf("step %d at %v: deadline %v, want at least %v", i, st.at, last, fake.Add(idle-deadlineReuse))
			}
			if st.fresh && !cw.set[len(cw.set)-1].Equal(fake.Add(idle)) {
				t.Fatalf("step %d at %v: fresh deadline %v, want %v", i, st.at, cw.set[len(cw.set)-1], fake.Add(idle))
			}
		}
	}), Options{WriteIdle: idle})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	h.ServeHTTP(cw, r)
}
