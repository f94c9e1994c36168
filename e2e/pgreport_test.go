package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestPostgresReportFromRollups: on PostgreSQL the report comes from the
// daily rollups (ledger.Aggregator), and still includes every answered call:
// `groundhog report` while the rows are only in the running gateway's
// journal (pending rows rolled up on the fly), GET /groundhog/v1/report
// (the writer flushes first), the CLI again after the commit, and after
// --rebuild-rollups: each call counted once.
func TestPostgresReportFromRollups(t *testing.T) {
	pg := freshPostgres(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "g.yaml")
	journal := filepath.Join(dir, "journal")
	if err := os.WriteFile(cfg, []byte("ledger:\n  flush_interval: 1h\n  journal_dir: "+journal+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--config", cfg, "--db", pg)
	const n = 6
	for i := range n {
		body := fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"call %d"}]}`, i%4)
		if r := post(context.Background(), gw.URL+"/v1/chat/completions", body, nil); r.status != 200 {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	if got := reportCalls(t, "--config", cfg, "--db", pg); got != n {
		t.Fatalf("groundhog report right after %d calls (rows in the journal only): %d calls", n, got)
	}
	res, err := http.Get(gw.URL + "/groundhog/v1/report")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Total struct {
			Calls   int64 `json:"calls"`
			Repeats int64 `json:"repeats"`
		} `json:"total"`
	}
	err = json.NewDecoder(res.Body).Decode(&rep)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET report: %d %v", res.StatusCode, err)
	}
	if rep.Total.Calls != n || rep.Total.Repeats != 2 {
		t.Fatalf("GET /groundhog/v1/report right after %d calls: %+v, want %d calls, 2 repeats", n, rep.Total, n)
	}
	if got := reportCalls(t, "--config", cfg, "--db", pg); got != n {
		t.Fatalf("groundhog report after the commit: %d calls, want %d", got, n)
	}
	if got := reportCalls(t, "--config", cfg, "--db", pg, "--rebuild-rollups"); got != n {
		t.Fatalf("groundhog report --rebuild-rollups: %d calls, want %d", got, n)
	}
}
