package contextapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/localgw"
)

// seedState is the seed record; the second constraint carries
// whitespace and markup a summarizer would "tidy".
func seedState(evRef string) groundhog.WorkingState {
	ev := []string{"src/webhooks.py", "incident-1042"}
	if evRef != "" {
		ev = append(ev, evRef)
	}
	return groundhog.WorkingState{
		Objective:        "Fix the webhook retry bug",
		Constraints:      []string{"No duplicate charges", "  Rollback  required <always> & logged "},
		Findings:         []string{"Worker may time out after downstream success"},
		FailedApproaches: []string{"Blind retry duplicates the action"},
		Evidence:         ev,
		NextStep:         "Check downstream idempotency support",
	}
}

func start(t *testing.T, configure ...func(*config.Config)) *localgw.Gateway {
	t.Helper()
	var o localgw.Options
	if len(configure) > 0 {
		o.Configure = configure[0]
	}
	g, err := localgw.Start(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}

func putState(t *testing.T, g *localgw.Gateway, tenant, session string, s groundhog.WorkingState, expect int64) *groundhog.StateVersion {
	t.Helper()
	v, err := g.DB.PutState(context.Background(), groundhog.StateVersion{Tenant: tenant, Session: session, State: s, Author: "test"}, expect)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func post(t *testing.T, url, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

type contextAnswer struct {
	Request json.RawMessage `json:"request"`
	Tokens  struct {
		Prefix   int64 `json:"prefix"`
		State    int64 `json:"state"`
		LastStep int64 `json:"last_step"`
	} `json:"tokens"`
	Compaction struct {
		Compact           bool   `json:"compact"`
		Reason            string `json:"reason"`
		ExpectedSavingUSD string `json:"expected_saving_usd"`
		CostUSD           string `json:"cost_usd"`
	} `json:"compaction"`
	StateVersion int64 `json:"state_version"`
}

const chatContext = `{"shape":"chat","model":"sim-small","instructions":"You are a careful payments engineer.",
 "tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}],
 "last_step":[{"role":"user","content":"Continue."}],"breakpoints":"auto"}`

func TestContextAssemblesAndTheGatewayAnswersIt(t *testing.T) {
	g := start(t)
	ctx := context.Background()
	info, _, err := g.DB.PutEvidence(ctx, groundhog.LocalTenant, "text/plain", strings.NewReader("line 1\nline 2\nline 3\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	putState(t, g, groundhog.LocalTenant, "s1", seedState(info.Ref), 0)
	code, hdr, body := post(t, g.URL+"/groundhog/v1/sessions/s1/context", chatContext)
	if code != 200 {
		t.Fatalf("context: %d %s", code, body)
	}
	if hdr.Get("ETag") != `"1"` {
		t.Errorf("ETag %q", hdr.Get("ETag"))
	}
	var a contextAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	req := string(a.Request)
	for _, want := range []string{`"  Rollback  required <always> & logged "`, info.Ref + `: text/plain, 21 bytes, 3 lines`, "src/webhooks.py: external reference", `"prompt_cache_breakpoint"`} {
		if !strings.Contains(req, strings.Trim(want, `"`)) {
			t.Errorf("request lacks %s: %s", want, req)
		}
	}
	if a.Tokens.Prefix == 0 || a.Tokens.State == 0 || a.Tokens.LastStep == 0 || a.StateVersion != 1 {
		t.Errorf("answer %+v", a)
	}
	if a.Compaction.Compact || !strings.HasPrefix(a.Compaction.Reason, "state_below_minimum") || a.Compaction.CostUSD == "" {
		t.Errorf("decision for a small state: %+v", a.Compaction)
	}
	// The body is what the client sends: the gateway answers it.
	code, _, out := post(t, g.URL+"/v1/chat/completions", string(a.Request))
	if code != 200 {
		t.Fatalf("gateway answered the assembled request %d: %s", code, out)
	}
}

// The prefix bytes are unchanged across a state update, over HTTP.
func TestContextPrefixStableAcrossStateUpdates(t *testing.T) {
	g := start(t)
	putState(t, g, groundhog.LocalTenant, "s1", seedState(""), 0)
	get := func() contextAnswer {
		code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/context", chatContext)
		if code != 200 {
			t.Fatalf("context: %d %s", code, body)
		}
		var a contextAnswer
		_ = json.Unmarshal(body, &a)
		return a
	}
	a := get()
	if again := get(); !bytes.Equal(a.Request, again.Request) {
		t.Fatal("the same state gave different bytes")
	}
	s := seedState("")
	s.Findings = append(s.Findings, "Downstream honours Idempotency-Key")
	putState(t, g, groundhog.LocalTenant, "s1", s, 1)
	b := get()
	stateAt := bytes.Index(a.Request, []byte("# Working state"))
	if stateAt < 0 || !bytes.Equal(a.Request[:stateAt], b.Request[:stateAt]) {
		t.Errorf("the prefix changed with the state:\n%s\n%s", a.Request, b.Request)
	}
	if a.Tokens.Prefix != b.Tokens.Prefix || b.Tokens.State <= a.Tokens.State || b.StateVersion != 2 {
		t.Errorf("tokens %+v then %+v", a.Tokens, b.Tokens)
	}
}

type compactAnswer struct {
	Version      int64                  `json:"version"`
	State        groundhog.WorkingState `json:"state"`
	Source       string                 `json:"source"`
	TokensBefore int64                  `json:"tokens_before"`
	TokensAfter  int64                  `json:"tokens_after"`
	CallCostUSD  string                 `json:"call_cost_usd"`
}

// bigState has many findings, so compacting pays.
func bigState() groundhog.WorkingState {
	s := seedState("")
	for i := range 300 {
		s.Findings = append(s.Findings, "Finding number "+strings.Repeat("x", i%7+1)+" about retries, timeouts and downstream acknowledgements")
	}
	return s
}

// Compaction through the gateway: the sim answers the structured-output
// request; the constraints and objective survive byte for byte; the call
// is ledgered and priced; the new state is version 2.
func TestCompactThroughTheGateway(t *testing.T) {
	run := func() (compactAnswer, *localgw.Gateway) {
		g := start(t)
		putState(t, g, groundhog.LocalTenant, "s1", bigState(), 0)
		// The context call first says compacting pays.
		code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/context",
			`{"shape":"chat","model":"sim-large","last_step":[{"role":"user","content":"go"}],"expected_steps_left":50}`)
		var a contextAnswer
		_ = json.Unmarshal(body, &a)
		if code != 200 || !a.Compaction.Compact {
			t.Fatalf("context %d, decision %+v", code, a.Compaction)
		}
		code, hdr, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small"}`)
		if code != 200 {
			t.Fatalf("compact: %d %s", code, body)
		}
		if hdr.Get("ETag") != `"2"` {
			t.Errorf("ETag %q", hdr.Get("ETag"))
		}
		var c compactAnswer
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		return c, g
	}
	c, g := run()
	want := bigState()
	if c.Version != 2 || c.Source != "model" || c.TokensAfter >= c.TokensBefore {
		t.Errorf("answer %+v", c)
	}
	stored, err := g.DB.GetState(context.Background(), groundhog.LocalTenant, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []groundhog.WorkingState{c.State, stored.State} {
		if s.Objective != want.Objective || len(s.Constraints) != len(want.Constraints) {
			t.Fatalf("state %+v", s)
		}
		for i := range want.Constraints {
			if s.Constraints[i] != want.Constraints[i] {
				t.Errorf("constraint %d: %q, want %q", i, s.Constraints[i], want.Constraints[i])
			}
		}
		if strings.Join(s.Evidence, "|") != strings.Join(want.Evidence, "|") {
			t.Errorf("evidence %q", s.Evidence)
		}
	}
	if stored.Version != 2 || stored.Author != "compaction" {
		t.Errorf("stored version %d by %q", stored.Version, stored.Author)
	}
	if c.CallCostUSD == "" || c.CallCostUSD == "unknown" {
		t.Errorf("the summarizing call was not priced: %q", c.CallCostUSD)
	}
	if bill := g.Sim.Bill(); bill.Calls != 1 {
		t.Errorf("the sim billed %d calls, want 1", bill.Calls)
	}
	if err := g.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows []groundhog.LedgerEntry
	err = g.DB.ScanLedger(context.Background(), groundhog.LedgerFilter{Tenant: groundhog.LocalTenant, To: time.Now().Add(time.Hour)},
		func(e *groundhog.LedgerEntry) error { rows = append(rows, *e); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Operation != "groundhog.compact" {
		t.Errorf("ledger rows %+v", rows)
	}
	// Deterministic: a fresh gateway compacts the same state to the same bytes.
	c2, _ := run()
	j1, _ := json.Marshal(c.State)
	j2, _ := json.Marshal(c2.State)
	if !bytes.Equal(j1, j2) {
		t.Errorf("two compactions differ:\n%s\n%s", j1, j2)
	}
}

// A proposal that drops, reorders or alters a constraint or the objective
// (whitespace included), or drops evidence, is a 422 and the state is
// unchanged.
func TestCompactRejectsAlteredVerbatimFields(t *testing.T) {
	g := start(t)
	putState(t, g, groundhog.LocalTenant, "s1", seedState(""), 0)
	ev := `"evidence":["src/webhooks.py","incident-1042"]`
	for name, proposal := range map[string]string{
		"constraint whitespace": `{"constraints":["No duplicate charges","  Rollback  required <always> & logged"],` + ev + `}`,
		"constraint collapsed":  `{"constraints":["No duplicate charges"," Rollback required <always> & logged "],` + ev + `}`,
		"constraints reordered": `{"constraints":["  Rollback  required <always> & logged ","No duplicate charges"],` + ev + `}`,
		"constraint dropped":    `{"constraints":["No duplicate charges"],` + ev + `}`,
		"objective altered":     `{"objective":"Fix the webhook retry bug ",` + ev + `}`,
		"evidence dropped":      `{"evidence":["incident-1042"]}`,
	} {
		code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small","proposal":`+proposal+`}`)
		if code != 422 || !json.Valid(body) || !strings.Contains(string(body), `"code":"mismatch"`) {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	vs, err := g.DB.ListStateVersions(context.Background(), groundhog.LocalTenant, "s1")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions after rejected proposals: %d %v", len(vs), err)
	}
	j1, _ := json.Marshal(vs[0].State)
	j2, _ := json.Marshal(seedState(""))
	if !bytes.Equal(j1, j2) {
		t.Errorf("state changed: %s", j1)
	}
	// A valid proposal (findings merged, verbatim fields left out) is written.
	code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small","proposal":{"findings":["merged"],`+ev+`}}`,
		"If-Match", `"1"`)
	if code != 200 {
		t.Fatalf("valid proposal: %d %s", code, body)
	}
	var c compactAnswer
	_ = json.Unmarshal(body, &c)
	if c.Source != "proposal" || c.State.Constraints[1] != "  Rollback  required <always> & logged " || c.State.Findings[0] != "merged" {
		t.Errorf("answer %+v", c)
	}
	if bill := g.Sim.Bill(); bill.Calls != 0 {
		t.Errorf("a client proposal called the model %d times", bill.Calls)
	}
}

// If-Match pins the starting version: a stale one is a 412 naming the
// current version, and nothing is written.
func TestCompactIfMatch(t *testing.T) {
	g := start(t)
	putState(t, g, groundhog.LocalTenant, "s1", seedState(""), 0)
	putState(t, g, groundhog.LocalTenant, "s1", bigState(), 1)
	code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small"}`, "If-Match", `"1"`)
	var e struct {
		Current int64 `json:"current_version"`
	}
	_ = json.Unmarshal(body, &e)
	if code != 412 || e.Current != 2 {
		t.Errorf("stale If-Match: %d %s", code, body)
	}
	if v, _ := g.DB.GetState(context.Background(), groundhog.LocalTenant, "s1"); v.Version != 2 {
		t.Errorf("version %d after a 412", v.Version)
	}
	if bill := g.Sim.Bill(); bill.Calls != 0 {
		t.Errorf("a 412 called the model")
	}
	// No body at all stands for {}: with no model and no compaction.model
	// configured, the summarizer is unknown (400), nothing written.
	res, err := http.Post(g.URL+"/groundhog/v1/sessions/s1/compact", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(b), "model") {
		t.Errorf("empty compact: %d %s", res.StatusCode, b)
	}
}

func TestBadInput(t *testing.T) {
	g := start(t)
	putState(t, g, groundhog.LocalTenant, "s1", seedState(""), 0)
	ctxURL, compURL := g.URL+"/groundhog/v1/sessions/s1/context", g.URL+"/groundhog/v1/sessions/s1/compact"
	big := `{"shape":"chat","model":"m","instructions":"` + strings.Repeat("a", 9<<20) + `","last_step":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		name, url, body string
		headers         []string
		status          int
	}{
		{"malformed", ctxURL, `{"shape":`, nil, 400},
		{"not an object", ctxURL, `[1]`, nil, 400},
		{"trailing", ctxURL, `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}]} {}`, nil, 400},
		{"wrong type", ctxURL, `{"shape":"chat","model":7,"last_step":[]}`, nil, 400},
		{"unknown field", ctxURL, `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}],"temperature":1}`, nil, 400},
		{"bad shape", ctxURL, `{"shape":"embeddings","model":"m","last_step":[{"role":"user","content":"x"}]}`, nil, 400},
		{"no last step", ctxURL, `{"shape":"chat","model":"m","last_step":[]}`, nil, 400},
		{"last step not objects", ctxURL, `{"shape":"chat","model":"m","last_step":["hi"]}`, nil, 400},
		{"bad breakpoints", ctxURL, `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}],"breakpoints":"yes"}`, nil, 400},
		{"bad evidence ref", ctxURL, `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}],"evidence_inline":["ev_123"]}`, nil, 400},
		{"evidence not stored", ctxURL, `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}],"evidence_inline":["ev_` + strings.Repeat("0", 64) + `"]}`, nil, 404},
		{"negative steps", ctxURL, `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}],"expected_steps_left":-1}`, nil, 400},
		{"oversized", ctxURL, big, nil, 413},
		{"content type", ctxURL, `{}`, []string{"Content-Type", "text/plain"}, 415},
		{"unknown session", g.URL + "/groundhog/v1/sessions/nope/context", `{"shape":"chat","model":"m","last_step":[{"role":"user","content":"x"}]}`, nil, 404},
		{"compact malformed", compURL, `{"model":`, nil, 400},
		{"compact unknown field", compURL, `{"model":"sim-small","force":true}`, nil, 400},
		{"compact proposal not object", compURL, `{"model":"sim-small","proposal":"short"}`, nil, 400},
		{"compact proposal unknown field", compURL, `{"model":"sim-small","proposal":{"summary":"x"}}`, nil, 400},
		{"compact bad If-Match", compURL, `{"model":"sim-small"}`, []string{"If-Match", "W/abc"}, 400},
		{"compact unknown session", g.URL + "/groundhog/v1/sessions/nope/compact", `{"model":"sim-small"}`, nil, 404},
	} {
		code, hdr, body := post(t, c.url, c.body, c.headers...)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if code != c.status || json.Unmarshal(body, &e) != nil || e.Error.Message == "" || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want %d with a JSON error", c.name, code, body, c.status)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, ctxURL, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 || res.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d", res.StatusCode)
	}
	vs, _ := g.DB.ListStateVersions(context.Background(), groundhog.LocalTenant, "s1")
	if len(vs) != 1 {
		t.Errorf("bad input wrote: %d versions", len(vs))
	}
}

// With gateway keys, a session is its tenant's: another tenant's is a 404,
// and no key is a 401.
func TestTenantIsolation(t *testing.T) {
	g := start(t)
	ctx := context.Background()
	for _, k := range []struct{ id, tenant, secret string }{{"ka", "alpha", "sk-alpha-secret"}, {"kb", "beta", "sk-beta-secret"}} {
		if err := g.DB.CreateKey(ctx, groundhog.APIKey{ID: k.id, Tenant: k.tenant, Hash: groundhog.HashAPIKey(k.secret), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	putState(t, g, "alpha", "s1", seedState(""), 0)
	u := g.URL + "/groundhog/v1/sessions/s1/context"
	if code, _, body := post(t, u, chatContext, "Authorization", "Bearer sk-alpha-secret"); code != 200 {
		t.Errorf("owner: %d %s", code, body)
	}
	if code, _, body := post(t, u, chatContext, "Authorization", "Bearer sk-beta-secret"); code != 404 {
		t.Errorf("other tenant: %d %s", code, body)
	}
	if code, _, _ := post(t, u, chatContext); code != 401 {
		t.Errorf("no key: %d", code)
	}
	if code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small"}`, "Authorization", "Bearer sk-beta-secret"); code != 404 {
		t.Errorf("other tenant compact: %d %s", code, body)
	}
	// The owner's compaction forwards the owner's key to the gateway.
	putState(t, g, "alpha", "s1", bigState(), 1)
	if code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small"}`, "Authorization", "Bearer sk-alpha-secret"); code != 200 {
		t.Errorf("owner compact: %d %s", code, body)
	}
}

