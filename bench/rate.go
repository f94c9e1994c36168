package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RateOptions configures an open-loop run (Rate).
type RateOptions struct {
	Exe      string        // the groundhog binary to start servers with (default: this executable)
	Rate     int           // requests per second, sent at fixed intervals
	Duration time.Duration // per scenario (default 3s)
	Dir      string        // scratch directory for databases (default: a temp dir)
	Log      io.Writer     // progress lines (default: discard)
	Body     string        // "small" (about 1 KB, the default), "large" or a file holding a request of API
	API      API           // the provider API of every request (default chat)
	Database string        // a postgres:// URL: the gateway runs there, in a schema of its own (Options.Database)
	Redis    string        // a redis:// URL: the gateway's cache tier, under a key prefix of its own (Options.Redis)
}

// schedule is an open-loop schedule: request i is due at start + i×interval,
// whether or not the earlier ones have been answered.
type schedule struct {
	start    time.Time
	interval time.Duration
}

func newSchedule(start time.Time, rate int) schedule {
	return schedule{start: start, interval: time.Second / time.Duration(max(rate, 1))}
}

// due is when request i is scheduled to start.
func (s schedule) due(i int) time.Time { return s.start.Add(time.Duration(i) * s.interval) }

// latency is request i's latency: from its scheduled start, not from when
// it was actually sent, to its end. A request sent late because the
// sender or the machine stalled is charged the stall, so a stall is not
// hidden by sending fewer requests during it (no coordinated omission).
func (s schedule) latency(i int, done time.Time) time.Duration { return done.Sub(s.due(i)) }

// Percentiles are a scenario's latency quantiles.
type Percentiles struct {
	P50, P99 time.Duration
	// Late50 and Late99 are how late the sender started the requests,
	// from their scheduled starts: the load generator's own part of
	// P50 and P99.
	Late50, Late99 time.Duration
	N              int // requests answered 200
	Errors         int
}

// quantiles returns p50 and p99 of ds (sorted in place), nearest rank.
func quantiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return rank(0.50), rank(0.99)
}

// RateResult is one scenario of an open-loop run, with the upstream-alone
// figures it is compared with.
type RateResult struct {
	Name     string
	Latency  Percentiles
	Baseline Percentiles // the simulated provider called directly, same rate and bodies
	// GC is the gateway's garbage collection during the scenario, from its
	// /metrics; zero when they could not be read.
	GC GCStats
}

// GCStats are a process's collections and allocation over an interval.
type GCStats struct {
	Cycles int     // collections (go_gc_duration_seconds_count)
	Bytes  float64 // bytes allocated (go_memstats_alloc_bytes_total)
}

// RateReport is the result of Rate.
type RateReport struct {
	Rate     int
	Duration time.Duration
	API      API
	Body     BodyInfo
	Results  []RateResult
	Stores   string // the gateway's stores
}

// openLoop sends req to url at o.Rate for d, each request on its own
// goroutine at its scheduled time, and returns the latencies measured from
// the scheduled starts.
func openLoop(ctx context.Context, client *http.Client, url string, req request, rate int, d time.Duration) Percentiles {
	n := int(d.Seconds() * float64(rate))
	sch := newSchedule(time.Now().Add(10*time.Millisecond), rate)
	lat := make([]time.Duration, n)
	late := make([]time.Duration, n)
	ok := make([]bool, n)
	var wg sync.WaitGroup
	var seq atomic.Int64
	pace := newPacer()
	defer pace.stop()
	for i := range n {
		pace.until(sch.due(i))
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			late[i] = sch.latency(i, time.Now())
			res, err := req.do(ctx, client, url, seq.Add(1))
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				ok[i] = res.StatusCode == 200
			}
			lat[i] = sch.latency(i, time.Now())
		}()
	}
	wg.Wait()
	var p Percentiles
	good, sent := lat[:0], late[:0]
	for i, l := range lat {
		if ok[i] {
			good, sent = append(good, l), append(sent, late[i])
		} else {
			p.Errors++
		}
	}
	p.N = len(good)
	p.P50, p.P99 = quantiles(good)
	p.Late50, p.Late99 = quantiles(sent)
	return p
}

