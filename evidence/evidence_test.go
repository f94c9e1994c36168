package evidence_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/evidence"
	"github.com/groundhog-ai/groundhog/sqlite"
)

var ctx = context.Background()

func testAuth(r *http.Request) (string, error) {
	tenant, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tenant == "" {
		return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "missing gateway key")
	}
	return tenant, nil
}

type fixture struct {
	db  *sqlite.DB
	srv *httptest.Server
}

func newFixture(t testing.TB, limits evidence.Limits) *fixture {
	t.Helper()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ev.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mux := http.NewServeMux()
	evidence.New(db, limits, nil).Register(mux, testAuth)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{db: db, srv: srv}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t testing.TB, tenant, method, path string, body io.Reader, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+tenant)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{res.StatusCode, res.Header, b}
}

func (r resp) want(t testing.TB, status int, what string) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d; body %.300s", what, r.status, status, r.body)
	}
	return r
}

func (r resp) errCode(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("not a JSON error (%v, Content-Type %q): %s", err, r.header.Get("Content-Type"), r.body)
	}
	return e.Error.Code
}

func refOf(b []byte) string {
	h := sha256.Sum256(b)
	return "ev_" + hex.EncodeToString(h[:])
}

type uploaded struct {
	Ref         string `json:"ref"`
	Bytes       int64  `json:"bytes"`
	Lines       int64  `json:"lines"`
	ContentType string `json:"content_type"`
	Name        string `json:"name"`
	Filename    string `json:"filename"`
	Created     *bool  `json:"created"`
}

func (f *fixture) upload(t testing.TB, tenant string, b []byte, ct string, status int) uploaded {
	t.Helper()
	r := f.do(t, tenant, "POST", evidence.Path, bytes.NewReader(b), "Content-Type: "+ct).want(t, status, "upload")
	var u uploaded
	if err := json.Unmarshal(r.body, &u); err != nil {
		t.Fatalf("upload answer %s: %v", r.body, err)
	}
	return u
}

// tenLines is a 10-line blob with lines of distinct lengths.
var tenLines = []byte("one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten, the last, without a newline")

func TestUploadDedupAndGet(t *testing.T) {
	f := newFixture(t, evidence.Limits{})
	u := f.upload(t, "a", tenLines, "text/plain; charset=utf-8", 201)
	want := uploaded{Ref: refOf(tenLines), Bytes: int64(len(tenLines)), Lines: 10, ContentType: "text/plain; charset=utf-8"}
	if u != want {
		t.Fatalf("upload = %+v, want %+v", u, want)
	}
	if again := f.upload(t, "a", tenLines, "application/octet-stream", 200); again != want {
		t.Fatalf("second upload = %+v, want the first's %+v (stored once)", again, want)
	}
	if used, _ := f.db.EvidenceUsage(ctx, "a"); used != int64(len(tenLines)) {
		t.Fatalf("usage %d after two identical uploads, want %d", used, len(tenLines))
	}
	r := f.do(t, "a", "GET", evidence.Path+"/"+u.Ref, nil).want(t, 200, "get")
	if !bytes.Equal(r.body, tenLines) || r.header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		r.header.Get("Groundhog-Evidence-Lines") != "10" || r.header.Get("ETag") != `"`+u.Ref+`"` || r.header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET: headers %v body %q", r.header, r.body)
	}
	r = f.do(t, "a", "HEAD", evidence.Path+"/"+u.Ref, nil).want(t, 200, "head")
	if len(r.body) != 0 || r.header.Get("Content-Length") != fmt.Sprint(len(tenLines)) || r.header.Get("Groundhog-Evidence-Bytes") != fmt.Sprint(len(tenLines)) {
		t.Fatalf("HEAD: headers %v body %q", r.header, r.body)
	}
	// No Content-Type: stored as octet-stream.
	if u := f.upload(t, "a", []byte("raw"), "", 201); u.ContentType != "application/octet-stream" {
		t.Fatalf("default content type %q", u.ContentType)
	}
}

