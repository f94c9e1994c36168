package state_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sqlite"
	"github.com/groundhog-ai/groundhog/state"
	"github.com/groundhog-ai/groundhog/storetest"
)

var ctx = context.Background()

// testAuth takes the tenant from "Authorization: Bearer <tenant>".
func testAuth(r *http.Request) (string, error) {
	tenant, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tenant == "" {
		return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "missing gateway key")
	}
	return tenant, nil
}

type fixture struct {
	db  *sqlite.DB
	srv *httptest.Server
}

func newFixture(t testing.TB, limits state.Limits) *fixture {
	t.Helper()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mux := http.NewServeMux()
	state.New(db, limits, nil).Register(mux, testAuth)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{db: db, srv: srv}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request; hdr is "Name: value" pairs.
func (f *fixture) do(t testing.TB, tenant, method, path, body string, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+tenant)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{res.StatusCode, res.Header, b}
}

const path = "/groundhog/v1/sessions/sess-1/state"

func (r resp) want(t testing.TB, status int, what string) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, r.status, status, r.body)
	}
	return r
}

// errCode checks a JSON error body and returns its code.
func (r resp) errCode(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct {
			Message, Type, Code string
		}
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not a JSON error (%v): %s", err, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return e.Error.Code
}

func TestSeedRoundTripByteExact(t *testing.T) {
	f := newFixture(t, state.Limits{})
	r := f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "create")
	if string(r.body) != storetest.SeedState+"\n" || r.header.Get("ETag") != `"1"` {
		t.Fatalf("PUT answered ETag %s body\n%s\nwant the seed", r.header.Get("ETag"), r.body)
	}
	r = f.do(t, "a", "GET", path, "").want(t, 200, "get")
	if string(r.body) != storetest.SeedState+"\n" || r.header.Get("ETag") != `"1"` || r.header.Get("Groundhog-Author") != "a" {
		t.Fatalf("GET: ETag %s author %q body\n%s\nwant the seed byte for byte", r.header.Get("ETag"), r.header.Get("Groundhog-Author"), r.body)
	}
	f.do(t, "a", "GET", path, "", `If-None-Match: "1"`).want(t, 304, "conditional get")
	f.do(t, "a", "HEAD", path, "").want(t, 200, "head")
}

func TestPreconditions(t *testing.T) {
	f := newFixture(t, state.Limits{})
	if c := f.do(t, "a", "PUT", path, storetest.SeedState).want(t, 428, "PUT without precondition").errCode(t); c != groundhog.EPRECONDREQUIRED {
		t.Fatalf("code %q", c)
	}
	f.do(t, "a", "GET", path, "").want(t, 404, "nothing written by the 428")
	f.do(t, "a", "PUT", path, storetest.SeedState, `If-Match: "1"`).want(t, 412, "If-Match on a new session")
	f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "create")

	r := f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 412, "create twice")
	wantCurrent(t, r, 1)
	r = f.do(t, "a", "PUT", path, storetest.SeedState, `If-Match: "2"`).want(t, 412, "stale If-Match")
	wantCurrent(t, r, 1)
	if r.header.Get("ETag") != `"1"` {
		t.Fatalf("412 ETag %q, want \"1\"", r.header.Get("ETag"))
	}
	f.do(t, "a", "PUT", path, storetest.SeedState, `If-Match: "1"`, "If-None-Match: *").want(t, 400, "both preconditions")
	// Only a malformed If-Match is a 400; a well-formed entity tag that is
	// not the current version (or no version at all, or weak: If-Match
	// compares strongly) is a 412 carrying current_version (RFC 9110 §13.1.1).
	for _, bad := range []string{`1`, `"1`, `1"`, `"a b"`, `"1",`, `W/1`} {
		f.do(t, "a", "PUT", path, storetest.SeedState, "If-Match: "+bad).want(t, 400, "If-Match "+bad)
	}
	for _, other := range []string{`"no-such-version"`, `"x"`, `"0"`, `"01"`, `W/"1"`, `"2", "3"`} {
		wantCurrent(t, f.do(t, "a", "PUT", path, storetest.SeedState, "If-Match: "+other).want(t, 412, "If-Match "+other), 1)
		wantCurrent(t, f.do(t, "a", "PATCH", path, `{"next_step":"x"}`, "If-Match: "+other).want(t, 412, "PATCH If-Match "+other), 1)
	}
	r = f.do(t, "a", "PUT", path, storetest.SeedState, `If-Match: "1"`).want(t, 200, "update")
	if r.header.Get("ETag") != `"2"` {
		t.Fatalf("update ETag %q, want \"2\"", r.header.Get("ETag"))
	}
	f.do(t, "a", "PATCH", path, `{"next_step":"x"}`).want(t, 428, "PATCH without precondition")
	f.do(t, "a", "DELETE", path, "").want(t, 428, "DELETE without precondition")
	f.do(t, "a", "PATCH", path, `{"next_step":"x"}`, "If-Match: *").want(t, 200, "If-Match: * on a live state")
	wantVersions(t, f, "a", 3)
}

