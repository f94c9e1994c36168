package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A provider slower than the client's
// timeout (sim --first-token 2s, a client that gives up after 300 ms, as
// `curl -m` does), an Idempotency-Key, and the retry. The abandoned call
// still completes and commits, so the retry (which waits for a running
// record) replays it and the provider bills one call.
func TestRetryAfterClientTimeoutPaysOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 2 s simulated provider")
	}
	dir := t.TempDir()
	simP := start(t, nil, "sim", "--first-token", "2s")
	gw := start(t, nil, "serve", "--db", filepath.Join(dir, "g.db"), "--journal-dir", filepath.Join(dir, "journal"), "--upstream", simP.URL+"/v1")
	body := `{"model":"sim-small","messages":[{"role":"user","content":"slow answer"}]}`
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	r := post(ctx, gw.URL+"/v1/chat/completions", body, map[string]string{"Idempotency-Key": "ct-1"})
	cancel()
	if r.err == nil {
		t.Fatalf("the first call should have timed out on the client, got %d", r.status)
	}
	// The retry waits for the running record and replays its result.
	r = post(context.Background(), gw.URL+"/v1/chat/completions", body, map[string]string{"Idempotency-Key": "ct-1", "Prefer": "wait=30"})
	if r.err != nil || r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %v %d replayed=%q %s", r.err, r.status, r.header.Get("Idempotent-Replayed"), r.body)
	}
	if got := simCalls(t, simP.URL); got != 1 {
		t.Fatalf("the provider billed %d calls for one operation", got)
	}
}
