package gateway_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/gateway"
)

// rawClient does not add Accept-Encoding or decode gzip by itself, so the
// test sees the bytes on the wire.
var rawClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// A JSON response is gzip-compressed for a client that accepts it and
// decodes to the same bytes the identity response carries; a gzip request
// body is accepted and hashes like the plain one; event streams are never
// compressed.
func TestCompressionBothWays(t *testing.T) {
	h := newHarness(t)
	// Embeddings answer with long vectors: well over the compression floor.
	inputs := make([]string, 30)
	for i := range inputs {
		inputs[i] = `"text number ` + strconv.Itoa(i) + `"`
	}
	body := `{"model":"sim-embed","input":[` + strings.Join(inputs, ",") + `]}`
	do := func(reqBody []byte, hdr map[string]string) (*http.Response, []byte) {
		path := "/v1/embeddings"
		if bytes.Contains(reqBody, []byte(`"stream"`)) {
			path = "/v1/chat/completions"
		}
		req, _ := http.NewRequest("POST", h.URL+path, bytes.NewReader(reqBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Groundhog-Cache", "use")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := rawClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	res1, plain := do([]byte(body), nil)
	if res1.StatusCode != 200 || res1.Header.Get("Content-Encoding") != "" {
		t.Fatalf("identity response: %d, Content-Encoding %q", res1.StatusCode, res1.Header.Get("Content-Encoding"))
	}
	var zbody bytes.Buffer
	zw := gzip.NewWriter(&zbody)
	_, _ = zw.Write([]byte(body))
	zw.Close()
	res2, zipped := do(zbody.Bytes(), map[string]string{"Accept-Encoding": "gzip", "Content-Encoding": "gzip"})
	if res2.StatusCode != 200 || res2.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip response: %d, Content-Encoding %q: %s", res2.StatusCode, res2.Header.Get("Content-Encoding"), zipped)
	}
	if res2.Header.Get("Groundhog-Cache") != "hit" || res2.Header.Get("Groundhog-Request-Hash") != res1.Header.Get("Groundhog-Request-Hash") {
		t.Fatalf("the gzip request did not hash like the plain one: %v vs %v", res2.Header, res1.Header)
	}
	if got := gateway.Gunzip(t, zipped); !bytes.Equal(got, plain) {
		t.Fatalf("gzip body decodes to other bytes:\n%s\nvs\n%s", got, plain)
	}
	if len(zipped) >= len(plain) {
		t.Fatalf("compressed %d bytes ≥ plain %d", len(zipped), len(plain))
	}
	stream := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("stream me ", 50) + `"}]}`
	res3, events := do([]byte(stream), map[string]string{"Accept-Encoding": "gzip"})
	if res3.Header.Get("Content-Encoding") != "" || !bytes.Contains(events, []byte("data: [DONE]")) {
		t.Fatalf("a stream was compressed or broken: %q %q", res3.Header.Get("Content-Encoding"), events)
	}
	res4, _ := do([]byte(body), map[string]string{"Content-Encoding": "br"})
	if res4.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("Content-Encoding br: %d, want 415", res4.StatusCode)
	}
	res5, b5 := do([]byte("not gzip at all"), map[string]string{"Content-Encoding": "gzip"})
	if res5.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad gzip: %d %s, want 400", res5.StatusCode, b5)
	}
}

// A gzip body that expands to 1 GB is refused with 413 once it passes the
// body limit; the gateway never holds what it expands to.
func TestGzipBombIs413WithBoundedMemory(t *testing.T) {
	h := newHarness(t)
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestCompression)
		_, _ = zw.Write([]byte(`{"model":"sim-small","messages":[{"role":"user","content":"`))
		zeros := make([]byte, 1<<20)
		for i := range zeros {
			zeros[i] = 'a'
		}
		for i := 0; i < 1024; i++ {
			if _, err := zw.Write(zeros); err != nil {
				break
			}
		}
		zw.Close()
		pw.Close()
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, _ := http.NewRequest("POST", h.URL+"/v1/chat/completions", pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	res, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	pr.CloseWithError(io.ErrClosedPipe)
	runtime.ReadMemStats(&after)
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("gzip bomb: %d %s, want 413", res.StatusCode, b)
	}
	errorType(t, b)
	// The limit is 32 MiB: reading to it allocates a few times that at
	// most (slice growth), never the gigabyte the body expands to.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Fatalf("the gateway allocated %d MB for a gzip bomb", grew>>20)
	}
}
