package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkDistinctStreamsHeld: what N streams in flight at once cost one
// `groundhog serve` — N different streaming calls (GROUNDHOG_BENCH_STREAMS,
// default 2,000), each its own HTTP/1.1 connection and its own flight to the
// provider, all held between two events of their streams (the simulated
// provider sends the first events, then one token a minute), as an agent
// fleet's calls wait for tokens most of their lives. Once every client has
// its first event, two collections run (the runtime halves the stacks of
// goroutines that wait with little of them in use at a collection) and the
// gateway's own figures are read from /metrics: goroutine stacks, heap in
// use and goroutines per stream, and its resident memory per stream (over
// the process's at start). The streams start as a fleet's do, over time:
// at most streamsStarting calls at once are waiting for their first event.
// Two request sizes: a one-line question, and a coding agent's turn of
// 40 KB (its tools, instructions and history).
//
//	GROUNDHOG_BENCH_STREAMS=2000 go test ./e2e -run '^$' -bench DistinctStreamsHeld -benchtime 1x
func BenchmarkDistinctStreamsHeld(b *testing.B) {
	for _, size := range []struct {
		name string
		pad  int
	}{{"body=small", 0}, {"body=40KB", 40 << 10}} {
		b.Run(size.name, func(b *testing.B) { benchDistinctStreamsHeld(b, size.pad) })
	}
}

// streamsStarting is how many of BenchmarkDistinctStreamsHeld's calls may
// wait for their first event at once.
const streamsStarting = 64

func benchDistinctStreamsHeld(b *testing.B, pad int) {
	n := benchStreams(2_000)
	history := strings.Repeat("earlier turns of the task. ", pad/27)
	for i := 0; i < b.N; i++ {
		sim := start(b, nil, "sim", "--first-token", "100ms", "--per-output-token", "1m")
		pprof := freeAddr(b)
		gw := start(b, nil, "serve", "--db", b.TempDir()+"/g.db", "--upstream", sim.URL+"/v1", "--log-level", "warn", "--pprof", pprof)
		series := []string{"go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines"}
		read := func() map[string]float64 {
			m := map[string]float64{}
			for _, name := range series {
				m[name], _ = strconv.ParseFloat(metric(b, gw.URL, name), 64)
			}
			return m
		}
		base := read()
		rss0, _ := procMem(gw, "VmRSS")

		ctx, cancel := context.WithCancel(context.Background())
		tr := &http.Transport{MaxIdleConnsPerHost: -1, DialContext: (&net.Dialer{Timeout: time.Minute}).DialContext}
		client := &http.Client{Transport: tr}
		first := make(chan error, n)
		starting := make(chan struct{}, streamsStarting)
		var wg sync.WaitGroup
		for j := range n {
			starting <- struct{}{}
			wg.Add(2)
			began := make(chan error, 1)
			go func() {
				defer wg.Done()
				err := <-began
				<-starting
				first <- err
			}()
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"%squestion %d of run %d"}]}`, history, j, time.Now().UnixNano())
				holdStream(ctx, client, gw.URL+chatPath, body, nil, began) // until the benchmark lets go
			}()
		}
		awaitFirstEvents(b, first, n, 2*time.Minute)
		if calls := simCalls(b, sim.URL); calls != int64(n) {
			b.Fatalf("%d provider calls for %d different streams, want %d", calls, n, n)
		}
		for range 2 {
			res, err := http.Get("http://" + pprof + "/debug/pprof/heap?gc=1")
			if err != nil {
				b.Fatal(err)
			}
			res.Body.Close()
		}
		held := read()
		rss, _ := procMem(gw, "VmRSS")
		per := func(name string) float64 { return (held[name] - base[name]) / float64(n) }
		b.ReportMetric(per("go_memstats_stack_inuse_bytes"), "stack-B/stream")
		b.ReportMetric(per("go_memstats_heap_inuse_bytes"), "heap-B/stream")
		b.ReportMetric(per("go_goroutines"), "goroutines/stream")
		b.ReportMetric(float64(rss-rss0)/float64(n), "rss-B/stream")
		b.ReportMetric(float64(n), "streams")
		cancel()
		wg.Wait()
		tr.CloseIdleConnections()
	}
}
