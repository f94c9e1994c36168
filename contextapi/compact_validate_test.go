package contextapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
)

// A compaction writes a state only if a PUT of it would be accepted: an
// invalid evidence ref is a 400 and a state over state.max_bytes a 413,
// and in both cases nothing is written (the session stays patchable).
func TestCompactValidatesLikePut(t *testing.T) {
	g := start(t, func(c *config.Config) { c.State.MaxBytes = 4096 })
	putState(t, g, groundhog.LocalTenant, "s1", seedState(""), 0)
	ev := `"src/webhooks.py","incident-1042"`
	for _, c := range []struct {
		name, proposal string
		status         int
	}{
		{"invalid evidence ref", `{"findings":["merged"],"evidence":[` + ev + `,"ev_NOT_A_VALID_REF"]}`, 400},
		{"over the size limit", `{"findings":["` + strings.Repeat("x", 5000) + `"],"evidence":[` + ev + `]}`, 413},
	} {
		code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small","proposal":`+c.proposal+`}`)
		if code != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.status)
		}
	}
	vs, err := g.DB.ListStateVersions(context.Background(), groundhog.LocalTenant, "s1")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions after refused compactions: %d %v, want 1", len(vs), err)
	}
	code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", `{"model":"sim-small","proposal":{"findings":["merged"],"evidence":[`+ev+`]}}`)
	if code != 200 {
		t.Fatalf("a valid proposal: %d %s", code, body)
	}
}

// A compaction's If-Match with a well-formed entity tag that names no
// version is a 412 carrying current_version, as for a stale version; only a
// malformed If-Match is a 400.
func TestCompactIfMatchNotAVersion(t *testing.T) {
	g := start(t)
	putState(t, g, groundhog.LocalTenant, "s1", seedState(""), 0)
	proposal := `{"model":"sim-small","proposal":{"findings":["merged"],"evidence":["src/webhooks.py","incident-1042"]}}`
	for _, tag := range []string{`"no-such-version"`, `W/"1"`, `"0"`} {
		code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", proposal, "If-Match", tag)
		var e struct {
			Current int64 `json:"current_version"`
		}
		_ = json.Unmarshal(body, &e)
		if code != 412 || e.Current != 1 {
			t.Errorf("If-Match %s: %d %s, want 412 with current_version 1", tag, code, body)
		}
	}
	if code, _, body := post(t, g.URL+"/groundhog/v1/sessions/s1/compact", proposal, "If-Match", `"1`); code != 400 {
		t.Errorf("malformed If-Match: %d %s, want 400", code, body)
	}
	if v, _ := g.DB.GetState(context.Background(), groundhog.LocalTenant, "s1"); v.Version != 1 {
		t.Errorf("version %d after refused compactions, want 1", v.Version)
	}
}
