package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// do sends one request to the gateway with the key and "Name: value"
// headers.
func do(t *testing.T, method, url, key, body string, hdr ...string) result {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return result{status: res.StatusCode, header: res.Header, body: b, err: err}
}

// `groundhog serve` mounts the working-state and evidence endpoints behind
// the gateway keys, tenant-scoped, with the limits from the environment
// (GROUNDHOG_STATE_MAX_BYTES, GROUNDHOG_EVIDENCE_QUOTA_BYTES).
func TestServeStateAndEvidence(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	acme, other := groundhogKey(t, db, "acme"), groundhogKey(t, db, "other")
	gw := start(t, []string{"GROUNDHOG_STATE_MAX_BYTES=1024", "GROUNDHOG_EVIDENCE_QUOTA_BYTES=64"}, "serve", "--db", db)
	st := gw.URL + "/groundhog/v1/sessions/run-1/state"
	seed := `{"objective":"Fix the webhook retry bug","constraints":["No duplicate charges","Rollback required"],"findings":["Worker may time out after downstream success"],"failed_approaches":["Blind retry duplicates the action"],"evidence":["src/webhooks.py","incident-1042"],"next_step":"Check downstream idempotency support"}`

	if r := do(t, "GET", st, "", ""); r.status != 401 {
		t.Fatalf("no key: %d %s", r.status, r.body)
	}
	if r := do(t, "PUT", st, acme, seed, "Content-Type: application/json", "If-None-Match: *"); r.status != 201 || r.header.Get("ETag") != `"1"` {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", st, acme, ""); r.status != 200 || string(r.body) != seed+"\n" {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", st, other, ""); r.status != 404 {
		t.Fatalf("other tenant: %d %s", r.status, r.body)
	}
	big := `{"constraints":[],"objective":"` + strings.Repeat("x", 1100) + `"}`
	if r := do(t, "PUT", st, acme, big, "Content-Type: application/json", `If-Match: "1"`); r.status != 413 {
		t.Fatalf("over GROUNDHOG_STATE_MAX_BYTES: %d %s", r.status, r.body)
	}

	ev := gw.URL + "/groundhog/v1/evidence"
	r := do(t, "POST", ev, acme, "line 1\nline 2\n", "Content-Type: text/plain")
	if r.status != 201 || !strings.Contains(string(r.body), `"lines":2`) {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	ref := r.header.Get("Location")
	if g := do(t, "GET", gw.URL+ref+"?lines=2-2", acme, ""); g.status != 200 || string(g.body) != "line 2\n" {
		t.Fatalf("lines: %d %q", g.status, g.body)
	}
	if g := do(t, "GET", gw.URL+ref, other, ""); g.status != 404 {
		t.Fatalf("other tenant's evidence: %d %s", g.status, g.body)
	}
	if r := do(t, "POST", ev, acme, strings.Repeat("z", 60), "Content-Type: text/plain"); r.status != 507 {
		t.Fatalf("over GROUNDHOG_EVIDENCE_QUOTA_BYTES: %d %s", r.status, r.body)
	}
}