func TestLineRanges(t *testing.T) {
	f := newFixture(t, evidence.Limits{})
	u := f.upload(t, "a", tenLines, "text/plain", 201)
	p := evidence.Path + "/" + u.Ref
	lines := strings.SplitAfter(string(tenLines), "\n")
	for _, tc := range []struct {
		q, want, sent string
	}{
		{"1-1", lines[0], "1-1"},                     // first
		{"1-2", lines[0] + lines[1], "1-2"},          // first two
		{"4-6", strings.Join(lines[3:6], ""), "4-6"}, // middle
		{"10-10", lines[9], "10-10"},                 // last, no trailing newline
		{"9-15", lines[8] + lines[9], "9-10"},        // past the end: clamped
		{"7", lines[6], "7-7"},                       // one line
		{"1-10", string(tenLines), "1-10"},           // all
	} {
		r := f.do(t, "a", "GET", p+"?lines="+tc.q, nil).want(t, 200, "lines="+tc.q)
		if string(r.body) != tc.want || r.header.Get("Groundhog-Lines") != tc.sent {
			t.Fatalf("lines=%s: %q (Groundhog-Lines %s), want %q (%s)", tc.q, r.body, r.header.Get("Groundhog-Lines"), tc.want, tc.sent)
		}
	}
	for _, q := range []string{"11-12", "11"} {
		r := f.do(t, "a", "GET", p+"?lines="+q, nil).want(t, 416, "lines="+q)
		if r.errCode(t) != groundhog.ERANGE || !strings.Contains(string(r.body), `"lines":10`) {
			t.Fatalf("lines=%s: %s", q, r.body)
		}
	}
	for _, q := range []string{"0-2", "3-1", "x", "1-2-3", "-2", "1-", "", "+1-2"} {
		f.do(t, "a", "GET", p+"?lines="+q, nil).want(t, 400, "lines="+q).errCode(t)
	}
	f.do(t, "a", "GET", p+"?lines=1-2", nil, "Range: bytes=0-1").want(t, 400, "lines and Range").errCode(t)
}

func TestByteRanges(t *testing.T) {
	f := newFixture(t, evidence.Limits{})
	u := f.upload(t, "a", tenLines, "text/plain", 201)
	p := evidence.Path + "/" + u.Ref
	size := len(tenLines)
	for _, tc := range []struct {
		rng      string
		from, to int // inclusive
	}{
		{"bytes=0-0", 0, 0},              // first byte
		{"bytes=0-9", 0, 9},              // first ten
		{"bytes=20-29", 20, 29},          // middle
		{"bytes=-5", size - 5, size - 1}, // last five
		{fmt.Sprintf("bytes=%d-", size-1), size - 1, size - 1},
		{"bytes=30-100000", 30, size - 1}, // last-pos past the end: clamped
		{"bytes=-100000", 0, size - 1},
	} {
		r := f.do(t, "a", "GET", p, nil, "Range: "+tc.rng).want(t, 206, tc.rng)
		cr := fmt.Sprintf("bytes %d-%d/%d", tc.from, tc.to, size)
		if string(r.body) != string(tenLines[tc.from:tc.to+1]) || r.header.Get("Content-Range") != cr {
			t.Fatalf("%s: %q Content-Range %q, want %q %q", tc.rng, r.body, r.header.Get("Content-Range"), tenLines[tc.from:tc.to+1], cr)
		}
	}
	for _, rng := range []string{fmt.Sprintf("bytes=%d-", size), "bytes=1000-2000", "bytes=5-2", "bytes=abc", "bytes=-0", "bytes=", "bytes"} {
		r := f.do(t, "a", "GET", p, nil, "Range: "+rng).want(t, 416, rng)
		if r.errCode(t) != groundhog.ERANGE || r.header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
			t.Fatalf("%s: Content-Range %q body %s", rng, r.header.Get("Content-Range"), r.body)
		}
	}
	// Several ranges, or another unit, may be ignored (RFC 9110): the whole blob.
	for _, rng := range []string{"bytes=0-1,5-6", "items=0-1"} {
		if r := f.do(t, "a", "GET", p, nil, "Range: "+rng).want(t, 200, rng); !bytes.Equal(r.body, tenLines) {
			t.Fatalf("%s: not the whole blob", rng)
		}
	}
	r := f.do(t, "a", "HEAD", p, nil, "Range: bytes=2-4").want(t, 206, "HEAD with range")
	if r.header.Get("Content-Length") != "3" || len(r.body) != 0 {
		t.Fatalf("HEAD range: %v", r.header)
	}
}

