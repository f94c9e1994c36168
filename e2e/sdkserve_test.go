package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// sdkServe is `groundhog serve` on its built-in simulated provider, with a
// gateway key of tenant acme, as a user starts it for an SDK.
type sdkServe struct {
	gw     *proc
	db     string // the database file
	key    string // the gateway key
	simURL string // the simulated provider (its bill at simURL/sim/v1/bill)
}

func startSDKServe(t *testing.T) sdkServe {
	t.Helper()
	db := t.TempDir() + "/g.db"
	key, err := exec.Command(binary, "keys", "create", "--tenant", "acme", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--db", db)
	m := regexp.MustCompile(`bill at (http://\S+/sim/v1/bill)\)`).FindStringSubmatch(gw.output())
	if m == nil {
		t.Fatalf("serve did not print the simulated provider's bill URL:\n%s", gw.output())
	}
	return sdkServe{gw: gw, db: db, key: strings.TrimSpace(string(key)), simURL: strings.TrimSuffix(m[1], "/sim/v1/bill")}
}

// runNode runs script in dir with env added and decodes the JSON it prints
// into out.
func runNode(t *testing.T, dir, script string, out any, env ...string) {
	t.Helper()
	cmd := exec.Command("node", "--no-warnings", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK run failed: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), out); err != nil {
		t.Fatalf("SDK output %q: %v", b, err)
	}
	t.Logf("SDK output: %s", bytes.TrimSpace(b))
}

// opReport is one operation's figures in `groundhog report --format json`.
type opReport struct {
	Operation     string      `json:"operation"`
	Calls         int64       `json:"calls"`
	CacheHits     int64       `json:"cache_hits"`
	UpstreamCalls int64       `json:"upstream_calls"`
	Spend         json.Number `json:"spend_usd"`
	Saved         json.Number `json:"saved_usd"`
}

// sdkReport reads the day's report of db: its operations, the spend of
// them all, and the count of calls of unknown cost.
func sdkReport(t *testing.T, db string) (ops []opReport, spend groundhog.Money, unknown int) {
	t.Helper()
	rep, err := exec.Command(binary, "report", "--format", "json", "--db", db).Output()
	if err != nil {
		t.Fatalf("report: %v %s", err, rep)
	}
	var r struct {
		UnknownCost int        `json:"unknown_cost_calls"`
		Operations  []opReport `json:"operations"`
	}
	if err := json.Unmarshal(rep, &r); err != nil {
		t.Fatalf("report output: %v %s", err, rep)
	}
	for _, op := range r.Operations {
		spend += money(t, op.Spend)
	}
	return r.Operations, spend, r.UnknownCost
}

// money parses a report amount.
func money(t *testing.T, n json.Number) groundhog.Money {
	t.Helper()
	m, err := groundhog.ParseMoney(n.String())
	if err != nil {
		t.Fatal(err)
	}
	return m
}
