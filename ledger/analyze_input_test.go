package ledger

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// TestAnalyzeCostAsString: cost_usd as a decimal string is the same exact
// amount as the JSON number, with no float rounding.
func TestAnalyzeCostAsString(t *testing.T) {
	for _, c := range []struct{ cost, want string }{
		{`"0.1"`, "0.100000"},
		{`0.1`, "0.100000"},
		{`" 0.004 "`, "0.004000"},
		{`"1e-3"`, "0.001000"},
		{`"123456.789012"`, "123456.789012"},
	} {
		in := logLine("2025-03-14T10:00:00Z", "op", "a", `,"cost_usd":`+c.cost)
		reps, _ := analyze(t, in, AnalyzeOptions{})
		if got := reps[0].Total.Spend.String(); got != c.want {
			t.Errorf("cost_usd %s: spend %s, want %s", c.cost, got, c.want)
		}
	}
	// One picodollar survives a string: it is not a float.
	in := logLine("2025-03-14T10:00:00Z", "op", "a", `,"cost_usd":"0.000000000001"`)
	reps, _ := analyze(t, in, AnalyzeOptions{})
	if m, ok := reps[0].Total.Spend.Money(); !ok || m != 1 {
		t.Fatalf("spend = %v pico, want 1", m)
	}
}

