package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBenchReplicas measures, in one run, three replicas on PostgreSQL +
// Redis against one replica on SQLite: the cache-hit and cache-miss paths
// (throughput at 32 concurrent clients, as a ratio), and the latency that
// cross-replica coalescing adds for followers. It prints figures and
// asserts nothing about time; it runs only with GROUNDHOG_BENCH_REPLICAS=1.
func TestBenchReplicas(t *testing.T) {
	if os.Getenv("GROUNDHOG_BENCH_REPLICAS") != "1" {
		t.Skip("set GROUNDHOG_BENCH_REPLICAS=1 to run the replica benchmark")
	}
	cl := startCluster(t, 3)
	one := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"), "--upstream", cl.sim.URL+"/v1")
	urls3 := []string{cl.replicas[0].URL, cl.replicas[1].URL, cl.replicas[2].URL}
	urls1 := []string{one.URL}

	const conns = 32
	for _, path := range []string{"hit", "miss"} {
		var rates [2]float64
		for i, urls := range [][]string{urls1, urls3} {
			n := 3000
			if path == "miss" {
				n = 600
			}
			rates[i] = load(t, urls, conns, n, path, fmt.Sprint(i))
		}
		t.Logf("%s path: 1 replica SQLite %.0f req/s, 3 replicas PG+Redis %.0f req/s, ratio %.2f", path, rates[0], rates[1], rates[1]/rates[0])
	}

	// Follower latency: rounds of 30 identical concurrent calls spread over
	// the three replicas; the follower's added latency is its latency minus
	// the round's fastest (the leader's).
	var extra []time.Duration
	ctx := context.Background()
	for round := range 15 {
		lat := make([]time.Duration, 30)
		var wg sync.WaitGroup
		for i := range lat {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				r := post(ctx, urls3[i%3]+"/v1/chat/completions", chat(fmt.Sprint("follower round ", round)), map[string]string{"Groundhog-Cache": "use"})
				if r.status != 200 {
					t.Errorf("status %d", r.status)
				}
				lat[i] = time.Since(t0)
			}()
		}
		wg.Wait()
		slices.Sort(lat)
		for _, l := range lat[1:] {
			extra = append(extra, l-lat[0])
		}
	}
	slices.Sort(extra)
	t.Logf("cross-replica follower added latency (200 ms upstream): p50 %s, p99 %s", extra[len(extra)/2], extra[len(extra)*99/100])
}

// load sends n requests from conns clients round-robin over urls and
// returns requests per second. "hit" repeats 50 cached prompts (warmed
// first); "miss" sends a new prompt every time (cache on: one write each).
func load(t *testing.T, urls []string, conns, n int, path, tag string) float64 {
	ctx := context.Background()
	use := map[string]string{"Groundhog-Cache": "use"}
	body := func(i int) string {
		if path == "hit" {
			return chat(fmt.Sprintf("bench hit %s %d", tag, i%50))
		}
		return chat(fmt.Sprintf("bench miss %s %d", tag, i))
	}
	if path == "hit" {
		for i := range 50 {
			for _, u := range urls {
				post(ctx, u+"/v1/chat/completions", body(i), use)
			}
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				r := post(ctx, urls[i%len(urls)]+"/v1/chat/completions", body(i), use)
				if r.status != 200 {
					t.Errorf("%s: status %d %v", path, r.status, r.err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}
