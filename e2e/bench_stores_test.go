package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog/storetest"
)

// `groundhog bench --db postgres://… --cache redis://…` runs its gateways
// on PostgreSQL and Redis, as replicas in production run: every scenario
// answers without an error (the cached miss must say miss, the hit from
// the shared tier hit), no gateway writes a SQLite file, and the schemas
// and keys it made are gone when it ends. The open loop (--rate) runs its
// gateway on them too.
func TestBenchOnPostgresAndRedis(t *testing.T) {
	pg := storetest.PostgresURL(t)
	rurl := storetest.RedisURL(t)
	dir := t.TempDir()
	cmd := exec.Command(binary, "bench", "--micro=false", "--duration", "400ms", "--rounds", "1", "--conns", "4",
		"--body", "small", "--only", "gateway-miss-cached/,gateway-hit/,gateway-hit-store/,gateway-idempotent-new-keys/",
		"--db", pg, "--cache", rurl)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	report := out.String()
	if !strings.Contains(report, "Gateways' stores: PostgreSQL (a schema per gateway), Redis cache tier") {
		t.Fatalf("the report does not name the stores:\n%s", report)
	}
	row := regexp.MustCompile(`(?m)^\| (gateway-[a-z-]+) \| 1KB [^|]*\| (\d+) \| (\d+) \|`)
	seen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(report, -1) {
		seen[m[1]] = true
		if n, _ := strconv.Atoi(m[2]); n == 0 {
			t.Errorf("%s served no request", m[1])
		}
		if m[3] != "0" {
			t.Errorf("%s: %s errors", m[1], m[3])
		}
	}
	for _, sc := range []string{"gateway-miss-cached", "gateway-hit", "gateway-hit-store", "gateway-idempotent-new-keys"} {
		if !seen[sc] {
			t.Errorf("no row for %s:\n%s", sc, report)
		}
	}
	// The open loop runs its gateway on them too.
	rate := exec.Command(binary, "bench", "--rate", "200", "--duration", "300ms", "--db", pg, "--cache", rurl)
	rate.Dir = dir
	rout, err := rate.CombinedOutput()
	if err != nil {
		t.Fatalf("bench --rate: %v\n%s", err, rout)
	}
	if !strings.Contains(string(rout), "Gateway's stores: PostgreSQL (a schema per gateway), Redis cache tier") {
		t.Fatalf("the open loop's report does not name the stores:\n%s", rout)
	}
	rateRow := regexp.MustCompile(`(?m)^\| (miss|hit|idempotent-miss) \|.*\| (\d+) \| [^|]+ \| [^|]+ \|$`)
	if rows := rateRow.FindAllStringSubmatch(string(rout), -1); len(rows) != 3 {
		t.Errorf("the open loop printed %d gateway rows of miss, hit and idempotent-miss, want 3:\n%s", len(rows), rout)
	} else {
		for _, m := range rows {
			if m[2] != "0" {
				t.Errorf("open loop %s: %s errors", m[1], m[2])
			}
		}
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if len(files) > 0 {
		t.Errorf("a gateway wrote SQLite files %v", files)
	}

	// The runs' schemas and keys carry the bench process's id.
	for _, run := range []string{strconv.Itoa(cmd.Process.Pid) + "_", strconv.Itoa(rate.Process.Pid) + "_"} {
		leftovers(t, pg, rurl, run)
	}
}

// leftovers fails t if a bench run (its schemas and keys named with run)
// left any in PostgreSQL or Redis.
func leftovers(t *testing.T, pg, rurl, run string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schemas int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, $1)`, "groundhog_bench_"+run).Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 {
		t.Errorf("%d schemas of the run left in PostgreSQL", schemas)
	}
	opt, err := goredis.ParseURL(rurl)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, "groundhog-bench-"+run+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("%d keys of the run left in Redis: %v", len(keys), keys[:min(len(keys), 5)])
	}
}