func TestParseShape(t *testing.T) {
	for in, want := range map[string]groundhog.Shape{
		"chat": groundhog.ShapeChat, "openai.chat": groundhog.ShapeChat, "openai.chat.completions": groundhog.ShapeChat,
		"chat.completions": groundhog.ShapeChat, " OpenAI.Chat ": groundhog.ShapeChat, "/v1/chat/completions": groundhog.ShapeChat,
		"responses": groundhog.ShapeResponses, "openai.responses": groundhog.ShapeResponses, "/v1/responses": groundhog.ShapeResponses,
		"embeddings": groundhog.ShapeEmbeddings, "openai.embeddings": groundhog.ShapeEmbeddings, "/v1/embeddings": groundhog.ShapeEmbeddings,
		"messages": groundhog.ShapeMessages, "anthropic.messages": groundhog.ShapeMessages, "/v1/messages": groundhog.ShapeMessages,
		"https://api.anthropic.com/v1/messages?beta=true": groundhog.ShapeMessages,
	} {
		if got, ok := ParseShape(in); !ok || got != want {
			t.Errorf("ParseShape(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "completions", "anthropic.chat", "openai", "/v1/models", "message"} {
		if got, ok := ParseShape(bad); ok {
			t.Errorf("ParseShape(%q) = %q, want rejected", bad, got)
		}
	}
}

// TestAnalyzeShapeAliases: a line naming its shape with a provider alias is
// fingerprinted as that shape — the same hash as the plain name (a repeat),
// a different one from another shape (distinct).
func TestAnalyzeShapeAliases(t *testing.T) {
	req := `"request":{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`
	line := func(sec int, shape string) string {
		return `{"timestamp":"2025-03-14T10:00:0` + string(rune('0'+sec)) + `Z",` + req + `,"shape":"` + shape + `"}`
	}
	for _, c := range []struct {
		a, b     string
		distinct int64
	}{
		{"chat", "openai.chat", 1},
		{"openai.chat.completions", "chat", 1},
		{"messages", "anthropic.messages", 1},
		{"/v1/messages", "anthropic.messages", 1},
		{"openai.responses", "responses", 1},
		{"chat", "anthropic.messages", 2},
	} {
		reps, _ := analyze(t, line(0, c.a)+"\n"+line(1, c.b)+"\n", AnalyzeOptions{})
		if got := reps[0].Total.Distinct; got != c.distinct {
			t.Errorf("%s then %s: distinct = %d, want %d", c.a, c.b, got, c.distinct)
		}
	}
}

// TestAnalyzeDefaultOperation: a line without an operation counts under
// "default", as the gateway names such a call, with the lines that say
// "default".
func TestAnalyzeDefaultOperation(t *testing.T) {
	in := `{"timestamp":"2025-03-14T10:00:00Z","request":{"model":"m","messages":[]}}` + "\n" +
		`{"timestamp":"2025-03-14T10:00:01Z","operation":null,"request":{"model":"m","messages":[]}}` + "\n" +
		logLine("2025-03-14T10:00:02Z", "default", "x", "") + "\n"
	reps, _ := analyze(t, in, AnalyzeOptions{})
	ops := reps[0].Operations
	if len(ops) != 1 || ops[0].Operation != DefaultOperation || ops[0].Calls != 3 {
		t.Fatalf("rows = %+v, want one %q row of 3 calls", ops, DefaultOperation)
	}
	var buf bytes.Buffer
	if err := reps[0].WriteTable(&buf); err != nil || strings.Contains(buf.String(), "(none)") {
		t.Fatalf("table: %v\n%s", err, buf.String())
	}
}

func tenantLines() string {
	return strings.Join([]string{
		logLine("2025-03-14T10:00:00Z", "sum", "a", `,"tenant":"acme","cost_usd":1`),
		logLine("2025-03-14T10:00:01Z", "sum", "a", `,"tenant":"acme","cost_usd":1`), // acme repeat
		logLine("2025-03-14T10:00:02Z", "sum", "a", `,"tenant":"globex","cost_usd":2`),
		logLine("2025-03-14T10:00:03Z", "tag", "b", `,"tenant":"globex","cost_usd":2`),
		logLine("2025-03-14T10:00:04Z", "tag", "b", `,"cost_usd":4`), // local
	}, "\n") + "\n"
}

func TestAnalyzeTenantFilter(t *testing.T) {
	for _, c := range []struct {
		tenant         string
		calls, repeats int64
		spend          string
	}{
		{"acme", 2, 1, "2.000000"},
		{"globex", 2, 0, "4.000000"},
		{groundhog.LocalTenant, 1, 0, "4.000000"},
		{"", 5, 1, "10.000000"},
	} {
		reps, st := analyze(t, tenantLines(), AnalyzeOptions{Tenant: c.tenant})
		tot := reps[0].Total
		if st.Calls != c.calls || st.Lines != 5 || tot.Calls != c.calls || tot.Repeats != c.repeats || tot.Spend.String() != c.spend {
			t.Errorf("--tenant %q: stats %+v, total calls %d repeats %d spend %s; want %d %d %s",
				c.tenant, st, tot.Calls, tot.Repeats, tot.Spend, c.calls, c.repeats, c.spend)
		}
	}
	if reps, st := analyze(t, tenantLines(), AnalyzeOptions{Tenant: "nobody"}); len(reps) != 0 || st.Calls != 0 {
		t.Fatalf("unknown tenant: %d reports, %d calls", len(reps), st.Calls)
	}
}

func TestAnalyzeGroupByTenant(t *testing.T) {
	reps, _ := analyze(t, tenantLines(), AnalyzeOptions{GroupBy: GroupByTenant})
	r := reps[0]
	got := map[string][2]int64{}
	for _, row := range r.Operations {
		got[row.Operation] = [2]int64{row.Calls, row.Repeats}
	}
	want := map[string][2]int64{"acme": {2, 1}, "globex": {2, 0}, groundhog.LocalTenant: {1, 0}}
	if len(got) != len(want) || got["acme"] != want["acme"] || got["globex"] != want["globex"] || got["local"] != want["local"] {
		t.Fatalf("rows by tenant = %v, want %v", got, want)
	}
	// The same "b" request in globex and local is not a repeat: tenants
	// never share hashes, whatever the grouping.
	if r.Total.Repeats != 1 {
		t.Fatalf("total repeats = %d, want 1", r.Total.Repeats)
	}

	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if first := strings.Fields(strings.Split(table.String(), "\n")[2]); first[0] != "tenant" {
		t.Fatalf("table header = %v, want tenant first", first)
	}
	var js bytes.Buffer
	if err := WriteJSONReports(&js, reps); err != nil {
		t.Fatal(err)
	}
	var parsed []map[string]json.RawMessage
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if _, ok := parsed[0]["operations"]; ok {
		t.Fatalf("JSON grouped by tenant has operations: %s", js.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(parsed[0]["tenants"], &rows); err != nil || len(rows) != 3 || rows[0]["tenant"] == nil || rows[0]["operation"] != nil {
		t.Fatalf("tenants = %v (%v)", rows, err)
	}
	var csvOut bytes.Buffer
	if err := WriteCSVReports(&csvOut, reps); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csvOut.String(), "day,tenant,calls,") || !strings.Contains(csvOut.String(), ",acme,2,") {
		t.Fatalf("csv:\n%s", csvOut.String())
	}
	// The default grouping still writes "operations".
	reps, _ = analyze(t, tenantLines(), AnalyzeOptions{})
	js.Reset()
	if err := reps[0].WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"operations": [`) || strings.Contains(js.String(), `"tenants"`) {
		t.Fatalf("default JSON: %v\n%s", err, js.String())
	}
}
