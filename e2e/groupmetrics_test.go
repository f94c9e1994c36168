package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// /metrics counts the writes of the database's group commit and the
// transactions they took, on SQLite and on PostgreSQL: an idempotent call
// with a new key writes its claim and its result through it.
func TestGroupCommitMetrics(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "g.db")
			if db == "postgres" {
				url = freshPostgres(t)
			}
			gw := start(t, nil, "serve", "--db", url)
			counter := func(name string) int64 {
				t.Helper()
				res, err := http.Get(gw.URL + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindSubmatch(b)
				if m == nil {
					t.Fatalf("/metrics has no %s", name)
				}
				n, _ := strconv.ParseInt(string(m[1]), 10, 64)
				return n
			}
			w0, c0 := counter("groundhog_store_group_writes_total"), counter("groundhog_store_group_commits_total")
			r := post(context.Background(), gw.URL+"/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"grouped"}]}`,
				map[string]string{"Idempotency-Key": "group-metrics"})
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			w, c := counter("groundhog_store_group_writes_total")-w0, counter("groundhog_store_group_commits_total")-c0
			if w < 2 || c < 1 || c > w {
				t.Errorf("an idempotent call: %d writes in %d transactions, want its claim and result (≥ 2) in 1 to %d", w, c, w)
			}
		})
	}
}
