package contextapi_test

import (
	"context"
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
