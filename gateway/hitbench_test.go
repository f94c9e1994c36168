package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// BenchmarkHitHandler measures one cache hit of a 1.7 KB chat request (and
// of a 200 KB one, plain and streamed) in process, without sockets: the handler stack `groundhog serve` runs
// (httpguard, compression, the gateway, the observe recorder with its
// metrics, the ledger writer with its journal) called directly with a
// reused request and a ResponseWriter that discards what it is given. Its
// allocs/op are the allocations of one hit on the gateway's side (the
// ledger writer's background inserts included when the ledger is on);
// BenchmarkHitPath and `groundhog bench` measure the same over loopback.
//
// The access=on variant adds the access line `groundhog serve` writes at
// its default level, into a pipe drained by another goroutine (as the
// gateway's stderr is a pipe). Each variant also reports the process's
// CPU time per hit (cpu-ns/op): the ledger's commits and the access log's
// writer run on other goroutines, outside the loop's wall time.
func BenchmarkHitHandler(b *testing.B) {
	small := []byte(`{"model":"sim-small","messages":[{"role":"system","content":"` + strings.Repeat("You are a careful assistant. ", 20) +
		`"},{"role":"user","content":"` + strings.Repeat("hit path ", 120) + `"}]}`)
	large := benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small"})
	for _, v := range []struct {
		name                    string
		ledgerOn, access, keyed bool
		body                    []byte
	}{
		{"ledger=on", true, false, false, small},
		{"ledger=off", false, false, false, small},
		{"ledger=on,access=on", true, true, false, small},
		// The large body of `groundhog bench`, plain and streamed.
		{"ledger=on,body=200KB", true, false, false, large},
		{"ledger=on,body=200KB,stream", true, false, false, benchbody.Chat(200<<10, benchbody.Options{Model: "sim-small", Stream: true})},
		// With gateway keys and one provider account shared by the
		// tenants: every call is checked for resources of other tenants.
		{"ledger=on,keys", true, false, true, small},
		{"ledger=on,keys,body=200KB", true, false, true, large},
	} {
		b.Run(v.name, func(b *testing.B) {
			h, key := newHitHandler(b, v.ledgerOn, v.access, v.keyed)
			body := v.body
			req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Groundhog-Cache", "use")
			req.Header.Set("Accept-Encoding", "gzip")
			req.Header.Set("User-Agent", "bench")
			rd := bytes.NewReader(body)
			w := &discardWriter{h: http.Header{}}
			serve := func() {
				rd.Reset(body)
				req.Body, req.ContentLength = io.NopCloser(rd), int64(len(body))
				clear(w.h)
				w.status, w.n = 0, 0
				h.ServeHTTP(w, req)
			}
			serve() // miss: the provider answers and the cache stores
			serve() // hit
			if w.status != http.StatusOK || w.h.Get("Groundhog-Cache") != "hit" || w.n == 0 {
				b.Fatalf("priming: status %d, Groundhog-Cache %q, %d bytes", w.status, w.h.Get("Groundhog-Cache"), w.n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, n := processCPU(), 0
			for b.Loop() {
				serve()
				n++
			}
			b.StopTimer()
			if cpu := processCPU() - cpu0; cpu > 0 && n > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
			}
			if w.h.Get("Groundhog-Cache") != "hit" {
				b.Fatalf("Groundhog-Cache %q, want hit", w.h.Get("Groundhog-Cache"))
			}
		})
	}
}

// newHitHandler wires a gateway as `groundhog serve` does (see
// cmd/groundhog/serve.go), over a real SQLite file and the simulated
// provider on loopback.
func newHitHandler(b *testing.B, ledgerOn, access, keyed bool) (http.Handler, string) {
	ctx := context.Background()
	cfg := config.Default()
	dir := b.TempDir()
	cfg.DB = filepath.Join(dir, "groundhog.db")
	if err := cfg.Finish(); err != nil {
		b.Fatal(err)
	}
	s := sim.New(sim.Config{Prices: cfg.PriceTable})
	simURL, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = shutdown(context.Background()) })
	db, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		b.Fatal(err)
	}
	c, err := cache.New(cache.Options{Store: db, MaxBytes: cfg.Cache.MemoryBytes})
	if err != nil {
		b.Fatal(err)
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: filepath.Join(dir, "journal")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = lw.Close(context.Background())
		_ = db.Close()
	})
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError})) // the bench's level
	var gw *gateway.Server
	m := metrics.New(func() float64 { return float64(gw.InFlight()) })
	rec := &observe.Recorder{Metrics: m, Log: log}
	if ledgerOn {
		rec.Next = lw
	}
	if access {
		pr, pw, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		a := observe.NewAccessLog(pw, false, 8192, log)
		rec.Access = a
		b.Cleanup(func() {
			a.Close()
			_ = pw.Close()
		})
	}
	up := gateway.Upstream{BaseURL: simURL + "/v1", Provider: "sim"}
	key := benchKey(b, db, keyed)
	gw = gateway.New(gateway.Options{Config: &cfg, Keys: db, Cache: c, Ledger: rec, OpenAI: up, Anthropic: up, Logger: log, Keyless: !keyed})
	return httpguard.Handler(gw, httpguard.Options{}), key
}

// benchKey creates a gateway key of tenant acme in db when keyed, and
// returns it ("" when not).
func benchKey(b *testing.B, db *sqlite.DB, keyed bool) string {
	if !keyed {
		return ""
	}
	key, k := groundhog.NewAPIKey("acme", time.Now())
	if err := db.CreateKey(context.Background(), k); err != nil {
		b.Fatal(err)
	}
	return key
}

// discardWriter is a ResponseWriter that keeps the head and counts the body.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

// SetReadDeadline and SetWriteDeadline accept the deadlines httpguard sets
// (as a connection does), so http.ResponseController finds them instead of
// building an ErrNotSupported per call.
func (w *discardWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
