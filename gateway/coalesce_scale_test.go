package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/wire"
)

// BenchmarkCoalesceStreamsAtScale: N concurrent identical streaming calls
// (GROUNDHOG_BENCH_STREAMS, default 10,000) cost exactly one upstream call,
// and every client receives the complete stream. Reported: the gateway's
// heap per waiting follower, and each follower's added latency (when it
// received the terminal event, after the first client did), p50 and p99.
// The streams share a few HTTP/2 cleartext connections: 10,000 HTTP/1.1
// connections would need 20,000 descriptors in one process, over this
// machine's limit.
//
//	go test -run '^$' -bench CoalesceStreamsAtScale -benchtime 1x ./gateway/
func BenchmarkCoalesceStreamsAtScale(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("GROUNDHOG_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		g := newGate()
		h := newHarness(b, withGate(g))
		var protos http.Protocols
		protos.SetHTTP1(true)
		protos.SetUnencryptedHTTP2(true)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: h.GW, Protocols: &protos, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: n + 10}}
		go srv.Serve(ln)
		var clientProtos http.Protocols
		clientProtos.SetUnencryptedHTTP2(true)
		client := &http.Client{Transport: &http.Transport{Protocols: &clientProtos, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: n + 10}}}
		url := "http://" + ln.Addr().String() + "/v1/chat/completions"
		body := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"one answer for ten thousand"}]}`

		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make([]time.Time, n)
		events := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for j := 0; j < n; j++ {
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Groundhog-Cache", "use")
				res, err := client.Do(req)
				if err != nil {
					errs[j] = err
					return
				}
				defer res.Body.Close()
				rd := wire.NewSSEReader(res.Body)
				for {
					ev, err := rd.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						errs[j] = err
						return
					}
					events[j]++
					if string(ev.Data) == "[DONE]" {
						done[j] = time.Now()
					}
				}
			}(j)
		}
		<-g.arrived // the leader is at the provider
		waitForB(b, func() bool { return h.GW.Followers("local", hashOf(b, "chat", body)) == n-1 })
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		g.open()
		wg.Wait()
		_ = srv.Close()
		for j := 0; j < n; j++ {
			if errs[j] != nil || done[j].IsZero() || events[j] != events[0] {
				b.Fatalf("client %d: err %v, %d events (client 0: %d), done %v", j, errs[j], events[j], events[0], !done[j].IsZero())
			}
		}
		if calls := h.bill().Calls; calls != 1 {
			b.Fatalf("%d upstream calls for %d identical streams, want 1", calls, n)
		}
		first := done[0]
		for _, t := range done {
			if t.Before(first) {
				first = t
			}
		}
		added := make([]time.Duration, n)
		for j, t := range done {
			added[j] = t.Sub(first)
		}
		sort.Slice(added, func(a, c int) bool { return added[a] < added[c] })
		b.ReportMetric(float64(int64(during.HeapInuse)-int64(before.HeapInuse))/float64(n-1), "heap-B/follower")
		b.ReportMetric(float64(added[n/2].Microseconds()), "p50-added-µs")
		b.ReportMetric(float64(added[n*99/100].Microseconds()), "p99-added-µs")
		b.ReportMetric(float64(n), "streams")
	}
}

// waitForB polls cond for up to 60 s (a counter, not a result).
func waitForB(b *testing.B, cond func() bool) {
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("condition not reached in 60s")
		}
		time.Sleep(time.Millisecond)
	}
}
