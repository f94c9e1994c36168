package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// The session report endpoint answers the caller's tenant's run and its
// subagent tree; another tenant's run of the same id is a 404, and so is a
// run with no call that day.
func TestSessionReportTenantScoped(t *testing.T) {
	db := openStore(t)
	at := testNow.Add(-time.Hour)
	row := func(id, tenant, session, parent string, cost groundhog.Money) groundhog.LedgerEntry {
		return groundhog.LedgerEntry{ID: id, Time: at, Tenant: tenant, Operation: "chat", RequestHash: "sha256:" + id,
			Outcome: groundhog.OutcomeUpstream, Status: 200, Cost: cost, FullCost: cost, Session: session, ParentSession: parent}
	}
	if err := db.AppendLedger(context.Background(), []groundhog.LedgerEntry{
		row("a1", "acme", "run-1", "", 1_000*groundhog.Microdollar),
		row("a2", "acme", "run-1.sub", "run-1", 250*groundhog.Microdollar),
		row("b1", "beta", "run-9", "", 7_000*groundhog.Microdollar),
	}); err != nil {
		t.Fatal(err)
	}
	d := New(Options{Store: db, Auth: testAuth, Clock: fakeClock{testNow}, Logger: quietLog})
	mux := http.NewServeMux()
	mux.Handle(SessionReportPattern, d.SessionReportHandler())
	get := func(key, path string) (int, map[string]any) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body
	}
	code, body := get(keyAcme, "/groundhog/v1/sessions/run-1/report")
	if code != http.StatusOK {
		t.Fatalf("own run: %d %v", code, body)
	}
	runs := body["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("runs = %v, want run-1 and its subagent", runs)
	}
	r0 := runs[0].(map[string]any)
	own, tree := r0["own"].(map[string]any), r0["tree"].(map[string]any)
	if r0["session"] != "run-1" || own["spend_usd"] != 0.001 || tree["spend_usd"] != 0.00125 || tree["model_calls"] != 2.0 {
		t.Fatalf("run-1 = %v, want own spend 0.001000 and tree spend 0.001250 over 2 calls", r0)
	}
	if code, _ := get(keyAcme, "/groundhog/v1/sessions/run-9/report"); code != http.StatusNotFound {
		t.Fatalf("another tenant's run: %d, want 404", code)
	}
	if code, _ := get(keyBeta, "/groundhog/v1/sessions/run-1/report"); code != http.StatusNotFound {
		t.Fatalf("beta asking for acme's run-1: %d, want 404", code)
	}
	if code, _ := get(keyAcme, "/groundhog/v1/sessions/run%201/report"); code != http.StatusBadRequest {
		t.Fatalf("bad run id: %d, want 400", code)
	}
}
