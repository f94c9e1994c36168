package gateway_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
)

// BenchmarkCoalesceStreamsAtScale: N concurrent identical streaming calls
// (GROUNDHOG_BENCH_STREAMS, default 10,000) cost exactly one upstream call,
// and every client receives the complete stream. Reported: each follower's
// added latency (when it received the terminal event, after the first
// client did), p50 and p99, and what a waiting follower costs in memory.
//
// The clients run in the benchmark's process, so the heap measured while
// the followers wait holds the client side too. The same run therefore
// measures a floor first: the same N streams, same clients, same server
// settings, against a bare handler that reads the body and waits, as a
// follower does, then writes a stream. heap-B/follower is the gateway's
// run; floor-heap-B/stream the floor's; own-heap-B/follower their
// difference, what groundhog itself holds per waiting follower. Goroutine
// stacks are not heap: stack-B/follower and goroutines/follower (both
// runs have the same goroutines per stream but the flight's) are reported
// apart. GROUNDHOG_BENCH_HEAPPROFILE=FILE writes a heap profile of the
// gateway's run while the followers wait, and FILE.floor the floor's.
//
// The streams share a few HTTP/2 cleartext connections: 10,000 HTTP/1.1
// connections would need 20,000 descriptors in one process, over this
// machine's limit.
//
//	go test -run '^$' -bench CoalesceStreamsAtScale -benchtime 1x ./gateway/
func BenchmarkCoalesceStreamsAtScale(b *testing.B) {
	coalesceAtScale(b, scaleAPI{
		shape: groundhog.ShapeChat, path: "/v1/chat/completions",
		body:  `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"one answer for ten thousand"}]}`,
		floor: "data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\ndata: [DONE]\n\n",
	})
}

// BenchmarkCoalesceResponsesAtScale is BenchmarkCoalesceStreamsAtScale on
// the Responses API as a coding agent calls it: 24 KB of instructions and
// tools, and request fields the answer echoes (user, metadata), which each
// follower gets back as its own — so a follower keeps those values while
// it waits.
//
//	go test -run '^$' -bench CoalesceResponsesAtScale -benchtime 1x ./gateway/
func BenchmarkCoalesceResponsesAtScale(b *testing.B) {
	instructions := strings.Repeat("Follow the repository's conventions; run the tests before you answer. ", 24<<10/72)
	coalesceAtScale(b, scaleAPI{
		shape: groundhog.ShapeResponses, path: "/v1/responses",
		body: `{"model":"sim-small","stream":true,"user":"agent-7","metadata":{"task":"refactor"},"instructions":"` + instructions +
			`","input":"one answer for ten thousand"}`,
		floor: "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n",
	})
}

// scaleAPI is the call coalesceAtScale makes N times: its shape, route and
// body, and the stream the floor answers with.
type scaleAPI struct {
	shape      groundhog.Shape
	path, body string
	floor      string
}

func coalesceAtScale(b *testing.B, api scaleAPI) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("GROUNDHOG_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	if os.Getenv("GROUNDHOG_BENCH_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 512 // fine enough to attribute a few KB per follower
	}
	body := api.body
	for i := 0; i < b.N; i++ {
		// The floor: a handler that holds each request as a follower is
		// held, then answers a short stream.
		release := make(chan struct{})
		var held sync.WaitGroup
		held.Add(n)
		floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			held.Done()
			<-release
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, api.floor)
		})
		prof, floorProf := os.Getenv("GROUNDHOG_BENCH_HEAPPROFILE"), ""
		if prof != "" {
			floorProf = prof + ".floor"
		}
		fl := streamMany(b, n, floor, api, func() { held.Wait() }, func() { close(release) }, floorProf)

		g := newGate()
		h := newHarness(b, withGate(g))
		b.Cleanup(g.open) // a failed wait must not leave the held calls holding the harness's shutdown
		gw := streamMany(b, n, h.GW, api, func() {
			select {
			case <-g.arrived: // the leader is at the provider
			case <-time.After(60 * time.Second):
				b.Fatal("no call reached the provider in 60s")
			}
			waitForB(b, func() bool { return h.GW.Followers("local", hashOf(b, string(api.shape), body)) == n-1 })
		}, g.open, prof)
		if calls := h.bill().Calls; calls != 1 {
			b.Fatalf("%d upstream calls for %d identical streams, want 1", calls, n)
		}
		per := func(v int64) float64 { return float64(v) / float64(n-1) }
		b.ReportMetric(per(gw.heap), "heap-B/follower")
		b.ReportMetric(per(fl.heap), "floor-heap-B/stream")
		b.ReportMetric(per(gw.heap-fl.heap), "own-heap-B/follower")
		b.ReportMetric(per(gw.stack), "stack-B/follower")
		b.ReportMetric(per(fl.stack), "floor-stack-B/stream")
		b.ReportMetric(per(gw.goroutines), "goroutines/follower")
		b.ReportMetric(float64(gw.added[n/2].Microseconds()), "p50-added-µs")
		b.ReportMetric(float64(gw.added[n*99/100].Microseconds()), "p99-added-µs")
		b.ReportMetric(float64(n), "streams")
	}
}

// held is what N waiting streams cost a process, and when they ended.
type held struct {
	heap, stack, goroutines int64
	added                   []time.Duration // per stream, after the first one ended; sorted
}

// streamMany serves handler over HTTP/2 cleartext, starts n identical
// streaming calls of api, calls waiting once they are all held, measures the
// process, calls release and checks that every client received the same
// complete stream. profile, when set, names a heap profile written while
// the streams are held.
func streamMany(b *testing.B, n int, handler http.Handler, api scaleAPI, waiting, release func(), profile string) held {
	b.Helper()
	addr, stop := serveH2C(b, handler, n+10)
	defer stop()
	var clientProtos http.Protocols
	clientProtos.SetUnencryptedHTTP2(true)
	// At most a few connections: started all at once, the calls would
	// otherwise each dial one before the first connection is up, and
	// 10,000 of them run the process out of descriptors.
	tr := &http.Transport{Protocols: &clientProtos, MaxConnsPerHost: 4, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: n + 10}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := "http://" + addr + api.path

	runtime.GC() // two cycles: sync.Pool keeps what a previous run left for one
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	done := make([]time.Time, n)
	events := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for j := 0; j < n; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(api.body))
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
				if wire.IsTerminal(api.shape, ev) {
					done[j] = time.Now()
				}
			}
		}(j)
	}
	waiting()
	// Live bytes only: without a collection the figure would hold
	// whatever garbage the start of the streams left, more or less of it
	// by chance. Two cycles also let the runtime shrink stacks that grew
	// deep once and are now mostly unused, as a long wait would.
	runtime.GC()
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	out := held{
		heap:       int64(during.HeapAlloc) - int64(before.HeapAlloc),
		stack:      int64(during.StackInuse) - int64(before.StackInuse),
		goroutines: int64(runtime.NumGoroutine() - g0),
	}
	if profile != "" {
		if f, err := os.Create(profile); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	release()
	wg.Wait()
	for j := 0; j < n; j++ {
		if errs[j] != nil || done[j].IsZero() || events[j] != events[0] {
			b.Fatalf("client %d: err %v, %d events (client 0: %d), done %v", j, errs[j], events[j], events[0], !done[j].IsZero())
		}
	}
	first := done[0]
	for _, t := range done {
		if t.Before(first) {
			first = t
		}
	}
	out.added = make([]time.Duration, n)
	for j, t := range done {
		out.added[j] = t.Sub(first)
	}
	sort.Slice(out.added, func(a, c int) bool { return out.added[a] < out.added[c] })
	return out
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
