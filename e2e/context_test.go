package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `groundhog serve` mounts context assembly and compaction behind the
// gateway keys; the compaction's summarizing call goes through the gateway
// with the caller's key and keeps the constraints byte for byte.
func TestServeContextAndCompact(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	acme, other := groundhogKey(t, db, "acme"), groundhogKey(t, db, "other")
	gw := start(t, nil, "serve", "--db", db)
	base := gw.URL + "/groundhog/v1/sessions/run-1"
	seed := `{"objective":"Fix the webhook retry bug","constraints":["No duplicate charges","Rollback  required "],"findings":["Worker may time out after downstream success"],"failed_approaches":["Blind retry duplicates the action"],"evidence":["src/webhooks.py","incident-1042"],"next_step":"Check downstream idempotency support"}`
	if r := do(t, "PUT", base+"/state", acme, seed, "Content-Type: application/json", "If-None-Match: *"); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	ctxBody := `{"shape":"chat","model":"sim-small","instructions":"Be careful.","last_step":[{"role":"user","content":"Continue."}]}`
	r := do(t, "POST", base+"/context", acme, ctxBody, "Content-Type: application/json")
	if r.status != 200 || !strings.Contains(string(r.body), `2. Rollback  required \n`) {
		t.Fatalf("context: %d %s", r.status, r.body)
	}
	var a struct {
		Request json.RawMessage `json:"request"`
	}
	_ = json.Unmarshal(r.body, &a)
	if r := do(t, "POST", gw.URL+"/v1/chat/completions", acme, string(a.Request), "Content-Type: application/json"); r.status != 200 {
		t.Fatalf("the gateway answered the assembled request %d: %s", r.status, r.body)
	}
	if r := do(t, "POST", base+"/context", other, ctxBody, "Content-Type: application/json"); r.status != 404 {
		t.Errorf("other tenant: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", base+"/context", "", ctxBody, "Content-Type: application/json"); r.status != 401 {
		t.Errorf("no key: %d %s", r.status, r.body)
	}
	r = do(t, "POST", base+"/compact", acme, `{"model":"sim-small"}`, "Content-Type: application/json", `If-Match: "1"`)
	if r.status != 200 || r.header.Get("ETag") != `"2"` {
		t.Fatalf("compact: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", base+"/state", acme, ""); r.status != 200 || !strings.Contains(string(r.body), `"constraints":["No duplicate charges","Rollback  required "]`) {
		t.Errorf("state after compaction: %d %s", r.status, r.body)
	}
	bad := `{"proposal":{"constraints":["No duplicate charges","Rollback required"],"evidence":["src/webhooks.py","incident-1042"]}}`
	if r := do(t, "POST", base+"/compact", acme, bad, "Content-Type: application/json"); r.status != 422 {
		t.Errorf("altered constraint: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", base+"/state/versions", acme, ""); r.status != 200 || strings.Count(string(r.body), `"version"`) != 2 {
		t.Errorf("versions: %d %s", r.status, r.body)
	}
}

// `groundhog simulate` prints the seed's figures exactly.
func TestSimulateCLI(t *testing.T) {
	out, err := exec.Command(binary, "simulate", "--steps", "50,100", "--tokens-per-step", "2000", "--state-tokens", "4000", "--format", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Rows []struct {
			Full struct {
				InputTokens int64 `json:"input_tokens"`
			} `json:"full_transcript"`
			Compact struct {
				InputTokens int64 `json:"input_tokens"`
			} `json:"compact_state"`
		} `json:"rows"`
		Ratios []struct {
			Full    string `json:"full_transcript"`
			Compact string `json:"compact_state"`
		} `json:"ratios"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(res.Rows) != 2 || res.Rows[0].Full.InputTokens != 2_550_000 || res.Rows[1].Full.InputTokens != 10_100_000 ||
		res.Rows[0].Compact.InputTokens != 300_000 || res.Rows[1].Compact.InputTokens != 600_000 ||
		res.Ratios[0].Full != "3.96" || res.Ratios[0].Compact != "2.00" {
		t.Errorf("figures: %s", out)
	}
	plot := filepath.Join(t.TempDir(), "c.svg")
	if out, err := exec.Command(binary, "simulate", "--price", "sim-large", "--prompt-cache", "--plot", plot).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "25.500000") {
		t.Errorf("table with prices: %v %s", err, out)
	}
	if out, err := exec.Command(binary, "simulate", "--price", "no-such-model").CombinedOutput(); err == nil || !strings.Contains(string(out), "not in the price table") {
		t.Errorf("unknown price: %v %s", err, out)
	}
}