// Rate measures the latency groundhog adds at a fixed request rate: for a
// miss, a hit, an idempotent miss and a miss with prompt-cache diagnosis
// and breakpoint injection, against the simulated provider called
// directly with the same bodies at the same rate; and, as the same run's
// baseline for the miss, what a bare httputil.ReverseProxy in front of the
// same provider adds (proxy-miss).
func Rate(ctx context.Context, o RateOptions) (*RateReport, error) {
	ro := Options{Exe: o.Exe, Dir: o.Dir, Log: o.Log}
	if ro.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		ro.Exe = exe
	}
	if ro.Log == nil {
		ro.Log = io.Discard
	}
	if ro.Dir == "" {
		dir, err := os.MkdirTemp("", "groundhog-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		ro.Dir = dir
	}
	if o.Rate <= 0 {
		return nil, fmt.Errorf("rate must be positive")
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.Body == "" {
		o.Body = "small"
	}
	if o.API == "" {
		o.API = APIChat
	}
	b, info, err := body(o.API, o.Body, false)
	if err != nil {
		return nil, err
	}
	simSrv, err := ro.start(ctx, "sim", "sim")
	if err != nil {
		return nil, err
	}
	defer simSrv.stop()
	proxy, err := ro.start(ctx, "proxy", "bench-proxy", "--target", simSrv.url)
	if err != nil {
		return nil, err
	}
	defer proxy.stop()
	ro.Database, ro.Redis = o.Database, o.Redis
	dbs, err := newStores(ctx, &ro)
	if err != nil {
		return nil, err
	}
	defer dbs.close()
	gw, err := ro.gateway(ctx, dbs, "gateway", simSrv.url)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	api := o.API
	run0 := time.Now().UnixNano()
	var keySeq atomic.Int64
	hit := request{api: api, body: b, header: func(int64) http.Header { return http.Header{"Groundhog-Cache": {"use"}} }}
	if _, err := capture(ctx, gw, hit); err != nil { // the entry the hits are answered from
		return nil, err
	}
	direct := request{api: api, body: b, unique: true}
	scenarios := []struct {
		name   string
		target *server
		req    request
	}{
		// What any Go proxy adds on this machine: the bare ReverseProxy
		// the throughput run compares the miss with, at the same rate.
		{"proxy-miss", proxy, request{api: api, body: b, unique: true}},
		{"miss", gw, request{api: api, body: b, unique: true}},
		{"hit", gw, hit},
		{"idempotent-miss", gw, request{api: api, body: b, unique: true, header: func(int64) http.Header {
			return http.Header{"Idempotency-Key": {fmt.Sprintf("rate-%d-%d", run0, keySeq.Add(1))}}
		}}},
		{"miss-prompt-cache", gw, request{api: api, body: b, unique: true, header: func(int64) http.Header {
			return http.Header{"Groundhog-Prompt-Cache-Diagnostics": {"provider"}, "Groundhog-Prompt-Cache-Breakpoints": {"auto"}}
		}}},
	}
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	// Warm up the servers' connections and code paths.
	openLoop(ctx, client, simSrv.url, direct, o.Rate, time.Second/2)
	openLoop(ctx, client, proxy.url, scenarios[0].req, o.Rate, time.Second/2)
	openLoop(ctx, client, gw.url, scenarios[1].req, o.Rate, time.Second/2)
	rep := &RateReport{Rate: o.Rate, Duration: o.Duration, API: o.API, Body: info, Stores: dbs.label()}
	for _, sc := range scenarios {
		// The baseline is measured right before each scenario, so both see
		// the same machine.
		fmt.Fprintf(ro.Log, "bench: upstream alone, then %s, %d/s for %s\n", sc.name, o.Rate, o.Duration)
		base := openLoop(ctx, client, simSrv.url, direct, o.Rate, o.Duration)
		if sc.target != gw { // the bare proxy has no /metrics of its own
			rep.Results = append(rep.Results, RateResult{Name: sc.name, Latency: openLoop(ctx, client, sc.target.url, sc.req, o.Rate, o.Duration), Baseline: base})
			continue
		}
		gc0, err0 := readGCStats(ctx, client, gw.url)
		got := openLoop(ctx, client, gw.url, sc.req, o.Rate, o.Duration)
		gc1, err1 := readGCStats(ctx, client, gw.url)
		r := RateResult{Name: sc.name, Latency: got, Baseline: base}
		if err0 == nil && err1 == nil {
			r.GC = GCStats{Cycles: gc1.Cycles - gc0.Cycles, Bytes: gc1.Bytes - gc0.Bytes}
		}
		rep.Results = append(rep.Results, r)
	}
	return rep, ctx.Err()
}

// readGCStats reads a Go process's collection count and bytes allocated
// from its Prometheus /metrics (the Go collector's series).
func readGCStats(ctx context.Context, client *http.Client, base string) (GCStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return GCStats{}, err
	}
	res, err := client.Do(req)
	if err != nil {
		return GCStats{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return GCStats{}, err
	}
	if res.StatusCode != http.StatusOK {
		return GCStats{}, fmt.Errorf("%s/metrics: status %d", base, res.StatusCode)
	}
	return parseGCStats(b)
}

// parseGCStats finds go_gc_duration_seconds_count and
// go_memstats_alloc_bytes_total in a Prometheus text exposition.
func parseGCStats(b []byte) (GCStats, error) {
	var g GCStats
	var found int
	for line := range strings.Lines(string(b)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_gc_duration_seconds_count":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return g, fmt.Errorf("%s: %w", name, err)
			}
			g.Cycles = int(f)
			found++
		case "go_memstats_alloc_bytes_total":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return g, fmt.Errorf("%s: %w", name, err)
			}
			g.Bytes = f
			found++
		}
	}
	if found != 2 {
		return g, errors.New("metrics: no go_gc_duration_seconds_count or go_memstats_alloc_bytes_total")
	}
	return g, nil
}