func TestMultipart(t *testing.T) {
	f := newFixture(t, evidence.Limits{})
	f.upload(t, "a", []byte("already here\n"), "text/plain", 201)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	files := []struct{ name, data string }{{"build.log", "line 1\nline 2\n"}, {"dup.txt", "already here\n"}, {"trace.json", `{"a":1}`}}
	for _, fl := range files {
		w, _ := mw.CreateFormFile("file", fl.name)
		w.Write([]byte(fl.data))
	}
	mw.Close()
	r := f.do(t, "a", "POST", evidence.Path, &body, "Content-Type: "+mw.FormDataContentType()).want(t, 201, "multipart")
	var out struct{ Evidence []uploaded }
	if err := json.Unmarshal(r.body, &out); err != nil || len(out.Evidence) != 3 {
		t.Fatalf("multipart answer %s (%v)", r.body, err)
	}
	for i, fl := range files {
		e := out.Evidence[i]
		if e.Ref != refOf([]byte(fl.data)) || e.Filename != fl.name || e.Name != "file" || e.Bytes != int64(len(fl.data)) || e.Created == nil || *e.Created != (i != 1) {
			t.Fatalf("part %d = %+v", i, e)
		}
		if g := f.do(t, "a", "GET", evidence.Path+"/"+e.Ref, nil).want(t, 200, "get part"); string(g.body) != fl.data {
			t.Fatalf("part %d reads back %q", i, g.body)
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	f := newFixture(t, evidence.Limits{})
	secret := []byte("tenant a's private log\n")
	u := f.upload(t, "a", secret, "text/plain", 201)
	p := evidence.Path + "/" + u.Ref
	f.do(t, "b", "GET", p, nil).want(t, 404, "b GET").errCode(t)
	f.do(t, "b", "HEAD", p, nil).want(t, 404, "b HEAD")
	f.do(t, "b", "GET", p+"?lines=1-1", nil).want(t, 404, "b lines")
	f.do(t, "b", "GET", p, nil, "Range: bytes=0-3").want(t, 404, "b range")
	f.do(t, "", "GET", p, nil).want(t, 401, "no key").errCode(t)
	// b uploading the same bytes learns nothing: a new blob of b's (201).
	if got := f.upload(t, "b", secret, "text/plain", 201); got.Ref != u.Ref {
		t.Fatalf("b's ref %s", got.Ref)
	}
}

func TestQuota(t *testing.T) {
	f := newFixture(t, evidence.Limits{QuotaBytes: 100})
	a := bytes.Repeat([]byte("a"), 80)
	f.upload(t, "a", a, "text/plain", 201)
	r := f.do(t, "a", "POST", evidence.Path, bytes.NewReader(bytes.Repeat([]byte("b"), 30)), "Content-Type: text/plain").want(t, 507, "over quota")
	if r.errCode(t) != groundhog.EQUOTA {
		t.Fatalf("507 body %s", r.body)
	}
	if used, _ := f.db.EvidenceUsage(ctx, "a"); used != 80 {
		t.Fatalf("usage %d after a refused upload, want 80", used)
	}
	f.do(t, "a", "GET", evidence.Path+"/"+refOf(bytes.Repeat([]byte("b"), 30)), nil).want(t, 404, "refused upload readable")
	f.upload(t, "a", a, "text/plain", 200) // a duplicate needs no quota
	f.upload(t, "b", bytes.Repeat([]byte("c"), 90), "text/plain", 201)
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, evidence.Limits{MaxUploadBytes: 1000})
	u := f.upload(t, "a", tenLines, "text/plain", 201)
	for _, ref := range []string{"ev_123", "ev_" + strings.ToUpper(u.Ref[3:]), u.Ref[3:], "xx_" + u.Ref[3:], u.Ref + "0"} {
		f.do(t, "a", "GET", evidence.Path+"/"+ref, nil).want(t, 400, "ref "+ref).errCode(t)
	}
	f.do(t, "a", "GET", evidence.Path+"/"+refOf([]byte("never")), nil).want(t, 404, "unknown ref").errCode(t)
	for _, tc := range []struct {
		name, ct string
		body     []byte
		status   int
	}{
		{"too large", "text/plain", bytes.Repeat([]byte("x"), 1001), 413},
		{"bad content type", "text/", []byte("x"), 400},
		{"malformed multipart", "multipart/form-data; boundary=zzz", []byte("--zzz\r\nnot a header line\r\n\r\nx"), 400},
		{"multipart without boundary", "multipart/form-data", []byte("x"), 400},
		{"empty multipart", "multipart/form-data; boundary=zzz", []byte("--zzz--\r\n"), 400},
		{"multipart too large", "multipart/form-data; boundary=zzz", append([]byte("--zzz\r\nContent-Type: text/plain\r\n\r\n"), bytes.Repeat([]byte("y"), 1200)...), 413},
	} {
		r := f.do(t, "a", "POST", evidence.Path, bytes.NewReader(tc.body), "Content-Type: "+tc.ct).want(t, tc.status, tc.name)
		r.errCode(t)
		if used, _ := f.db.EvidenceUsage(ctx, "a"); used != int64(len(tenLines)) {
			t.Fatalf("%s: usage %d, want %d (nothing written)", tc.name, used, len(tenLines))
		}
	}
	f.do(t, "a", "PUT", evidence.Path, bytes.NewReader([]byte("x"))).want(t, 405, "PUT").errCode(t)
	f.do(t, "a", "DELETE", evidence.Path+"/"+u.Ref, nil).want(t, 405, "DELETE").errCode(t)
	f.do(t, "a", "POST", evidence.Path+"/"+u.Ref, nil).want(t, 405, "POST on a ref").errCode(t)
}

// lineGen streams n bytes of deterministic text lines without holding them.
type lineGen struct {
	n, done int64
	i       int
	pending []byte
	onRead  func(done int64)
}

func (g *lineGen) Read(p []byte) (int, error) {
	if g.done >= g.n {
		return 0, io.EOF
	}
	w := 0
	for w < len(p) && g.done < g.n {
		if len(g.pending) == 0 {
			g.i++
			g.pending = fmt.Appendf(nil, "%08d %s\n", g.i, strings.Repeat("abcdefgh", g.i%17))
		}
		k := copy(p[w:], g.pending[:min(int64(len(g.pending)), g.n-g.done)])
		g.pending = g.pending[k:]
		w += k
		g.done += int64(k)
	}
	if g.onRead != nil {
		g.onRead(g.done)
	}
	return w, nil
}

// heapProbe tracks the largest heap seen above a baseline, sampled every
// 8 MiB of progress.
type heapProbe struct {
	base, peak uint64
	next       int64
}

func newHeapProbe() *heapProbe {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return &heapProbe{base: m.HeapAlloc}
}

func (h *heapProbe) sample(done int64) {
	if done < h.next {
		return
	}
	h.next = done + 8<<20
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapAlloc > h.base {
		h.peak = max(h.peak, m.HeapAlloc-h.base)
	}
}

type hashSink struct {
	h     io.Writer
	n     int64
	probe *heapProbe
}

func (s *hashSink) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	s.probe.sample(s.n)
	return s.h.Write(p)
}

// TestLargeBlobBoundedMemory stores a 100 MB blob over HTTP and reads it
// back whole and by lines, sampling the heap as the bytes flow: it must
// stay far below the blob's size (the blob is never held whole).
func TestLargeBlobBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB upload")
	}
	const size = 100 << 20
	const bound = 40 << 20
	f := newFixture(t, evidence.Limits{})

	ref := sha256.New()
	io.Copy(ref, &lineGen{n: size})
	wantRef := "ev_" + hex.EncodeToString(ref.Sum(nil))

	probe := newHeapProbe()
	gen := &lineGen{n: size, onRead: probe.sample}
	req, _ := http.NewRequest("POST", f.srv.URL+evidence.Path, gen)
	req.Header.Set("Authorization", "Bearer a")
	req.Header.Set("Content-Type", "text/plain")
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var u uploaded
	json.NewDecoder(res.Body).Decode(&u)
	res.Body.Close()
	if res.StatusCode != 201 || u.Ref != wantRef || u.Bytes != size {
		t.Fatalf("upload: %d %+v, want 201 %s", res.StatusCode, u, wantRef)
	}
	uploadPeak := probe.peak

	probe = newHeapProbe()
	req, _ = http.NewRequest("GET", f.srv.URL+evidence.Path+"/"+u.Ref, nil)
	req.Header.Set("Authorization", "Bearer a")
	res, err = f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	sink := &hashSink{h: h, probe: probe}
	if _, err := io.Copy(sink, res.Body); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := "ev_" + hex.EncodeToString(h.Sum(nil)); got != wantRef || sink.n != size {
		t.Fatalf("read back %d bytes hashing to %s, want %d bytes %s", sink.n, got, size, wantRef)
	}
	downloadPeak := probe.peak
	t.Logf("heap growth over baseline: upload %.1f MiB, download %.1f MiB (blob %d MiB)",
		float64(uploadPeak)/(1<<20), float64(downloadPeak)/(1<<20), size>>20)
	if uploadPeak > bound || downloadPeak > bound {
		t.Fatalf("heap grew by %d (upload) / %d (download) bytes, want < %d for a %d-byte blob", uploadPeak, downloadPeak, bound, size)
	}

	// A line range near the end reads two chunks, not the blob.
	last := u.Lines
	r := f.do(t, "a", "GET", fmt.Sprintf("%s/%s?lines=%d-%d", evidence.Path, u.Ref, last-1, last), nil).want(t, 200, "last lines")
	if n := bytes.Count(r.body, []byte("\n")); n > 2 || len(r.body) == 0 {
		t.Fatalf("last two lines: %q", r.body)
	}
}