func wantCurrent(t *testing.T, r resp, v int64) {
	t.Helper()
	var b struct {
		CurrentVersion int64 `json:"current_version"`
	}
	if code := r.errCode(t); code != groundhog.EPRECONDITION {
		t.Fatalf("412 code %q", code)
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.CurrentVersion != v {
		t.Fatalf("412 body %s: current_version %d, want %d", r.body, b.CurrentVersion, v)
	}
}

type versionList struct {
	Versions []struct {
		Version   int64     `json:"version"`
		CreatedAt time.Time `json:"created_at"`
		Author    string    `json:"author"`
		Deleted   bool      `json:"deleted"`
	} `json:"versions"`
}

func wantVersions(t *testing.T, f *fixture, tenant string, n int) versionList {
	t.Helper()
	var vl versionList
	r := f.do(t, tenant, "GET", path+"/versions", "").want(t, 200, "versions")
	if err := json.Unmarshal(r.body, &vl); err != nil {
		t.Fatal(err)
	}
	if len(vl.Versions) != n {
		t.Fatalf("%d versions, want %d: %s", len(vl.Versions), n, r.body)
	}
	return vl
}

// TestConcurrentPutsOneWins races 50 PUTs with the same If-Match over HTTP:
// exactly one 200, 49 × 412. Then every loser retries (GET, PUT with the
// new ETag) until it lands: no update is lost, and every version is
// retrievable with its writer's content.
func TestConcurrentPutsOneWins(t *testing.T) {
	f := newFixture(t, state.Limits{})
	f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "create")
	const n = 50
	body := func(i int) string {
		return strings.Replace(storetest.SeedState, "Check downstream idempotency support", fmt.Sprintf("writer %d", i), 1)
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = f.do(t, "a", "PUT", path, body(i), `If-Match: "1"`).status
		}()
	}
	close(start)
	wg.Wait()
	won, lost := 0, 0
	var winner int
	for i, s := range statuses {
		switch s {
		case 200:
			won++
			winner = i
		case 412:
			lost++
		default:
			t.Fatalf("writer %d: status %d", i, s)
		}
	}
	if won != 1 || lost != n-1 {
		t.Fatalf("%d won, %d got 412; want 1 and %d", won, lost, n-1)
	}
	r := f.do(t, "a", "GET", "/groundhog/v1/sessions/sess-1/state/versions/2", "").want(t, 200, "version 2")
	if string(r.body) != body(winner)+"\n" {
		t.Fatalf("version 2 is %s, want writer %d's", r.body, winner)
	}

	// The losers retry until they land.
	for i := range n {
		if i == winner {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cur := f.do(t, "a", "GET", path, "")
				if f.do(t, "a", "PUT", path, body(i), "If-Match: "+cur.header.Get("ETag")).status == 200 {
					return
				}
			}
		}()
	}
	wg.Wait()
	vl := wantVersions(t, f, "a", n+1)
	seen := map[string]int{}
	for i, v := range vl.Versions {
		if v.Version != int64(n+1-i) {
			t.Fatalf("versions[%d] = %d: not newest first", i, v.Version)
		}
		r := f.do(t, "a", "GET", fmt.Sprintf("/groundhog/v1/sessions/sess-1/state/versions/%d", v.Version), "").want(t, 200, "version")
		var s groundhog.WorkingState
		json.Unmarshal(r.body, &s)
		seen[s.NextStep]++
	}
	for i := range n {
		if seen[fmt.Sprintf("writer %d", i)] != 1 {
			t.Fatalf("writer %d's update is in %d versions, want exactly 1", i, seen[fmt.Sprintf("writer %d", i)])
		}
	}
}