// WriteMarkdown prints the added latency of each scenario over the
// upstream alone, and the gateway's collections and allocation during it.
func (r *RateReport) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "Open loop: %d requests/s for %s per scenario, %s body of %s (%d bytes); latency from each request's scheduled start.\n\n", r.Rate, r.Duration, r.Body.Label, r.API.label(), r.Body.Bytes)
	if r.Stores != "" {
		fmt.Fprintf(w, "Gateway's stores: %s.\n\n", r.Stores)
	}
	fmt.Fprintf(w, "| scenario | p50 | p99 | upstream alone p50 | p99 | added p50 | added p99 | sent late p99 | errors | gateway GCs | KB allocated per request |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		gcs, kb := "–", "–"
		if n := x.Latency.N + x.Latency.Errors; x.GC.Bytes > 0 && n > 0 {
			gcs, kb = strconv.Itoa(x.GC.Cycles), fmt.Sprintf("%.1f", x.GC.Bytes/float64(n)/1024)
		}
		a50, a99 := x.added()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s |\n", x.Name, ms(x.Latency.P50), ms(x.Latency.P99), ms(x.Baseline.P50), ms(x.Baseline.P99),
			ms(a50), ms(a99), ms(x.Latency.Late99), x.Latency.Errors, gcs, kb)
	}
	px, mx := r.result("proxy-miss"), r.result("miss")
	if px != nil && mx != nil {
		m50, m99 := mx.added()
		p50, p99 := px.added()
		fmt.Fprintf(w, "\nproxy-miss is a bare httputil.ReverseProxy in front of the same simulated provider: what any Go proxy adds on this machine. "+
			"A miss through groundhog adds %s at p50 and %s at p99 over the upstream alone; the bare proxy adds %s and %s.\n",
			ms(m50), ms(m99), ms(p50), ms(p99))
	}
	if l50, l99, ok := r.lateness(); ok {
		fmt.Fprintf(w, "\nThe load generator started its requests %s (p50) and %s (p99) after their scheduled starts, at worst over the scenarios and their upstream-alone runs: "+
			"that much of every latency above is its own.\n", ms(l50), ms(l99))
	}
}

// lateness returns the highest p50 and p99 of the sender's lateness over
// every run of the report; ok is false when it has none.
func (r *RateReport) lateness() (p50, p99 time.Duration, ok bool) {
	for _, x := range r.Results {
		for _, p := range []Percentiles{x.Latency, x.Baseline} {
			if p.N > 0 {
				p50, p99, ok = max(p50, p.Late50), max(p99, p.Late99), true
			}
		}
	}
	return p50, p99, ok
}

// result returns the scenario named name, nil when the run has none.
func (r *RateReport) result(name string) *RateResult {
	for i := range r.Results {
		if r.Results[i].Name == name {
			return &r.Results[i]
		}
	}
	return nil
}

// added returns what the scenario adds over the upstream alone, at p50
// and p99.
func (x *RateResult) added() (p50, p99 time.Duration) {
	return x.Latency.P50 - x.Baseline.P50, x.Latency.P99 - x.Baseline.P99
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }
