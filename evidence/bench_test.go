package evidence_test

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/groundhog-ai/groundhog/evidence"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// blobSize is the upload of the throughput benchmarks.
const blobSize = 8 << 20

var blobBuf = func() []byte {
	line := []byte("0123456789abcdef log line of a tool output\n")
	return bytes.Repeat(line, blobSize/len(line)+1)[:blobSize]
}()

// blob returns the benchmark blob made unique by i (no dedup), reusing
// one buffer so generating it costs both benchmarks nothing.
func blob(i int) []byte {
	binary.LittleEndian.PutUint64(blobBuf, uint64(i))
	return blobBuf
}

// BenchmarkUpload: POST /groundhog/v1/evidence of an 8 MiB blob, in
// process, into SQLite (spool, hash, line index, chunked insert).
func BenchmarkUpload(b *testing.B) {
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	mux := http.NewServeMux()
	evidence.New(db, evidence.Limits{}, nil).Register(mux, testAuth)
	b.SetBytes(blobSize)
	i := 0
	for b.Loop() {
		i++
		req := httptest.NewRequest("POST", evidence.Path, bytes.NewReader(blob(i)))
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Content-Type", "text/plain")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != 201 {
			b.Fatalf("upload: %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkRawFileWrite is the baseline: the same bytes written to a new
// file with os.File (no fsync, like SQLite's synchronous=NORMAL commit).
func BenchmarkRawFileWrite(b *testing.B) {
	dir := b.TempDir()
	b.SetBytes(blobSize)
	i := 0
	for b.Loop() {
		i++
		f, err := os.Create(filepath.Join(dir, "blob"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(blob(i)); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
