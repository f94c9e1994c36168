package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundhog-ai/groundhog/storetest"
)

// TestBenchIdempotent measures idempotent calls with new keys on one
// replica on PostgreSQL against one on SQLite (same run, a sim without
// latency), and the PostgreSQL transactions per call, read from
// pg_stat_database of a database of its own. Figures only; it runs with
// GROUNDHOG_BENCH_REPLICAS=1.
func TestBenchIdempotent(t *testing.T) {
	if os.Getenv("GROUNDHOG_BENCH_REPLICAS") != "1" {
		t.Skip("set GROUNDHOG_BENCH_REPLICAS=1 to run the idempotency benchmark")
	}
	base := storetest.PostgresURL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	dbname := fmt.Sprintf("gh_bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbname); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP DATABASE "+dbname+" WITH (FORCE)")
	u, _ := url.Parse(base)
	u.Path = "/" + dbname
	pg := u.String()

	sim := start(t, nil, "sim")
	sq := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"), "--upstream", sim.URL+"/v1")
	pgr := start(t, nil, "serve", "--db", pg, "--upstream", sim.URL+"/v1", "--journal-dir", filepath.Join(t.TempDir(), "j"))

	const n, conns = 1000, 16
	run := func(p *proc, tag string) float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > n {
						return
					}
					r := post(ctx, p.URL+"/v1/chat/completions", chat(fmt.Sprint("idem ", tag, i)), map[string]string{"Idempotency-Key": fmt.Sprint(tag, "-", i)})
					if r.status != 200 {
						t.Errorf("status %d %v", r.status, r.err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(t0).Seconds()
	}
	xacts := func() int64 {
		var v int64
		if err := admin.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", dbname).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	rs := run(sq, "s")
	before := xacts()
	rp := run(pgr, "p")
	pgr.stop() // ledger flushed; exiting backends flush their statistics
	after := xacts()
	t.Logf("idempotent calls with new keys: SQLite %.0f req/s, PostgreSQL %.0f req/s, ratio %.2f; PostgreSQL transactions per call %.2f (ledger batches included)",
		rs, rp, rp/rs, float64(after-before)/n)
}