// The summarizing call fails upstream: 502 with a JSON error, the state is
// unchanged.
func TestCompactUpstreamFailure(t *testing.T) {
	g := start(t, func(c *config.Config) { c.Sim.Fault = "status=500" })
	putState(t, g, groundhog.LocalTenant, "s1", bigState(), 0)
	code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small"}`)
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if code != 502 || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error.Message, "summarizing call") {
		t.Errorf("compact with a failing provider: %d %s", code, body)
	}
	if v, _ := g.DB.GetState(context.Background(), groundhog.LocalTenant, "s1"); v.Version != 1 {
		t.Errorf("version %d after a failed compaction", v.Version)
	}
}

// Compacting an identical state again (another session, same tenant) is a
// response-cache hit: the provider is called once.
func TestCompactIdenticalStateIsCached(t *testing.T) {
	g := start(t)
	var states [2]compactAnswer
	var caches [2]string
	for i, session := range []string{"a", "b"} {
		putState(t, g, groundhog.LocalTenant, session, bigState(), 0)
		code, _, body := post(t, g.URL+"/groundhog/v1/sessions/"+session+"/compact", `{"model":"sim-small"}`)
		if code != 200 {
			t.Fatalf("%s: %d %s", session, code, body)
		}
		var raw struct {
			CallCache string `json:"call_cache"`
		}
		_ = json.Unmarshal(body, &states[i])
		_ = json.Unmarshal(body, &raw)
		caches[i] = raw.CallCache
	}
	if caches != [2]string{"miss", "hit"} {
		t.Errorf("cache answers %v, want miss then hit", caches)
	}
	if bill := g.Sim.Bill(); bill.Calls != 1 {
		t.Errorf("the sim billed %d calls, want 1", bill.Calls)
	}
	j1, _ := json.Marshal(states[0].State)
	j2, _ := json.Marshal(states[1].State)
	if !bytes.Equal(j1, j2) {
		t.Errorf("different compactions of one state:\n%s\n%s", j1, j2)
	}
}

// With compaction.model configured, a bare POST …/compact compacts.
func TestCompactConfiguredModelNoBody(t *testing.T) {
	g := start(t, func(c *config.Config) { c.Compaction.Model = "sim-small" })
	putState(t, g, groundhog.LocalTenant, "s1", bigState(), 0)
	res, err := http.Post(g.URL+"/groundhog/v1/sessions/s1/compact", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var c struct {
		Version  int64 `json:"version"`
		Decision struct {
			SummaryModel string `json:"summary_model"`
		} `json:"decision"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &c) != nil || c.Version != 2 || c.Decision.SummaryModel != "sim-small" {
		t.Errorf("bare compact: %d %s", res.StatusCode, b)
	}
}
