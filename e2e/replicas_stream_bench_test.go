package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkReplicasCoalesceStreams: N identical streaming calls
// (GROUNDHOG_BENCH_STREAMS; 10,000 is the target and the default) sent at
// once, round-robin over three replicas on one PostgreSQL and one Redis,
// cost one upstream call, and every client receives the complete stream —
// the same bytes as every other client. Calls that arrive while the flight
// runs follow it (Groundhog-Cache: coalesced, on the leader's replica or
// across replicas); any that arrive after it ended are cache hits. Reported:
// the wall time from the first call sent to the last stream complete, the
// split of the answers, and each replica's resident memory (VmRSS) before
// the calls and at its peak (VmHWM). Skipped without GROUNDHOG_TEST_POSTGRES
// and GROUNDHOG_TEST_REDIS.
//
// Every call is its own HTTP/1.1 connection (as separate clients are): the
// benchmark's process holds N sockets, so N needs a descriptor limit above
// it (ulimit -n).
//
//	GROUNDHOG_BENCH_STREAMS=2000 go test ./e2e -run '^$' -bench ReplicasCoalesceStreams -benchtime 1x
func BenchmarkReplicasCoalesceStreams(b *testing.B) {
	n := benchStreams(10_000)
	for i := 0; i < b.N; i++ {
		// 3 s to the first token, then 5 ms per output token: a flight long
		// enough for many calls to join it while the others are still
		// connecting on a loaded machine.
		cl := startClusterWith(b, 3, []string{"--first-token", "3s", "--per-output-token", "5ms"}, nil)
		rss0 := make([]int64, 3)
		for r, p := range cl.replicas {
			rss0[r], _ = procMem(p, "VmRSS")
		}
		body := fmt.Sprintf(`{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"one answer for %d clients across replicas, run %d"}]}`, n, time.Now().UnixNano())
		tr := &http.Transport{MaxIdleConnsPerHost: -1, DialContext: (&net.Dialer{Timeout: time.Minute}).DialContext}
		client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
		out := make([]timedStream, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		for j := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[j] = postStreamWith(context.Background(), client, j%3, cl.replicas[j%3].URL, body)
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		tr.CloseIdleConnections()
		states := map[string]int{}
		for j, ts := range out {
			if ts.err != nil {
				b.Fatalf("client %d (replica %d): %v", j, ts.replica, ts.err)
			}
			if !bytes.Equal(ts.body, out[0].body) || !bytes.Contains(ts.body, []byte("data: [DONE]")) {
				b.Fatalf("client %d (replica %d, %s) received %d bytes, client 0 %d: not the same complete stream", j, ts.replica, ts.state, len(ts.body), len(out[0].body))
			}
			states[ts.state]++
		}
		if calls := simCalls(b, cl.sim.URL); calls != 1 {
			b.Fatalf("%d upstream calls for %d identical streams over 3 replicas, want 1 (answers: %v)", calls, n, states)
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(n), "streams")
		b.ReportMetric(float64(states["coalesced"]), "coalesced")
		b.ReportMetric(float64(states["hit"]), "hits")
		for r, p := range cl.replicas {
			hwm, _ := procMem(p, "VmHWM")
			b.ReportMetric(float64(rss0[r])/(1<<20), fmt.Sprintf("replica%d-start-MB", r+1))
			b.ReportMetric(float64(hwm)/(1<<20), fmt.Sprintf("replica%d-peak-MB", r+1))
		}
	}
}

// postStreamWith is postStream with its own client.
func postStreamWith(ctx context.Context, client *http.Client, replica int, url, body string) timedStream {
	ts := timedStream{replica: replica, sent: time.Now()}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Groundhog-Cache", "use")
	res, err := client.Do(req)
	if err != nil {
		ts.err = err
		return ts
	}
	defer res.Body.Close()
	ts.state = res.Header.Get("Groundhog-Cache")
	var all bytes.Buffer
	_, ts.err = all.ReadFrom(res.Body)
	ts.last = time.Now()
	ts.body = all.Bytes()
	if res.StatusCode != 200 && ts.err == nil {
		ts.err = fmt.Errorf("status %d: %s", res.StatusCode, ts.body)
	}
	return ts
}

// procMem returns a field of /proc/<pid>/status in bytes (VmRSS: resident
// now; VmHWM: the resident peak).
func procMem(p *proc, field string) (int64, error) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
}
