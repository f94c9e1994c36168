package dashboard

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
)

var (
	toolRowRe  = regexp.MustCompile(`(?s)<tr data-tool="([^"]*)">(.*?)</tr>`)
	toolTotRe  = regexp.MustCompile(`(?s)<tr data-tool-total="">(.*?)</tr>`)
	toolCellRe = regexp.MustCompile(`<td data-tool-field="([^"]+)" data-tool-value="([^"]*)">([^<]*)</td>`)
)

// checkToolsPage compares every figure of the tool-call table in doc with
// the report JSON's "tools" and "tool_total" that srv answers for the day.
func checkToolsPage(t *testing.T, srv string, doc string) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv+ReportPath+"?day=2025-03-31", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rep struct {
		Tools     []map[string]json.RawMessage `json:"tools"`
		ToolTotal map[string]json.RawMessage   `json:"tool_total"`
	}
	if err := json.Unmarshal(body, &rep); err != nil || resp.StatusCode != 200 {
		t.Fatalf("report: %d %v %s", resp.StatusCode, err, body)
	}
	cells := func(row string) map[string]string {
		m := map[string]string{}
		for _, c := range toolCellRe.FindAllStringSubmatch(row, -1) {
			v, text := html.UnescapeString(c[2]), html.UnescapeString(c[3])
			if v != text {
				t.Errorf("tool %s shows %q, its value is %q", c[1], text, v)
			}
			m[c[1]] = v
		}
		return m
	}
	shown := map[string]map[string]string{}
	for _, m := range toolRowRe.FindAllStringSubmatch(doc, -1) {
		shown[html.UnescapeString(m[1])] = cells(m[2])
	}
	if len(shown) != len(rep.Tools) || len(rep.Tools) != 2 {
		t.Fatalf("page shows tools %v, report has %d (want mcp:files/read and mcp:tickets/create)", shown, len(rep.Tools))
	}
	compared := 0
	for _, jt := range rep.Tools {
		var op string
		_ = json.Unmarshal(jt["operation"], &op)
		row := shown[op]
		if row == nil {
			t.Errorf("tool %s of the report is not on the page", op)
			continue
		}
		for _, c := range toolColumns {
			if got, want := row[c.Field], string(jt[c.Field]); got != want {
				t.Errorf("%s %s = %q on the page, %q in the report", op, c.Field, got, want)
			}
			compared++
		}
	}
	m := toolTotRe.FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("no tool total row")
	}
	total := cells(m[1])
	for _, c := range toolColumns {
		if got, want := total[c.Field], string(rep.ToolTotal[c.Field]); got != want {
			t.Errorf("tool total %s = %q on the page, %q in the report", c.Field, got, want)
		}
		compared++
	}
	// The sample: files/read ran once and hit the cache once; tickets/create
	// ran 3 times (one a suspected duplicate) and was replayed once.
	if shown["mcp:tickets/create"]["executed"] != "3" || shown["mcp:tickets/create"]["suspected_duplicates"] != "1" ||
		shown["mcp:tickets/create"]["replayed"] != "1" || shown["mcp:files/read"]["cache_hits"] != "1" || total["executed"] != "4" {
		t.Errorf("tool figures %v, total %v", shown, total)
	}
	if compared != 3*len(toolColumns) {
		t.Errorf("%d figures compared", compared)
	}
}

// The tool-call table of the served page equals the report JSON's tools.
func TestToolsTable(t *testing.T) {
	srv := runsSample(t)
	req, _ := http.NewRequest("GET", srv.URL+"/groundhog/?day=2025-03-31", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("page: %d %s", resp.StatusCode, b)
	}
	checkToolsPage(t, srv.URL, string(b))
}

// The same table as Chromium builds it from the page.
func TestToolsTableChromium(t *testing.T) {
	bin := findChromium(t)
	srv := runsSample(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("me", keyAcme)
	dom := string(runChromium(t, bin, u.String()+"/groundhog/?day=2025-03-31", "--dump-dom"))
	checkToolsPage(t, srv.URL, dom)
}
