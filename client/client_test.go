package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/client"
	"github.com/groundhog-ai/groundhog/contextapi"
	"github.com/groundhog-ai/groundhog/localgw"
)

func start(t *testing.T) (*localgw.Gateway, *client.Client) {
	t.Helper()
	g, err := localgw.Start(context.Background(), t.TempDir(), localgw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, client.New(g.URL, "", nil)
}

var seed = groundhog.WorkingState{
	Objective:        "Fix the webhook retry bug",
	Constraints:      []string{"No duplicate charges", "Rollback required"},
	Findings:         []string{"Worker may time out after downstream success"},
	FailedApproaches: []string{"Blind retry duplicates the action"},
	Evidence:         []string{"src/webhooks.py", "incident-1042"},
	NextStep:         "Check downstream idempotency support",
}

func TestState(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	if _, err := c.GetState(ctx, "s1"); client.StatusOf(err) != 404 {
		t.Fatalf("no state yet: %v", err)
	}
	v1, err := c.CreateState(ctx, "s1", seed)
	if err != nil || v1.Version != 1 {
		t.Fatalf("create: %+v %v", v1, err)
	}
	if _, err := c.CreateState(ctx, "s1", seed); client.StatusOf(err) != 412 {
		t.Errorf("second create: %v", err)
	}
	got, err := c.GetState(ctx, "s1")
	if err != nil || got.Version != 1 {
		t.Fatal(got, err)
	}
	a, _ := json.Marshal(got.State)
	b, _ := json.Marshal(seed)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip:\n%s\n%s", a, b)
	}
	next := seed
	next.NextStep = "Add the key downstream"
	v2, err := c.PutState(ctx, "s1", next, 1)
	if err != nil || v2.Version != 2 {
		t.Fatal(v2, err)
	}
	_, err = c.PutState(ctx, "s1", seed, 1)
	var e *client.Error
	if client.StatusOf(err) != 412 || !asError(err, &e) || e.CurrentVersion != 2 {
		t.Errorf("stale put: %v", err)
	}
	v3, err := c.PatchState(ctx, "s1", map[string]any{"findings": []string{"merged"}}, 2)
	if err != nil || v3.Version != 3 || v3.State.Findings[0] != "merged" || v3.State.Constraints[1] != "Rollback required" {
		t.Fatalf("patch: %+v %v", v3, err)
	}
	vs, err := c.StateVersions(ctx, "s1")
	if err != nil || len(vs) != 3 || vs[0].Version != 3 {
		t.Fatalf("versions %+v %v", vs, err)
	}
	old, err := c.StateVersion(ctx, "s1", 1)
	if err != nil || old.State.NextStep != seed.NextStep {
		t.Errorf("version 1: %+v %v", old, err)
	}
	if err := c.DeleteState(ctx, "s1", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetState(ctx, "s1"); client.StatusOf(err) != 404 {
		t.Errorf("after delete: %v", err)
	}
}

func asError(err error, e **client.Error) bool {
	x, ok := err.(*client.Error)
	*e = x
	return ok
}

func TestEvidence(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	blob := "first line\nsecond line\nthird line\n"
	ev, err := c.PutEvidence(ctx, "text/plain", strings.NewReader(blob))
	if err != nil || !ev.Created || ev.Lines != 3 || ev.Bytes != int64(len(blob)) || !groundhog.ValidEvidenceRef(ev.Ref) {
		t.Fatalf("put: %+v %v", ev, err)
	}
	again, err := c.PutEvidence(ctx, "text/plain", strings.NewReader(blob))
	if err != nil || again.Created || again.Ref != ev.Ref {
		t.Errorf("dedup: %+v %v", again, err)
	}
	info, err := c.StatEvidence(ctx, ev.Ref)
	if err != nil || info.Lines != 3 || info.Bytes != int64(len(blob)) {
		t.Errorf("stat: %+v %v", info, err)
	}
	if l, err := c.EvidenceLines(ctx, ev.Ref, 2, 2); err != nil || string(l) != "second line\n" {
		t.Errorf("lines: %q %v", l, err)
	}
	if _, err := c.EvidenceLines(ctx, ev.Ref, 9, 10); client.StatusOf(err) != 416 {
		t.Errorf("lines past the end: %v", err)
	}
	if r, err := c.EvidenceRange(ctx, ev.Ref, 6, 4); err != nil || string(r) != "line" {
		t.Errorf("range: %q %v", r, err)
	}
	rc, err := c.OpenEvidence(ctx, ev.Ref)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(rc)
	rc.Close()
	if string(whole) != blob {
		t.Errorf("whole: %q", whole)
	}
	if _, err := c.StatEvidence(ctx, "ev_"+strings.Repeat("0", 64)); client.StatusOf(err) != 404 {
		t.Errorf("unknown ref: %v", err)
	}
}

func TestContextCompactAndOperations(t *testing.T) {
	g, c := start(t)
	ctx := context.Background()
	ev, err := c.PutEvidence(ctx, "text/plain", strings.NewReader("log\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := seed
	s.Evidence = append(append([]string{}, s.Evidence...), ev.Ref)
	if _, err := c.CreateState(ctx, "s1", s); err != nil {
		t.Fatal(err)
	}
	res, err := c.Context(ctx, "s1", contextapi.ContextRequest{Shape: "messages", Model: "sim-small", Instructions: "Be careful.",
		LastStep: []json.RawMessage{json.RawMessage(`{"role":"user","content":"next"}`)}, Breakpoints: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res.Request, []byte(ev.Ref+`: text/plain, 4 bytes, 1 lines`)) || res.StateVersion != 1 {
		t.Errorf("context %s", res.Request)
	}
	// The request goes to the gateway's Anthropic route as is.
	hres, err := http.Post(g.URL+"/v1/messages", "application/json", bytes.NewReader(res.Request))
	if err != nil {
		t.Fatal(err)
	}
	hres.Body.Close()
	if hres.StatusCode != 200 {
		t.Errorf("messages answered %d", hres.StatusCode)
	}
	bad := json.RawMessage(`{"constraints":["Rollback required","No duplicate charges"],"evidence":["src/webhooks.py","incident-1042","` + ev.Ref + `"]}`)
	if _, err := c.Compact(ctx, "s1", contextapi.CompactRequest{Model: "sim-small", Proposal: bad}, 0); client.StatusOf(err) != 422 {
		t.Errorf("reordering proposal: %v", err)
	}
	cr, err := c.Compact(ctx, "s1", contextapi.CompactRequest{Model: "sim-small"}, 1)
	if err != nil || cr.Version != 2 || cr.State.Constraints[0] != "No duplicate charges" || cr.Source != "model" {
		t.Fatalf("compact: %+v %v", cr, err)
	}

	op, err := c.BeginOperation(ctx, "refund-42", map[string]any{"charge": "ch_1", "amount": 500}, 0)
	if err != nil || !op.Claimed() {
		t.Fatalf("begin: %+v %v", op, err)
	}
	if _, err := c.CompleteOperation(ctx, op.ID, op.FencingToken, map[string]string{"refund": "re_1"}); err != nil {
		t.Fatal(err)
	}
	again, err := c.BeginOperation(ctx, "refund-42", map[string]any{"charge": "ch_1", "amount": 500}, 0)
	if err != nil || again.Claimed() || !again.Replayed || !bytes.Contains(again.Result, []byte("re_1")) {
		t.Errorf("retry: %+v %v", again, err)
	}
	if _, err := c.BeginOperation(ctx, "refund-42", map[string]any{"charge": "ch_2"}, 0); client.StatusOf(err) != 422 {
		t.Errorf("same key, other payload: %v", err)
	}
	if _, err := c.Report(ctx, ""); err != nil {
		t.Errorf("report: %v", err)
	}
}

// TestStateVersionsFollowsPages: a history longer than one page of the
// listing (1,000) comes back whole, newest first, each version once.
func TestStateVersionsFollowsPages(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	if _, err := c.CreateState(ctx, "long", seed); err != nil {
		t.Fatal(err)
	}
	const n = 1003
	for v := int64(1); v < n; v++ {
		if _, err := c.PatchState(ctx, "long", map[string]any{"next_step": "step"}, v); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := c.StateVersions(ctx, "long")
	if err != nil || len(vs) != n {
		t.Fatalf("%d versions (%v), want %d", len(vs), err, n)
	}
	for i, v := range vs {
		if v.Version != int64(n-i) {
			t.Fatalf("versions[%d] = %d, want %d", i, v.Version, n-i)
		}
	}
}
