package gateway

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Gunzip returns what the gzip stream b decodes to, failing t when it is
// not one (the external tests use it too).
func Gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip stream: %v", err)
	}
	return out
}

func answer(n int, tag string) []byte {
	return []byte(`{"id":"` + tag + `","text":"` + strings.Repeat("all work and no play "+tag+" ", n) + `"}`)
}

// The memo answers the compression of exactly the bytes asked: noted the
// first time, remembered the second, served from memory after; and bytes
// whose key collides with remembered ones (every key collides here) are
// compressed on their own, never answered with the other's form.
func TestGzipMemoAnswersOnlyItsOwnBytes(t *testing.T) {
	m := newGzipMemo(1 << 20)
	m.key = func(maphash.Seed, []byte) uint64 { return 7 }
	a, b := answer(100, "a"), answer(100, "b") // the same length
	var forms [][]byte
	for i := range 4 {
		gz, buf := m.compress(a)
		if got := Gunzip(t, gz); !bytes.Equal(got, a) {
			t.Fatalf("sight %d of a: decodes to other bytes", i+1)
		}
		if remembered := buf == nil; remembered != (i >= 1) {
			t.Fatalf("sight %d of a: remembered %v", i+1, remembered)
		}
		forms = append(forms, bytes.Clone(gz))
		if buf != nil {
			putGzipBuf(buf)
		}
	}
	for i := 1; i < len(forms); i++ {
		if !bytes.Equal(forms[i], forms[0]) {
			t.Fatalf("sight %d of a: another compressed form than the first", i+1)
		}
	}
	for _, p := range [][]byte{b, b, a, b} {
		gz, buf := m.compress(p)
		if got := Gunzip(t, gz); !bytes.Equal(got, p) {
			t.Fatalf("under a colliding key, %.12s… decodes to %.12s…", p, got)
		}
		if buf != nil {
			putGzipBuf(buf)
		}
	}
}

// Through the response wrapper: a head that announces its length and a
// body written in one piece go out compressed with the compressed length;
// a body written in pieces, a flush before the body, or no body at all
// still make one valid gzip stream of exactly what was written; a small
// or non-JSON answer is not compressed.
func TestGzipResponseWholeAndInPieces(t *testing.T) {
	s := &Server{gzipMemo: newGzipMemo(1 << 20)}
	body := answer(200, "whole")
	for _, tc := range []struct {
		name   string
		write  func(w http.ResponseWriter)
		want   []byte
		gzip   bool
		length bool // a Content-Length on the compressed answer
	}{
		{"one write", func(w http.ResponseWriter) { w.Write(body) }, body, true, true},
		{"pieces", func(w http.ResponseWriter) { w.Write(body[:100]); w.Write(body[100:]) }, body, true, false},
		{"flush first", func(w http.ResponseWriter) { w.(http.Flusher).Flush(); w.Write(body) }, body, true, false},
		{"no body", func(w http.ResponseWriter) {}, nil, true, false},
	} {
		for sight := 1; sight <= 3; sight++ {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/v1/responses", nil)
			r.Header.Set("Accept-Encoding", "gzip")
			s.compression(rec, r, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.WriteHeader(201)
				tc.write(w)
			}))
			name := fmt.Sprintf("%s, sight %d", tc.name, sight)
			res := rec.Result()
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != 201 || (res.Header.Get("Content-Encoding") == "gzip") != tc.gzip {
				t.Fatalf("%s: %d, Content-Encoding %q", name, res.StatusCode, res.Header.Get("Content-Encoding"))
			}
			if cl := res.Header.Get("Content-Length"); tc.length && cl != strconv.Itoa(len(got)) || !tc.length && cl != "" {
				t.Fatalf("%s: Content-Length %q for %d compressed bytes", name, cl, len(got))
			}
			if plain := Gunzip(t, got); !bytes.Equal(plain, tc.want) {
				t.Fatalf("%s: decodes to %d bytes, want %d", name, len(plain), len(tc.want))
			}
		}
	}
	for _, tc := range []struct{ ct, body string }{{"application/json", `{"short":true}`}, {"text/plain", string(body)}} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/responses", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		s.compression(rec, r, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", tc.ct)
			w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
			io.WriteString(w, tc.body)
		}))
		if rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != tc.body {
			t.Fatalf("%s of %d bytes: Content-Encoding %q", tc.ct, len(tc.body), rec.Header().Get("Content-Encoding"))
		}
	}
}