func TestMergePatch(t *testing.T) {
	f := newFixture(t, state.Limits{})
	f.do(t, "a", "PUT", path, `{"objective":"o","constraints":["Keep  spacing "],"findings":["f1","f2"],"ext":{"a":{"b":1,"c":2},"keep":true}}`, "If-None-Match: *").want(t, 201, "create")
	r := f.do(t, "a", "PATCH", path, `{"findings":["f3"],"next_step":"n","ext":{"a":{"b":null,"d":[1,2]},"new":"x"}}`,
		`If-Match: "1"`, "Content-Type: application/merge-patch+json").want(t, 200, "patch")
	want := `{"objective":"o","constraints":["Keep  spacing "],"findings":["f3"],"failed_approaches":[],"evidence":[],"next_step":"n","ext":{"a":{"c":2,"d":[1,2]},"keep":true,"new":"x"}}` + "\n"
	if string(r.body) != want {
		t.Fatalf("patched:\n got %s\nwant %s", r.body, want)
	}
	// Constraints change only when named; null resets a field.
	r = f.do(t, "a", "PATCH", path, `{"constraints":["new rule"],"objective":null,"ext":null}`, `If-Match: "2"`).want(t, 200, "patch constraints")
	want = `{"objective":"","constraints":["new rule"],"findings":["f3"],"failed_approaches":[],"evidence":[],"next_step":"n"}` + "\n"
	if string(r.body) != want {
		t.Fatalf("patched:\n got %s\nwant %s", r.body, want)
	}
}

func TestDeleteKeepsVersions(t *testing.T) {
	f := newFixture(t, state.Limits{})
	f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *", "Groundhog-Author: planner-1").want(t, 201, "create")
	f.do(t, "a", "PATCH", path, `{"next_step":"two"}`, `If-Match: "1"`).want(t, 200, "patch")
	r := f.do(t, "a", "DELETE", path, "", `If-Match: "2"`).want(t, 204, "delete")
	if r.header.Get("ETag") != `"3"` {
		t.Fatalf("delete ETag %q", r.header.Get("ETag"))
	}
	f.do(t, "a", "GET", path, "").want(t, 404, "get after delete")
	f.do(t, "a", "PATCH", path, `{"next_step":"x"}`, `If-Match: "3"`).want(t, 412, "update a deleted state")
	vl := wantVersions(t, f, "a", 3)
	if !vl.Versions[0].Deleted || vl.Versions[2].Author != "planner-1" || vl.Versions[1].Author != "a" {
		t.Fatalf("versions %+v", vl.Versions)
	}
	r = f.do(t, "a", "GET", "/groundhog/v1/sessions/sess-1/state/versions/1", "").want(t, 200, "version 1 after delete")
	if string(r.body) != storetest.SeedState+"\n" {
		t.Fatalf("version 1 = %s", r.body)
	}
	f.do(t, "a", "GET", "/groundhog/v1/sessions/sess-1/state/versions/3", "").want(t, 404, "the tombstone version")
	r = f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "re-create")
	if r.header.Get("ETag") != `"4"` {
		t.Fatalf("re-create ETag %q, want \"4\"", r.header.Get("ETag"))
	}
}

func TestTenantIsolation(t *testing.T) {
	f := newFixture(t, state.Limits{})
	f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "create")
	f.do(t, "b", "GET", path, "").want(t, 404, "other tenant get")
	f.do(t, "b", "GET", path+"/versions", "").want(t, 404, "other tenant versions")
	f.do(t, "b", "GET", path+"/versions/1", "").want(t, 404, "other tenant version 1")
	f.do(t, "b", "PUT", path, storetest.SeedState, `If-Match: "1"`).want(t, 412, "other tenant update")
	f.do(t, "b", "DELETE", path, "", `If-Match: "1"`).want(t, 412, "other tenant delete")
	f.do(t, "", "GET", path, "").want(t, 401, "no key")
	r := f.do(t, "a", "GET", path, "").want(t, 200, "owner")
	if string(r.body) != storetest.SeedState+"\n" || r.header.Get("ETag") != `"1"` {
		t.Fatalf("tenant b changed a's state: %s", r.body)
	}
}

