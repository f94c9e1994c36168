package compaction

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/pricing"
)

func TestDecideExact(t *testing.T) {
	cfg := config.DefaultCompaction() // min 1024 tokens, target 40 %
	prices := pricing.Default()       // sim-small: $1 in, $3 out, $1.25 write per M
	base := Inputs{StateTokens: 10_000, VerbatimTokens: 2_000, PromptTokens: 100, StepsLeft: 10, Model: "sim-small"}
	for _, c := range []struct {
		name    string
		mut     func(*Inputs)
		compact bool
		reason  string
		saving  string
		cost    string
	}{
		// after = 2000 + 8000×40 % = 5200; saving 4800 × 10 × $1/M; cost (100+8+10000) × $1/M + 5200 × $3/M.
		{"pays", func(*Inputs) {}, true, ReasonPays, "0.048000", "0.025708"},
		{"prompt cache re-write", func(in *Inputs) { in.PromptCache = true }, true, ReasonPays, "0.048000", "0.032208"},
		{"too few steps", func(in *Inputs) { in.StepsLeft = 5 }, false, ReasonDoesNotPay, "0.024000", "0.025708"},
		{"no steps", func(in *Inputs) { in.StepsLeft = 0 }, false, ReasonNoStepsLeft, "0.000000", "0.025708"},
		{"estimated steps", func(in *Inputs) { in.StepsLeft, in.StepsSoFar = -1, 20 }, true, ReasonPays, "0.096000", "0.025708"},
		{"small state", func(in *Inputs) { in.StateTokens, in.VerbatimTokens = 1000, 100 }, false, ReasonBelowMinimum, "", ""},
		{"all verbatim", func(in *Inputs) { in.VerbatimTokens = 10_000 }, false, ReasonNothing, "0.000000", ""},
		{"unknown model", func(in *Inputs) { in.Model = "no-such-model" }, false, ReasonPriceUnknown, "unknown", "unknown"},
		{"unknown summarizer", func(in *Inputs) { in.SummaryModel = "no-such-model" }, false, ReasonPriceUnknown, "unknown", "unknown"},
	} {
		in := base
		c.mut(&in)
		d := Decide(cfg, prices, in)
		if d.Compact != c.compact || !strings.HasPrefix(d.Reason, c.reason) {
			t.Errorf("%s: compact %v reason %q, want %v %s", c.name, d.Compact, d.Reason, c.compact, c.reason)
		}
		if c.saving != "" && d.ExpectedSavingUSD != c.saving {
			t.Errorf("%s: saving %s, want %s", c.name, d.ExpectedSavingUSD, c.saving)
		}
		if c.cost != "" && d.CostUSD != c.cost {
			t.Errorf("%s: cost %s, want %s", c.name, d.CostUSD, c.cost)
		}
	}
	cfg.MinSaving = 30 * groundhog.Microdollar * 1000 // $0.03 net required: 0.048 − 0.025708 is less
	if d := Decide(cfg, prices, base); d.Compact {
		t.Errorf("min_saving ignored: %+v", d)
	}
}

func seed() groundhog.WorkingState {
	return groundhog.WorkingState{
		Objective:        "Fix the webhook retry bug",
		Constraints:      []string{"No duplicate charges", "Rollback required"},
		Findings:         []string{"a", "b", "c"},
		FailedApproaches: []string{"Blind retry duplicates the action"},
		Evidence:         []string{"src/webhooks.py", "incident-1042"},
		NextStep:         "Check downstream idempotency support",
		Ext:              json.RawMessage(`{"k":1}`),
	}
}

func TestApply(t *testing.T) {
	cur := seed()
	ok := `{"objective":"Fix the webhook retry bug","constraints":["No duplicate charges","Rollback required"],"findings":["a, b and c"],"failed_approaches":[],"evidence":["src/webhooks.py","incident-1042"],"next_step":"Ask"}`
	next, err := Apply(cur, []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Findings) != 1 || next.NextStep != "Ask" || string(next.Ext) != `{"k":1}` || next.Constraints[1] != "Rollback required" {
		t.Errorf("applied %+v", next)
	}
	// Objective and constraints may be left out: carried verbatim.
	next, err = Apply(cur, []byte(`{"findings":["x"],"evidence":["src/webhooks.py","incident-1042"]}`))
	if err != nil || next.Objective != cur.Objective || len(next.Constraints) != 2 || next.NextStep != cur.NextStep {
		t.Errorf("omitted fields: %+v %v", next, err)
	}
	for name, c := range map[string]struct {
		body, code string
	}{
		"constraint trailing space": {`{"constraints":["No duplicate charges","Rollback required "],"evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"constraint inner space":    {`{"constraints":["No  duplicate charges","Rollback required"],"evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"constraints reordered":     {`{"constraints":["Rollback required","No duplicate charges"],"evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"constraint dropped":        {`{"constraints":["No duplicate charges"],"evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"constraint added":          {`{"constraints":["No duplicate charges","Rollback required","x"],"evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"constraints emptied":       {`{"constraints":[],"evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"objective altered":         {`{"objective":"Fix the webhook retry bug.","evidence":["src/webhooks.py","incident-1042"]}`, groundhog.EMISMATCH},
		"evidence dropped":          {`{"evidence":["src/webhooks.py"]}`, groundhog.EMISMATCH},
		"unknown field":             {`{"evidence":["src/webhooks.py","incident-1042"],"summary":"x"}`, groundhog.EINVALID},
		"not an object":             {`["x"]`, groundhog.EINVALID},
		"wrong type":                {`{"findings":"x"}`, groundhog.EINVALID},
	} {
		if _, err := Apply(cur, []byte(c.body)); groundhog.ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want code %s", name, err, c.code)
		}
	}
}

func TestSchemaCarriesVerbatimFields(t *testing.T) {
	cur := seed()
	cur.Constraints[0] = "  <No> duplicate & charges "
	var s struct {
		Properties map[string]struct {
			Const json.RawMessage `json:"const"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema(cur), &s); err != nil {
		t.Fatal(err)
	}
	var cons []string
	_ = json.Unmarshal(s.Properties["constraints"].Const, &cons)
	if len(cons) != 2 || cons[0] != cur.Constraints[0] {
		t.Errorf("schema constraints %q", cons)
	}
	if !strings.Contains(string(SummaryRequest("sim-small", 100, cur, nil)), `"  <No> duplicate & charges "`) {
		t.Error("the summarizing request does not carry the constraint's bytes")
	}
}
