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

const patience = 20 * time.Second // only bounds a hang; no assertion is timed

// A client that sends its headers and a few body bytes, then stalls, is cut
// off: the handler's body read fails instead of holding the goroutine.
func TestSlowBodyIsCut(t *testing.T) {
	readErr := make(chan error, 1)
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1000}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nhello")
	select {
	case err := <-readErr:
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("body read of a stalled client: %v, want a timeout", err)
		}
	case <-time.After(patience):
		t.Fatal("a stalled body holds the handler")
	}
}

// A body that keeps arriving at the minimum rate is read whole, however long
// it takes past the grace period.
func TestSteadyBodyIsRead(t *testing.T) {
	got := make(chan int, 1)
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			got <- -1
			return
		}
		got <- len(b)
	}), Options{BodyGrace: 50 * time.Millisecond, MinBodyRate: 100_000}))
	defer srv.Close()
	pr, pw := io.Pipe()
	go func() {
		chunk := strings.Repeat("x", 10_000) // 0.1 s of allowance each
		for range 6 {
			pw.Write([]byte(chunk))
			time.Sleep(20 * time.Millisecond) // a slow but steady sender
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", srv.URL, pr)
	req.ContentLength = 60_000
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if n := <-got; n != 60_000 {
		t.Fatalf("read %d bytes, want 60000", n)
	}
}

// A stream longer than WriteIdle in total works as long as each write goes
// through; the request context is not cancelled once the body is read.
func TestLongStreamIsNotCut(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		rc := http.NewResponseController(w)
		for i := range 8 {
			time.Sleep(40 * time.Millisecond) // a slow upstream's next token
			if r.Context().Err() != nil {
				return
			}
			fmt.Fprintf(w, "data: %d\n\n", i)
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}), Options{BodyGrace: 50 * time.Millisecond, MinBodyRate: 1 << 20, WriteIdle: 100 * time.Millisecond}))
	defer srv.Close()
	res, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	if n != 8 {
		t.Fatalf("got %d events, want 8 (err %v)", n, sc.Err())
	}
}

// A client that stops reading the response loses the connection: the
// handler's write fails instead of blocking forever.
func TestStalledReaderIsCut(t *testing.T) {
	writeErr := make(chan error, 1)
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	}), Options{WriteIdle: 100 * time.Millisecond}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-writeErr:
		if err == nil {
			t.Fatal("no write error")
		}
	case <-time.After(patience):
		t.Fatal("a client that never reads holds the handler")
	}
}

// deadlineWriter is a ResponseWriter with the deadlines a connection has.
type deadlineWriter struct {
	h             http.Header
	read, written time.Time
	flushes       int
}

func (w *deadlineWriter) Header() http.Header                { return w.h }
func (w *deadlineWriter) WriteHeader(int)                    {}
func (w *deadlineWriter) Write(p []byte) (int, error)        { return len(p), nil }
func (w *deadlineWriter) SetReadDeadline(t time.Time) error  { w.read = t; return nil }
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error { w.written = t; return nil }
func (w *deadlineWriter) FlushError() error                  { w.flushes++; return nil }

// wrapped hides deadlineWriter's methods behind Unwrap, as a middleware's
// writer does.
type wrapped struct{ http.ResponseWriter }

func (w wrapped) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The guard reaches the connection's deadlines and flush through Unwrap, as
// http.ResponseController does, and costs one allocation a request.
func TestGuardTargetsAndAllocations(t *testing.T) {
	dw := &deadlineWriter{h: http.Header{}}
	var rw http.ResponseWriter = wrapped{dw}
	buf := make([]byte, 16)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadFull(r.Body, buf[:5])
		_, _ = w.Write(buf[:2])
		_ = http.NewResponseController(w).Flush()
	})
	h := Handler(inner, Options{})
	body := strings.NewReader("")
	r := httptest.NewRequest(http.MethodPost, "/", body)
	var b io.ReadCloser = io.NopCloser(body)
	serveWith := func(h http.Handler) func() {
		return func() {
			body.Reset("hello")
			r.Body, r.ContentLength = b, 5
			h.ServeHTTP(rw, r)
		}
	}
	serve := serveWith(h)
	serve()
	if dw.written.IsZero() || dw.flushes != 1 {
		t.Fatalf("write deadline %v, %d flushes: want a deadline and 1 flush through Unwrap", dw.written, dw.flushes)
	}
	if !dw.read.IsZero() {
		t.Fatalf("read deadline %v after the body was read, want none", dw.read)
	}
	bare := testing.AllocsPerRun(200, serveWith(inner))
	if a := testing.AllocsPerRun(200, serve); a != bare+1 {
		t.Errorf("%v allocations a request with the guard, %v without: want one more (the guard)", a, bare)
	}
}
