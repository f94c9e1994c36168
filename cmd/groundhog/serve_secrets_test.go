package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog/config"
)

// recorder keeps everything serve prints, and hands the listening line to
// a lineWriter.
type recorder struct {
	mu  sync.Mutex
	all strings.Builder
	lw  *lineWriter
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.all.Write(p)
	r.mu.Unlock()
	return r.lw.Write(p)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all.String()
}

// The warning about a real upstream without a provider key, and the line
// naming the OTLP endpoint, print the URL without the password it may carry.
func TestServeHidesURLPasswords(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = filepath.Join(t.TempDir(), "groundhog.db")
	cfg.Upstream = "http://proxyuser:OPENAIPW@127.0.0.1:1/v1"
	cfg.AnthropicUpstream = "https://proxyuser:ANTHROPICPW@127.0.0.1:1/v1"
	cfg.OTLPEndpoint = "http://otel:OTLPPW@127.0.0.1:1"
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	cfg.OpenAIAPIKey, cfg.AnthropicAPIKey = "", "" // whatever the environment holds
	ctx, cancel := context.WithCancel(context.Background())
	out := &recorder{lw: &lineWriter{addr: make(chan string, 1)}}
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, &cfg, out) }()
	select {
	case <-out.lw.addr:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve: %v", err)
	}
	got := out.String()
	if strings.Contains(got, "OPENAIPW") || strings.Contains(got, "ANTHROPICPW") || strings.Contains(got, "OTLPPW") {
		t.Fatalf("serve printed an upstream password:\n%s", got)
	}
	for _, want := range []string{"calls to http://proxyuser:xxxxx@127.0.0.1:1/v1 go without one", "calls to https://proxyuser:xxxxx@127.0.0.1:1/v1 go without one",
		"exporting a trace span per call to http://otel:xxxxx@127.0.0.1:1"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in serve's output:\n%s", want, got)
		}
	}
}
