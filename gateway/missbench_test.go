package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// BenchmarkMissHandler measures one miss (cache off, as `groundhog bench`'s
// gateway-miss sends it, and cache on: a body never seen before) in process: the handler
// stack `groundhog serve` runs, called directly, in front of an upstream on
// loopback that reads the body and answers a stored chat completion (no
// simulation: what is left is the gateway's work plus one loopback round
// trip). For profiles of the miss path; `groundhog bench` measures it
// across processes.
func BenchmarkMissHandler(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim-small","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":2,"total_tokens":1002,"prompt_tokens_details":{"cached_tokens":0}}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(up.Close)
	for _, c := range []struct {
		name   string
		size   int
		keyed  bool
		cached bool
	}{
		{"1KB", 1 << 10, false, false},
		{"200KB", 200 << 10, false, false},
		// With gateway keys and one provider account shared by the
		// tenants, as a gateway on a non-loopback address runs: the body
		// is searched for the resources it may name.
		{"1KB,keys", 1 << 10, true, false},
		{"200KB,keys", 200 << 10, true, false},
		// With the cache on: every miss looks the call up in the cache
		// (the memory tier, then the database) and stores its answer.
		{"1KB,cache", 1 << 10, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			h, key := newMissHandler(b, up.URL+"/v1", c.keyed)
			base := benchbody.Chat(c.size, benchbody.Options{Model: "sim-small"})
			req, _ := http.NewRequest(http.MethodPost, "http://gateway/v1/chat/completions", nil)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "bench")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			want := "off"
			if c.cached {
				req.Header.Set("Groundhog-Cache", "use")
				want = "miss"
			}
			w := &discardWriter{h: http.Header{}}
			var body []byte
			i := 0
			serve := func() {
				i++
				vary := `{"safety_identifier":"bench-%d",`
				if c.cached {
					vary = `{"seed":%d,` // the safety identifier is not part of the cache key
				}
				body = append(fmt.Appendf(body[:0], vary, i), base[1:]...)
				req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				clear(w.h)
				w.status, w.n = 0, 0
				h.ServeHTTP(w, req)
			}
			serve()
			if w.status != http.StatusOK || w.n == 0 {
				b.Fatalf("priming: status %d, %d bytes", w.status, w.n)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(base)))
			b.ResetTimer()
			for b.Loop() {
				serve()
			}
			b.StopTimer()
			if w.status != http.StatusOK || w.h.Get("Groundhog-Cache") != want {
				b.Fatalf("status %d, Groundhog-Cache %q, want %q", w.status, w.h.Get("Groundhog-Cache"), want)
			}
		})
	}
}

// newMissHandler is newHitHandler with the upstream at upstream; keyed
// adds a gateway key and returns it.
func newMissHandler(b *testing.B, upstream string, keyed bool) (http.Handler, string) {
	ctx := context.Background()
	cfg := config.Default()
	dir := b.TempDir()
	cfg.DB = filepath.Join(dir, "groundhog.db")
	if err := cfg.Finish(); err != nil {
		b.Fatal(err)
	}
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
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	var gw *gateway.Server
	m := metrics.New(func() float64 { return float64(gw.InFlight()) })
	rec := &observe.Recorder{Metrics: m, Log: log, Next: lw}
	u := gateway.Upstream{BaseURL: upstream, Provider: "sim"}
	key := benchKey(b, db, keyed)
	gw = gateway.New(gateway.Options{Config: &cfg, Keys: db, Cache: c, Ledger: rec, OpenAI: u, Anthropic: u, Logger: log, Keyless: !keyed})
	return httpguard.Handler(gw, httpguard.Options{}), key
}
