package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/storetest"
)

// lineWriter hands serve's output lines to a channel.
type lineWriter struct {
	mu   sync.Mutex
	buf  string
	addr chan string
}

var listening = regexp.MustCompile(`listening on (http://[^ ]+)`)

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf += string(p)
	if m := listening.FindStringSubmatch(w.buf); m != nil {
		w.buf = ""
		w.addr <- m[1]
	}
	return len(p), nil
}

// startServe runs serve on a free loopback port until the returned stop
// function is called (a graceful shutdown).
func startServe(t *testing.T, cfg config.Config) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &lineWriter{addr: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, &cfg, w) }()
	var base string
	select {
	case base = <-w.addr:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}
	return base, func() {
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("serve: %v", err)
		}
	}
}

// serve restores the break-diagnosis state it wrote on its last graceful
// shutdown (a 0600 file beside the SQLite database, or beside the replica's
// journal on PostgreSQL): a conversation whose instructions change across a
// restart is still diagnosed.
func TestServeKeepsPromptCacheDiagnosisAcrossRestart(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "groundhog.db")
		testPromptCacheRestart(t, db, "", db+".promptcache")
	})
	t.Run("postgres", func(t *testing.T) {
		journal := filepath.Join(t.TempDir(), "replica1.journal")
		testPromptCacheRestart(t, storetest.FreshPostgres(t), journal, strings.TrimSuffix(journal, ".journal")+".promptcache")
	})
}

func testPromptCacheRestart(t *testing.T, db, journal, snapshot string) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB, cfg.Ledger.JournalDir = db, journal
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	sys := strings.Repeat("You are a support agent for the Acme order desk. ", 200)
	tools := `[{"type":"function","function":{"name":"lookup","description":"` + strings.Repeat("Look up an order by its id. ", 120) + `","parameters":{"type":"object"}}}]`
	call := func(base, system, user string) *http.Response {
		t.Helper()
		body := `{"model":"sim-small","tools":` + tools + `,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"` + user + `"}]}`
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Groundhog-Operation", "support")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		return res
	}
	base, stop := startServe(t, cfg)
	call(base, sys, "where is order 1?")
	stop()
	fi, err := os.Stat(snapshot)
	if err != nil {
		t.Fatalf("no snapshot after a graceful stop: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v, want 0600", fi.Mode().Perm())
	}
	base, stop = startServe(t, cfg)
	defer stop()
	res := call(base, "Today the desk is busy. "+sys, "where is order 2?")
	if got := res.Header.Get("Groundhog-Prompt-Cache-Break"); got != "instructions_changed" {
		t.Fatalf("after a restart Groundhog-Prompt-Cache-Break = %q, want instructions_changed (%s)", got, res.Header.Get("Groundhog-Prompt-Cache"))
	}
}