// TestBadInput: every bad request gets the right status and a JSON error,
// and writes nothing: the session stays at version 1 with the seed.
func TestBadInput(t *testing.T) {
	f := newFixture(t, state.Limits{MaxBytes: 2048})
	f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "create")
	big := `{"constraints":[],"objective":"` + strings.Repeat("x", 2048) + `"}`
	grow := `{"findings":["` + strings.Repeat("y", 1900) + `"]}`
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		inMessage                string
	}{
		{"malformed JSON", "PUT", path, `{"objective":`, nil, 400, "not valid JSON"},
		{"not an object", "PUT", path, `["objective"]`, nil, 400, "JSON object"},
		{"empty body", "PUT", path, ``, nil, 400, "empty"},
		{"objective not a string", "PUT", path, `{"objective":5,"constraints":[]}`, nil, 400, `"objective"`},
		{"constraints not a list", "PUT", path, `{"constraints":"No duplicate charges"}`, nil, 400, `"constraints"`},
		{"findings item not a string", "PUT", path, `{"constraints":[],"findings":["a",1]}`, nil, 400, `"findings"[1]`},
		{"null in PUT", "PUT", path, `{"constraints":[],"next_step":null}`, nil, 400, `"next_step"`},
		{"ext not an object", "PUT", path, `{"constraints":[],"ext":[1]}`, nil, 400, `"ext"`},
		{"unknown field", "PUT", path, `{"constraints":[],"notes":"x"}`, nil, 400, `"notes"`},
		{"duplicate field", "PUT", path, `{"constraints":[],"constraints":["x"]}`, nil, 400, `"constraints"`},
		{"PUT without constraints", "PUT", path, `{"objective":"o"}`, nil, 400, `"constraints"`},
		{"bad evidence ref", "PUT", path, `{"constraints":[],"evidence":["ev_123"]}`, nil, 400, "evidence[0]"},
		{"invalid UTF-8", "PUT", path, "{\"constraints\":[\"\xff\"]}", nil, 400, "UTF-8"},
		{"oversized PUT", "PUT", path, big, nil, 413, "2048"},
		{"wrong content type", "PUT", path, storetest.SeedState, []string{"Content-Type: text/plain"}, 415, "Content-Type"},
		{"patch wrong type", "PATCH", path, `{"findings":"x"}`, nil, 400, `"findings"`},
		{"patch unknown field", "PATCH", path, `{"summary":"x"}`, nil, 400, `"summary"`},
		{"patch malformed", "PATCH", path, `{"next_step":}`, nil, 400, "JSON"},
		{"patch grows past the limit", "PATCH", path, grow, nil, 413, "limit"},
		{"bad author", "PUT", path, storetest.SeedState, []string{"Groundhog-Author: has space"}, 400, "Groundhog-Author"},
		{"session id bad char", "PUT", "/groundhog/v1/sessions/a!b/state", storetest.SeedState, nil, 400, "session id"},
		{"session id too long", "PUT", "/groundhog/v1/sessions/" + strings.Repeat("s", 129) + "/state", storetest.SeedState, nil, 400, "session id"},
		{"version not a number", "GET", path + "/versions/abc", "", nil, 400, "version"},
		{"version zero", "GET", path + "/versions/0", "", nil, 400, "version"},
		{"unknown version", "GET", path + "/versions/9", "", nil, 404, ""},
		{"method", "POST", path, storetest.SeedState, nil, 405, "POST"},
		{"method on versions", "DELETE", path + "/versions", "", nil, 405, "DELETE"},
		{"versions limit zero", "GET", path + "/versions?limit=0", "", nil, 400, "limit"},
		{"versions limit too big", "GET", path + "/versions?limit=1001", "", nil, 400, "limit"},
		{"versions limit not a number", "GET", path + "/versions?limit=ten", "", nil, 400, "limit"},
		{"versions limit twice", "GET", path + "/versions?limit=1&limit=2", "", nil, 400, "limit"},
		{"versions before zero", "GET", path + "/versions?before=0", "", nil, 400, "before"},
		{"versions unknown parameter", "GET", path + "/versions?page=2", "", nil, 400, "page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := append([]string{`If-Match: "1"`}, tc.hdr...)
			r := f.do(t, "a", tc.method, tc.path, tc.body, hdr...).want(t, tc.status, tc.name)
			r.errCode(t)
			if !strings.Contains(string(r.body), strings.ReplaceAll(tc.inMessage, `"`, `\"`)) {
				t.Fatalf("error %s does not mention %s", r.body, tc.inMessage)
			}
			cur := f.do(t, "a", "GET", path, "").want(t, 200, "after")
			if string(cur.body) != storetest.SeedState+"\n" || cur.header.Get("ETag") != `"1"` {
				t.Fatalf("bad request changed the state: ETag %s %s", cur.header.Get("ETag"), cur.body)
			}
			vs, err := f.db.ListStateVersions(ctx, "a", "sess-1")
			if err != nil || len(vs) != 1 {
				t.Fatalf("%d versions in the store after a bad request (%v)", len(vs), err)
			}
		})
	}
}

