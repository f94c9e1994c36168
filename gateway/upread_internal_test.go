package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// An upstream answer is read whole, as sent, whether it has a
// Content-Length or is chunked; over the limit it comes back one byte
// longer than the limit (the caller's check); cut short before its
// Content-Length it is an error, never a shorter answer taken for whole.
func TestReadUpstreamBody(t *testing.T) {
	answer := []byte(`{"id":"x","choices":[{"message":{"content":"` + strings.Repeat("a", 3000) + `"}}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sized":
			w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
			_, _ = w.Write(answer)
		case "/chunked":
			_, _ = w.Write(answer[:100])
			w.(http.Flusher).Flush()
			_, _ = w.Write(answer[100:])
		case "/empty":
			w.Header().Set("Content-Length", "0")
		case "/cut":
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(answer))
			_, _ = rw.Write(answer[:len(answer)/2])
			_ = rw.Flush()
			_ = conn.Close()
		}
	}))
	defer srv.Close()
	get := func(path string) *http.Response {
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for _, path := range []string{"/sized", "/chunked"} {
		b, err := readUpstreamBody(get(path), 1<<20)
		if err != nil || !bytes.Equal(b, answer) {
			t.Errorf("%s: %d bytes, %v; want the %d-byte answer", path, len(b), err, len(answer))
		}
		b, err = readUpstreamBody(get(path), 1000)
		if err != nil || len(b) != 1001 {
			t.Errorf("%s over a 1000-byte limit: %d bytes, %v; want 1001 bytes", path, len(b), err)
		}
	}
	if b, err := readUpstreamBody(get("/empty"), 1<<20); err != nil || len(b) != 0 {
		t.Errorf("empty answer: %q, %v", b, err)
	}
	if b, err := readUpstreamBody(get("/cut"), 1<<20); err == nil {
		t.Errorf("answer cut at half its Content-Length: %d bytes and no error", len(b))
	}
}

// The gateway's answer to a miss is read into one buffer of its
// Content-Length: about the answer's size allocated, where io.ReadAll
// grows from 512 bytes by copying.
func TestReadUpstreamBodyAllocatesTheAnswer(t *testing.T) {
	answer := bytes.Repeat([]byte("x"), 774)
	raw := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
	// The fewest bytes any of the reads allocated: TotalAlloc counts every
	// goroutine's allocations (the package's other tests run beside this
	// one), which only ever add to a read's own.
	bytesPer := func(read func(*http.Response)) uint64 {
		const runs = 200
		least := ^uint64(0)
		var ms runtime.MemStats
		for range runs {
			res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			read(res)
			runtime.ReadMemStats(&ms)
			least = min(least, ms.TotalAlloc-before)
		}
		return least
	}
	sized := bytesPer(func(res *http.Response) {
		if b, err := readUpstreamBody(res, 1<<20); err != nil || len(b) != len(answer) {
			t.Fatalf("%d bytes, %v", len(b), err)
		}
	})
	all := bytesPer(func(res *http.Response) { _, _ = io.ReadAll(res.Body) })
	if sized > uint64(len(answer))+128 || sized*2 > all {
		t.Errorf("reading a %d-byte answer allocated %d bytes per read (io.ReadAll: %d)", len(answer), sized, all)
	}
}
