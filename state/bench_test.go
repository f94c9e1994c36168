package state_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/sqlite"
	"github.com/groundhog-ai/groundhog/state"
	"github.com/groundhog-ai/groundhog/storetest"
)

// Benchmarks run the handler in process (no sockets) on a real SQLite
// file. Each reports req/s and CPU µs per request (user+system, all
// goroutines, the store's included); BenchmarkBaselineJSON is the same mux
// and auth answering a fixed body of the same size, the baseline for the
// ratio.

func benchMux(b *testing.B) *http.ServeMux {
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	mux := http.NewServeMux()
	state.New(db, state.Limits{}, nil).Register(mux, testAuth)
	return mux
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/req")
}

func serve(b *testing.B, mux http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer bench")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}

func BenchmarkGet(b *testing.B) {
	mux := benchMux(b)
	if rec := serve(b, mux, "PUT", path, storetest.SeedState, "If-None-Match", "*"); rec.Code != 201 {
		b.Fatalf("seed: %d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if rec := serve(b, mux, "GET", path, ""); rec.Code != 200 {
			b.Fatalf("GET: %d", rec.Code)
		}
	}
	report(b, cpu0)
}

func BenchmarkConditionalPut(b *testing.B) {
	mux := benchMux(b)
	if rec := serve(b, mux, "PUT", path, storetest.SeedState, "If-None-Match", "*"); rec.Code != 201 {
		b.Fatalf("seed: %d %s", rec.Code, rec.Body)
	}
	v := 1
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if rec := serve(b, mux, "PUT", path, storetest.SeedState, "If-Match", `"`+strconv.Itoa(v)+`"`); rec.Code != 200 {
			b.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
		v++
	}
	report(b, cpu0)
}

// BenchmarkBaselineJSON: the same mux and auth, a fixed state-sized body.
func BenchmarkBaselineJSON(b *testing.B) {
	mux := http.NewServeMux()
	body := []byte(storetest.SeedState + "\n")
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if _, err := testAuth(r); err != nil {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"1"`)
		w.Write(body)
	})
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if rec := serve(b, mux, "GET", path, ""); rec.Code != 200 {
			b.Fatalf("GET: %d", rec.Code)
		}
	}
	report(b, cpu0)
}