func TestParseRenderCanonical(t *testing.T) {
	s, err := state.Parse([]byte(" {\"next_step\":\"n\", \"constraints\" : [ \"a <b> & c\" ],\n\"ext\": { \"z\" : 1 , \"a\":[ ] } } "), true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"objective":"","constraints":["a <b> & c"],"findings":[],"failed_approaches":[],"evidence":[],"next_step":"n","ext":{"z":1,"a":[]}}`
	if got := state.Render(s); !bytes.Equal(got, []byte(want)) {
		t.Fatalf("Render:\n got %s\nwant %s", got, want)
	}
}

// TestVersionPages: 250 versions listed 100 at a time by following
// next_before: every version once, newest first, no next_before on the last
// page; a page past the oldest version is empty, an unknown session 404.
func TestVersionPages(t *testing.T) {
	f := newFixture(t, state.Limits{})
	f.do(t, "a", "PUT", path, storetest.SeedState, "If-None-Match: *").want(t, 201, "create")
	for v := 1; v < 250; v++ {
		f.do(t, "a", "PATCH", path, fmt.Sprintf(`{"next_step":"step %d"}`, v), fmt.Sprintf(`If-Match: "%d"`, v)).want(t, 200, "patch")
	}
	var seen []int64
	url := path + "/versions"
	pages := 0
	for {
		var page struct {
			versionList
			NextBefore int64 `json:"next_before"`
		}
		r := f.do(t, "a", "GET", url, "").want(t, 200, "page")
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Versions) > 100 {
			t.Fatalf("page of %d versions, default limit 100", len(page.Versions))
		}
		for _, v := range page.Versions {
			seen = append(seen, v.Version)
		}
		if page.NextBefore == 0 {
			break
		}
		if page.NextBefore != seen[len(seen)-1] {
			t.Fatalf("next_before %d after version %d", page.NextBefore, seen[len(seen)-1])
		}
		url = fmt.Sprintf("%s/versions?before=%d", path, page.NextBefore)
	}
	if pages != 3 || len(seen) != 250 {
		t.Fatalf("%d pages, %d versions; want 3 pages of 250 versions", pages, len(seen))
	}
	for i, v := range seen {
		if v != int64(250-i) {
			t.Fatalf("versions[%d] = %d, want %d (newest first, each once)", i, v, 250-i)
		}
	}
	r := f.do(t, "a", "GET", path+"/versions?limit=2&before=3", "").want(t, 200, "small page")
	if !strings.Contains(string(r.body), `"version":2`) || !strings.Contains(string(r.body), `"version":1`) || strings.Contains(string(r.body), "next_before") {
		t.Fatalf("limit=2&before=3: %s", r.body)
	}
	r = f.do(t, "a", "GET", path+"/versions?before=1", "").want(t, 200, "past the oldest")
	if string(r.body) != `{"versions":[]}`+"\n" {
		t.Fatalf("past the oldest version: %s", r.body)
	}
	f.do(t, "a", "GET", "/groundhog/v1/sessions/nobody/state/versions?before=5", "").want(t, 404, "unknown session, paged")
	f.do(t, "b", "GET", path+"/versions?before=5", "").want(t, 404, "other tenant, paged")
}
